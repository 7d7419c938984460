"""Step 4 of a decode run, on the driver: the run's folders, then either its parts made
partition D of each table and the manifest written, or its parts deleted.

When the run starts, the day's validation results and validate metrics are removed
(nothing vouches for a day being replaced). A run that passed its checks replaces
partition D of the Delta tables <warehouse>/<source>, its companion tables and
<warehouse>/_quarantine/<source>, one commit each that copies nothing (`jobs.lake`; other
days are never touched), then writes its metrics row and the run manifest
<warehouse>/_manifests/<source>/dt=D/manifest.json, last. A failed run deletes its parts
and leaves the previous day as it was (its reason goes to the metrics table); `vacuum`
then deletes the files of runs replaced more than `--retention-hours` ago, and of runs
that never committed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
import uuid
from collections.abc import Iterable, Mapping

from jobs import lake, layout, metrics, storage
from jobs.cli import JobFailed
from jobs.decode_args import DecodeRun
from jobs.execute import UnitFigures
from jobs.parts import QUARANTINE, output_tables
from jobs.plan import Listing
from jobs.units import FileReport, Totals
from wirecodecs.options import to_json

log = logging.getLogger("wirelake.decode")


@dataclasses.dataclass(frozen=True)
class RunFolders:
    """Where a run writes: table key -> the table (`jobs.parts.output_tables`), and -> the
    run's folder in its partition D (no quarantine folder under the error policy `skip`)."""

    tables: Mapping[str | None, str]
    run_dirs: Mapping[str | None, str]


def open_run(job: DecodeRun) -> RunFolders:
    """The day withdrawn from validation (results and metrics) and the run's folders named."""
    tables = job.fmt.tables
    withdraw_validation(job.reports, job.source, tables, job.date)
    checked = [layout.table_name(job.source, table) for table in [None, *tables]]
    metrics.withdraw(job.warehouse, "validate", checked, job.date)
    outputs = output_tables(job.warehouse, job.source, tables)
    run_id = uuid.uuid4().hex[:12]
    run_dirs = {
        key: layout.run_dir(table, job.date, run_id)
        for key, table in outputs.items()
        if key != QUARANTINE or job.error_policy != "skip"
    }
    return RunFolders(outputs, run_dirs)


def abandon(job: DecodeRun, folders: RunFolders, failure: BaseException) -> None:
    """A run that failed before it committed: its parts deleted and, for a failed check,
    the reason recorded (the daily report shows the day as failed, and why)."""
    remove_run(folders.run_dirs.values())
    if isinstance(failure, JobFailed):
        metrics.record_decode_failure(job.warehouse, job.source, job.date, str(failure))


def save(
    job: DecodeRun,
    folders: RunFolders,
    listing: Listing,
    reports: list[FileReport],
    totals: Totals,
    figures: UnitFigures,
    started: tuple[dt.datetime, float],
    application_id: str,
) -> DecodeReport:
    """The run committed, then its metrics row and manifest written (`started`: when the
    run started, as a time and by `time.monotonic`)."""
    # The manifest is written last and names the table versions it vouches for: until it is
    # replaced, the previous one still describes the previous run, whose versions stay
    # readable, whichever commits below succeed.
    committing = time.monotonic()
    versions = commit(folders.tables, folders.run_dirs, job.date)
    run_figures = RunFigures(
        **dataclasses.asdict(figures),
        started_at=started[0].isoformat(),
        elapsed_seconds=round(time.monotonic() - started[1], 3),
        commit_seconds=round(time.monotonic() - committing, 3),
        spark_application_id=application_id,
    )
    report = DecodeReport(job, reports, totals, listing.ignored, run_figures, versions)
    manifest = report.manifest()
    manifest_path = layout.manifest_path(job.warehouse, job.source, job.date)
    day_figures = metrics.merge(file.figures for file in reports)
    metrics.record_decode(job.warehouse, manifest, day_figures, manifest_path)
    storage.write_json(manifest_path, manifest)
    vacuum(folders.tables.values(), job.retention_hours)
    return report


def withdraw_validation(reports: str, source: str, tables: Iterable[str], date: dt.date) -> None:
    """Remove the day's validation results of every table the run writes: while a day is
    being replaced, and after a run that failed, nothing may vouch for it."""
    for table in [None, *tables]:
        storage.remove_dir(layout.report_dir(reports, layout.table_name(source, table), date))


def remove_run(folders: Iterable[str]) -> None:
    """Delete the parts of a run that failed before it committed; where the store cannot be
    reached, `vacuum` deletes them later (no reader of the tables sees them meanwhile)."""
    for folder in folders:
        try:
            storage.remove_dir(folder)
        except OSError as exc:
            log.warning("could not remove %s (vacuum will): %s", folder, exc)


def commit(
    tables: Mapping[str | None, str], run_dirs: Mapping[str | None, str], date: dt.date
) -> dict[str, int | None]:
    """Each table's run folder made its partition D (`lake.replace_days`); the manifest,
    written after the last commit, is what says the day is complete."""
    try:
        versions = lake.replace_days(tables, run_dirs, date)
    except lake.SchemaChanged as exc:
        raise JobFailed(str(exc)) from exc
    for table, version in versions.items():
        log.info("committed %s dt=%s: version %s", table, date, version)
    return versions


def vacuum(tables: Iterable[str], retention_hours: float) -> None:
    """Delete what no version of the last `retention_hours` reads (`lake.vacuum`)."""
    for table in tables:
        deleted = lake.vacuum(table, retention_hours)
        if deleted:
            log.info("vacuum %s: deleted %d file(s) of replaced runs", table, len(deleted))


@dataclasses.dataclass(frozen=True)
class RunFigures(UnitFigures):
    """When and how long the run ran, in which Spark application, and its units."""

    started_at: str
    elapsed_seconds: float
    commit_seconds: float
    spark_application_id: str


@dataclasses.dataclass(frozen=True)
class DecodeReport:
    """A run that committed: what `run` returns, written as the run manifest
    (`manifest()`, the JSON document the validate job, the report and readers read)."""

    job: DecodeRun
    files: list[FileReport]
    totals: Totals
    ignored: list[dict]  # Listing.ignored
    run: RunFigures
    versions: Mapping[str, int | None]  # table -> the version its commit made

    def manifest(self) -> dict:
        job = self.job
        return {
            "source": job.source,
            "format": job.fmt.name,
            "envelope": job.envelope,
            "payload": job.payload,
            "dt": job.date.isoformat(),
            "landing": job.landing,
            "error_policy": job.error_policy,
            "max_error_rate": job.max_error_rate,
            "max_bad_byte_rate": job.max_bad_byte_rate,
            "split_bytes": job.split_bytes,
            "options": to_json(job.options),
            "outputs": {
                "rows": layout.table_dir(job.warehouse, job.source),
                "quarantine": None
                if job.error_policy == "skip"
                else layout.quarantine_table_dir(job.warehouse, job.source),
                "tables": {
                    table: layout.table_dir(job.warehouse, layout.table_name(job.source, table))
                    for table in job.fmt.tables
                },
                "versions": dict(self.versions),
            },
            "run": dataclasses.asdict(self.run),
            "totals": self.totals.to_dict(),
            "files": [report.to_dict() for report in self.files],
            "ignored_files": self.ignored,
        }

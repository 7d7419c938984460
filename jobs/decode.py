"""Decode one source's landed files for one day into the lake (spark-submit entry point).

    spark-submit jobs/decode.py --source kafka --envelope kafka --payload raw \\
        --date 2024-03-01 --landing data/landing/kafka/dt=2024-03-01 --warehouse data/warehouse \\
        --reports data/reports [--error-policy fail|quarantine|skip] [--max-error-rate 0.01] \\
        [--max-bad-byte-rate 0.01] [--split-bytes 134217728] [--options JSON]

Extract: the driver lists the landing folder with pyarrow.fs and plans work units: whole
files, or, for a file above `--split-bytes` whose format can find a frame from any offset
(`WireFormat.split`, run by executors, which also check companion files such as Kafka's
offset indexes), byte ranges of about that size that start at frames. Units are grouped
into partitions balanced by size. Executors stream every unit once through its wirecodecs
decoder and write the rows, companion tables and quarantined frames straight to Parquet in
a folder of the run inside partition D of each table (`jobs.parts`); only each unit's
accounting comes back. A split file whose ranges do not fit together (a range before the
last that does not end cleanly: a split point that was not really a frame start) has its
range parts deleted and is decoded again whole, so correctness never rests on the split
points; a file's ranges then add up to its accounting. Transform: the driver checks that
every file was decoded once and that its accounting balances, and applies the gates. Save: the run's
parts replace partition D of the Delta tables <warehouse>/<source>, its companion tables
and <warehouse>/_quarantine/<source>, one commit each that copies nothing (`jobs.lake`;
other days are never touched), then the run manifest
<warehouse>/_manifests/<source>/dt=D/manifest.json is written, last. A failed run deletes
its parts and leaves the previous day as it was; `vacuum` then deletes the files of runs
replaced more than `--retention-hours` ago, and of runs that never committed.

Two gates decide whether a day is good enough to replace the previous one: bad frames /
all frames (`--max-error-rate`) and bytes not decoded / all bytes (`--max-bad-byte-rate`:
quarantined, skipped and truncated tails), so one corrupt length that hides half a file
fails the run however few frames it spans. When the run starts, the day's validation
results are removed (nothing vouches for a day being replaced).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime as dt
import heapq
import io
import json
import logging
import re
import sys
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import TypeVar

import pyarrow as pa
from pyarrow import fs as pafs
from pyspark.sql import SparkSession

import wirecodecs
from jobs import lake, layout, metrics, storage
from jobs.cli import EXIT_FAILED, EXIT_OK, JobFailed, iso_date, run_job, setup_logging
from jobs.decode_settings import (
    DEFAULT_ERROR_POLICY,
    DEFAULT_RETENTION_HOURS,
    DEFAULT_SPLIT_BYTES,
    ERROR_POLICIES,
    GATES,
)
from jobs.parts import QUARANTINE, SHOWN_BAD_FRAMES, decode_units, find_splits, output_tables
from jobs.units import (
    ACCOUNTING_COUNTS,
    COUNTS,
    DataFile,
    FileReport,
    FileSplits,
    Totals,
    Unit,
    UnitReport,
    Work,
    part_name,
)
from wirecodecs import FileAccounting, WireFormat
from wirecodecs.options import Resolved, from_json, resolve, to_json

log = logging.getLogger("wirelake.decode")

SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # a path segment; "_" is reserved
TARGET_PARTITION_BYTES = 128 << 20
SPLIT_BYTES = DEFAULT_SPLIT_BYTES  # files above this are cut into ranges of about this size


@dataclasses.dataclass(frozen=True)
class Listing:
    filesystem: pafs.FileSystem
    files: list[DataFile]
    ignored: list[dict]  # {"uri", "size", "reason"} for files that hold no frames


# --- arguments ----------------------------------------------------------------------


def fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


@dataclasses.dataclass(frozen=True)
class DecodeRun:
    """One run, as the driver resolved it from the arguments, once: the format, its
    checked options and row schema, the policy and gates, and where everything is."""

    source: str
    envelope: str
    payload: str
    fmt: WireFormat
    options: Resolved
    row_schema: pa.Schema
    date: dt.date
    landing: str
    warehouse: str
    reports: str
    error_policy: str
    max_error_rate: float
    max_bad_byte_rate: float
    split_bytes: int
    partitions: int | None
    retention_hours: float


def parse_args(argv: list[str] | None) -> DecodeRun:
    parser = argparse.ArgumentParser(
        prog="jobs/decode.py", description="Decode one day of landed files into the lake."
    )
    parser.add_argument("--source", required=True, help="table name, e.g. kafka")
    parser.add_argument("--envelope", required=True, help="wire format that cuts frames")
    parser.add_argument("--payload", default="raw", help="codec of frame contents")
    parser.add_argument("--date", required=True, type=iso_date, help="logical date D")
    parser.add_argument("--landing", required=True, help="the day's landing folder (path/URI)")
    parser.add_argument("--warehouse", required=True, help="lake root (path/URI)")
    parser.add_argument(
        "--reports", required=True, help="reports root: the day's validation results are removed"
    )
    parser.add_argument("--error-policy", choices=ERROR_POLICIES, default=DEFAULT_ERROR_POLICY)
    parser.add_argument(
        "--max-error-rate",
        type=fraction,
        default=GATES["max_error_rate"],
        help="bad frames / all frames allowed",
    )
    parser.add_argument(
        "--max-bad-byte-rate",
        type=fraction,
        default=GATES["max_bad_byte_rate"],
        help="bytes not decoded (quarantined, skipped, truncated tails) / all bytes allowed",
    )
    parser.add_argument(
        "--options",
        default="{}",
        metavar="JSON",
        help="decoder options as one JSON object (a carried format's under each part's "
        'format name, e.g. {"hercules": {"max_event_bytes": 65536}})',
    )
    parser.add_argument(
        "--partitions", type=positive_int, help="Spark partitions (default: from cores and bytes)"
    )
    parser.add_argument(
        "--split-bytes",
        type=positive_int,
        default=SPLIT_BYTES,
        help="files above this size are decoded as ranges of about this size where the "
        "format can find frames from any offset (kafka by its index, heka, cernan)",
    )
    parser.add_argument(
        "--retention-hours",
        type=float,
        default=DEFAULT_RETENTION_HOURS,
        help="replaced runs stay readable by time travel this long, then vacuum deletes them",
    )
    args = parser.parse_args(argv)
    if args.retention_hours < 0:
        parser.error(f"--retention-hours must not be negative, got {args.retention_hours}")
    if not SOURCE_NAME.fullmatch(args.source):
        parser.error(f"--source must be a plain name ({SOURCE_NAME.pattern}): {args.source!r}")
    try:
        fmt = wirecodecs.source_format(args.envelope, args.payload)
    except ValueError as exc:  # UnknownFormatError is a ValueError
        parser.error(str(exc))
    try:  # caught here, not in an executor's traceback
        options = resolve(fmt, from_json(args.options))
        row_schema = fmt.row_schema(options)
        # the decoder opens the files its options name (key tables, schemas) as executors will
        list(fmt.decode(io.BytesIO(b""), "<options>", FileAccounting("<options>", fmt.name),
                        options))  # fmt: skip
    except (ValueError, OSError) as exc:  # OptionError is a ValueError
        parser.error(f"{fmt.name} decoder options: {exc}")
    landing, warehouse, reports = map(
        storage.absolute, (args.landing, args.warehouse, args.reports)
    )
    for location in (landing, warehouse, reports):
        try:  # before any message could name a location with the credentials it carries
            storage.check_location(location)
        except ValueError as exc:
            parser.error(str(exc))
    try:
        landing_found = storage.is_dir(landing)
    except (OSError, ValueError) as exc:  # unknown scheme, unreachable store
        parser.error(f"cannot open --landing {landing}: {exc}")
    if not landing_found:
        parser.error(f"landing folder not found: {landing}")
    return DecodeRun(
        source=args.source,
        envelope=args.envelope,
        payload=args.payload,
        fmt=fmt,
        options=options,
        row_schema=row_schema,
        date=args.date,
        landing=landing,
        warehouse=warehouse,
        reports=reports,
        error_policy=args.error_policy,
        max_error_rate=args.max_error_rate,
        max_bad_byte_rate=args.max_bad_byte_rate,
        split_bytes=args.split_bytes,
        partitions=args.partitions,
        retention_hours=args.retention_hours,
    )


# --- extract ------------------------------------------------------------------------


def list_landing(landing: str, fmt: WireFormat) -> Listing:
    """Every file under `landing` with its size; markers and companion files set aside."""
    filesystem, root = storage.resolve(landing)
    infos = filesystem.get_file_info(pafs.FileSelector(root, recursive=True))
    files, ignored = [], []
    for info in sorted(infos, key=lambda info: info.path):
        if info.type != pafs.FileType.File:
            continue
        relative = info.path[len(root) :].lstrip("/")
        uri = layout.join(landing, relative)
        if any(part.startswith((".", "_")) for part in PurePosixPath(relative).parts):
            ignored.append({"uri": uri, "size": info.size, "reason": "hidden or marker"})
        elif not fmt.data_file(relative):
            ignored.append({"uri": uri, "size": info.size, "reason": f"not {fmt.name} data"})
        else:
            files.append(DataFile(uri, info.path, info.size))
    return Listing(filesystem, files, ignored)


Sized = TypeVar("Sized", DataFile, Unit)


def group_by_size(items: list[Sized], groups: int) -> list[list[Sized]]:
    """Files or units in at most `groups` groups of similar total size, largest first into
    the lightest group (python_moztelemetry's `_group_by_size_greedy`)."""
    count = min(groups, len(items))
    heap = [(0, index) for index in range(count)]
    grouped: list[list[Sized]] = [[] for _ in range(count)]
    for item in sorted(items, key=lambda item: (-item.size, item.uri)):
        total, index = heapq.heappop(heap)
        grouped[index].append(item)
        heapq.heappush(heap, (total + item.size, index))
    return [sorted(group, key=lambda item: item.uri) for group in grouped]


def default_partitions(spark: SparkSession, items: list[DataFile] | list[Unit]) -> int:
    """Enough partitions to keep every core busy and each one near TARGET_PARTITION_BYTES."""
    total = sum(item.size for item in items)
    return max(2 * spark.sparkContext.defaultParallelism, -(-total // TARGET_PARTITION_BYTES))


def find_split_points(
    spark: SparkSession,
    files: list[DataFile],
    fmt: WireFormat,
    work: Work,
    split_bytes: int,
    partitions: int,
) -> dict[str, FileSplits]:
    """uri -> where the file may be cut and what the format checked, found by executors
    (they read the files) for each file as a whole-file unit; {} for a format that decodes
    files whole."""
    if fmt.split is None or not files:
        return {}
    units = [Unit.whole(index, file) for index, file in enumerate(files)]
    groups = group_by_size(units, partitions)
    found = (
        spark.sparkContext.parallelize(groups, len(groups))
        .mapPartitions(lambda parts: find_splits((u for g in parts for u in g), work, split_bytes))
        .collect()
    )
    return {splits.uri: splits for splits in found}


def plan_units(files: list[DataFile], splits: Mapping[str, FileSplits]) -> list[Unit]:
    """Every file as work units: whole, or one per range between its split points; numbered
    in file order (the numbers name the part files, so a rerun writes the same names)."""
    units: list[Unit] = []
    for file in sorted(files, key=lambda file: file.uri):
        found = splits.get(file.uri)
        units += Unit.whole(0, file).ranges(found.points if found else [], len(units))
    return units


def decode_units_on_executors(
    spark: SparkSession, units: list[list[Unit]], work: Work
) -> list[UnitReport]:
    """Every unit decoded once and written to its run folders by an executor, one Spark partition
    per group; the units' reports (accounting, first bad frames), in unit order."""
    if not units:
        return []
    reports = (
        spark.sparkContext.parallelize(units, len(units))
        .mapPartitions(lambda groups: decode_units((u for g in groups for u in g), work))
        .collect()
    )
    return sorted(reports, key=lambda report: report.unit)


def split_failure(ranges: list[Unit], reports: list[UnitReport]) -> str | None:
    """Why a file's ranges, decoded apart, may not read as its whole decode (None: they
    do). Every range but the last must end with `eof`: one that ends with a truncated
    tail or a quarantined rest was cut inside a frame, at a split point that was no frame
    start of the whole file's walk. The last range may end otherwise, like the file, but
    only after a good frame: a decoder may tell a cut tail from garbage by the last good
    frame before it (Kafka's offsets), which a range without one does not have."""
    accounts = [report.accounting for report in reports]
    for number, (unit, account) in enumerate(zip(ranges[:-1], accounts, strict=False), 1):
        if account.stop_reason != "eof":
            return (
                f"range {number} of {len(ranges)} (bytes {unit.start}-{unit.start + unit.size}) "
                f"ended with {account.stop_reason}"
            )
    last = accounts[-1]
    if last.stop_reason != "eof" and not last.frames_good:
        return (
            f"the last range (from byte {ranges[-1].start}) ended with {last.stop_reason} "
            "without a good frame"
        )
    return None


def combined(reports: list[UnitReport]) -> FileReport:
    """A file's units' reports (its ranges, in file order) as the report of the file."""
    first = reports[0]
    accounting = dataclasses.replace(first.accounting)
    for report in reports[1:]:
        for key in ACCOUNTING_COUNTS:
            setattr(accounting, key, getattr(accounting, key) + getattr(report.accounting, key))
    accounting.stop_reason = reports[-1].accounting.stop_reason
    return FileReport(
        accounting,
        rows=sum(report.rows for report in reports),
        quarantine_items=sum(report.quarantine_items for report in reports),
        table_rows={
            table: sum(report.table_rows[table] for report in reports) for table in first.table_rows
        },
        first_bad=[bad for report in reports for bad in report.first_bad][:SHOWN_BAD_FRAMES],
        figures=metrics.merge(report.figures for report in reports),
        ranges=len(reports),
    )


def remove_parts(run_dirs: Mapping[str | None, str], units: Iterable[Unit]) -> None:
    """The parts of `units` already written, from every table's run folder."""
    for folder in run_dirs.values():
        for unit in units:
            storage.remove_file(layout.join(folder, part_name(unit.index)))


def decode_files(
    spark: SparkSession,
    files: list[DataFile],
    splits: Mapping[str, dict],
    work: Work,
    partitions: int,
) -> tuple[list[FileReport], UnitFigures]:
    """Every file decoded once into the run's folders, whole or in ranges (a file whose
    ranges do not fit together decoded again whole, see `split_failure`): one report per
    file, in file order, its accounting with the `ranges` it was decoded in and why it was
    decoded whole again (`split_fallback`), and the figures of the run (units, partitions)."""
    units = plan_units(files, splits)
    groups = group_by_size(units, partitions)
    log.info("decoding %d unit(s) in %d partition(s)", len(units), len(groups))
    reports = {report.unit: report for report in decode_units_on_executors(spark, groups, work)}
    by_file: dict[str, list[Unit]] = collections.defaultdict(list)
    for unit in units:
        by_file[unit.uri].append(unit)
    failures = {}
    for uri, ranges in by_file.items():
        unit_reports = [reports[unit.index] for unit in ranges]
        if len(ranges) > 1 and (reason := split_failure(ranges, unit_reports)) is not None:
            failures[uri] = reason
    again = []
    for uri, reason in failures.items():
        log.warning("%s: decoded whole again: %s", uri, reason)
        ranges = by_file[uri]
        remove_parts(work.run_dirs, ranges)
        again.append(Unit(ranges[0].index, uri, ranges[0].path, sum(u.size for u in ranges)))
    redone = {
        report.accounting.source: report
        for report in decode_units_on_executors(spark, group_by_size(again, len(groups)), work)
    }
    files_reports = []
    for uri, ranges in sorted(by_file.items()):
        report = combined([redone[uri]] if uri in redone else [reports[u.index] for u in ranges])
        report.split_fallback = failures.get(uri)
        found = splits.get(uri)
        report.checks = dict(found.checks) if found else {}
        files_reports.append(report)
    figures = UnitFigures(
        units=len(units) + len(again),
        partitions=len(groups),
        split_files=sum(len(ranges) > 1 for ranges in by_file.values()),
        split_fallback_files=len(again),
    )
    return files_reports, figures


# --- transform ----------------------------------------------------------------------


def check_accounting(reports: list[FileReport], files: list[DataFile]) -> None:
    """Every planned file was decoded once, and every byte of it is accounted for."""
    sizes = {file.uri: file.size for file in files}
    decoded = collections.Counter(report.accounting.source for report in reports)
    problems = [f"{uri}: not decoded" for uri in sorted(set(sizes) - set(decoded))]
    problems += [f"{uri}: decoded {n} times" for uri, n in sorted(decoded.items()) if n > 1]
    for report in reports:
        accounting = report.accounting
        if not accounting.balanced or accounting.bytes_total != sizes.get(accounting.source):
            counts = {key: report.count(key) for key in COUNTS if "bytes" in key}
            problems.append(
                f"{accounting.source}: listed {sizes.get(accounting.source)} bytes, "
                f"accounting {json.dumps(counts)}"
            )
    if problems:
        raise JobFailed("byte accounting does not balance:\n  " + "\n  ".join(problems))


def summarise(reports: list[FileReport], tables: Iterable[str] = ()) -> Totals:
    """Run totals over the files' reports (`tables`: the format's companion tables)."""
    accounting = FileAccounting(source="", format="")
    for key in ACCOUNTING_COUNTS:
        setattr(accounting, key, sum(getattr(report.accounting, key) for report in reports))
    bad_bytes = accounting.bytes_total - accounting.bytes_decoded
    return Totals(
        accounting,
        rows=sum(report.rows for report in reports),
        quarantine_items=sum(report.quarantine_items for report in reports),
        table_rows={table: sum(report.table_rows[table] for report in reports) for table in tables},
        files=len(reports),
        truncated_tail_files=sum(1 for report in reports if report.accounting.bytes_truncated_tail),
        error_rate=max(
            _rate(accounting.frames_bad, accounting.frames_good),
            _rate(accounting.payloads_bad, accounting.payloads_good),
        ),
        bad_bytes=bad_bytes,
        bad_byte_rate=_rate(bad_bytes, accounting.bytes_decoded),
    )


def _rate(bad: int, good: int) -> float:
    return bad / (bad + good) if bad + good else 0.0


def check_policy(reports: list[FileReport], totals: Totals, job: DecodeRun) -> None:
    """Fail the run when the error policy or a gate says so."""
    sums = totals.accounting
    payloads = sums.payloads_good + sums.payloads_bad
    carried = f"; {sums.payloads_bad} of {payloads} payloads" if payloads else ""
    if job.error_policy == "fail" and (sums.frames_bad or sums.payloads_bad):
        reason = f"error policy 'fail' and {sums.frames_bad} bad frame(s){carried}"
    elif totals.error_rate > job.max_error_rate:
        reason = (
            f"error rate {totals.error_rate:.4%} ({sums.frames_bad} of "
            f"{sums.frames_good + sums.frames_bad} frames{carried}) is above "
            f"--max-error-rate {job.max_error_rate:.4%}"
        )
    elif totals.bad_byte_rate > job.max_bad_byte_rate:
        reason = (
            f"bad-byte rate {totals.bad_byte_rate:.4%} ({totals.bad_bytes} of "
            f"{sums.bytes_total} bytes not decoded: {sums.bytes_quarantined} "
            f"quarantined, {sums.bytes_skipped} skipped, {sums.bytes_truncated_tail} "
            f"in truncated tails) is above --max-bad-byte-rate {job.max_bad_byte_rate:.4%}"
        )
    else:
        return
    accounts = [report.accounting for report in reports]
    files = [
        f"{e.source}: {e.frames_bad} bad frame(s), {e.payloads_bad} bad payload(s), "
        f"{e.bytes_total - e.bytes_decoded} of {e.bytes_total} bytes not decoded "
        f"(stop: {e.stop_reason})"
        for e in accounts
        if e.frames_bad or e.payloads_bad or e.bytes_total > e.bytes_decoded
    ]
    first = sorted(
        (bad for report in reports for bad in report.first_bad),
        key=lambda bad: (bad.source_file, bad.byte_offset),
    )[:SHOWN_BAD_FRAMES]
    frames = [str(bad) for bad in first]
    raise JobFailed(
        f"{reason}; nothing written.\n  files:\n    "
        + "\n    ".join(files)
        + ("\n  first bad frames:\n    " + "\n    ".join(frames) if frames else "")
    )


# --- save ---------------------------------------------------------------------------


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
class UnitFigures:
    """How a run's files were decoded: units (ranges and whole files decoded again), Spark
    partitions, files cut into ranges, and those decoded whole again."""

    units: int
    partitions: int
    split_files: int
    split_fallback_files: int


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


# --- the run ------------------------------------------------------------------------


def run(spark: SparkSession, job: DecodeRun) -> DecodeReport:
    """Decode, check, write; returns the report written as the manifest. Raises JobFailed."""
    started_at, started = dt.datetime.now(dt.UTC), time.monotonic()
    fmt = job.fmt
    manifest_path = layout.manifest_path(job.warehouse, job.source, job.date)
    listing = list_landing(job.landing, fmt)
    partitions = job.partitions or default_partitions(spark, listing.files)
    if not listing.files:
        log.warning("no %s data files under %s: the day is written empty", fmt.name, job.landing)
    log.info(
        "planned %d file(s), %d bytes; %d file(s) ignored",
        len(listing.files),
        sum(file.size for file in listing.files),
        len(listing.ignored),
    )
    withdraw_validation(job.reports, job.source, fmt.tables, job.date)
    checked = [layout.table_name(job.source, table) for table in [None, *fmt.tables]]
    metrics.withdraw(job.warehouse, "validate", checked, job.date)
    tables = output_tables(job.warehouse, job.source, fmt.tables)
    run_id = uuid.uuid4().hex[:12]
    run_dirs = {
        key: layout.run_dir(table, job.date, run_id)
        for key, table in tables.items()
        if key != QUARANTINE or job.error_policy != "skip"
    }
    work = Work(
        job.envelope,
        job.payload,
        job.options,
        job.row_schema,
        listing.filesystem,
        run_dirs,
        job.date,
    )
    try:
        splits = find_split_points(spark, listing.files, fmt, work, job.split_bytes, partitions)
        for uri, found in splits.items():
            for name, check in found.checks.items():
                if check.get("mismatches"):
                    log.warning("%s: %s found %d mismatch(es)", uri, name, check["mismatches"])
        reports, figures = decode_files(spark, listing.files, splits, work, partitions)
        check_accounting(reports, listing.files)
        totals = summarise(reports, fmt.tables)
        log.info(
            "decoded %d file(s): %d rows, %d quarantined frame(s), error rate %.4f%%, "
            "bad-byte rate %.4f%%",
            totals.files,
            totals.rows,
            totals.quarantine_items,
            100 * totals.error_rate,
            100 * totals.bad_byte_rate,
        )
        check_policy(reports, totals, job)
    except BaseException as exc:
        remove_run(run_dirs.values())
        if isinstance(exc, JobFailed):  # the daily report shows the day as failed, and why
            metrics.record_decode_failure(job.warehouse, job.source, job.date, str(exc))
        raise
    # The manifest is written last and names the table versions it vouches for: until it is
    # replaced, the previous one still describes the previous run, whose versions stay
    # readable, whichever commits below succeed.
    committing = time.monotonic()
    versions = commit(tables, run_dirs, job.date)
    run_figures = RunFigures(
        **dataclasses.asdict(figures),
        started_at=started_at.isoformat(),
        elapsed_seconds=round(time.monotonic() - started, 3),
        commit_seconds=round(time.monotonic() - committing, 3),
        spark_application_id=spark.sparkContext.applicationId,
    )
    report = DecodeReport(job, reports, totals, listing.ignored, run_figures, versions)
    manifest = report.manifest()
    figures = metrics.merge(file.figures for file in reports)
    metrics.record_decode(job.warehouse, manifest, figures, manifest_path)
    storage.write_json(manifest_path, manifest)
    vacuum(tables.values(), job.retention_hours)
    return report


def summary_line(report: DecodeReport) -> str:
    totals = report.totals
    return (
        f"decode {report.job.source} dt={report.job.date.isoformat()}: files={totals.files} "
        f"bytes={totals.accounting.bytes_total} rows={totals.rows} "
        f"quarantined={totals.quarantine_items} "
        + "".join(f"{table}_rows={rows} " for table, rows in totals.table_rows.items())
        + f"truncated_tails={totals.truncated_tail_files} "
        f"error_rate={totals.error_rate:.4%} bad_byte_rate={totals.bad_byte_rate:.4%} "
        f"elapsed={report.run.elapsed_seconds:.1f}s"
    )


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    setup_logging()
    report = run_job("decode", parse_args(argv), spark, run)
    if report is None:
        return EXIT_FAILED
    print(summary_line(report))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

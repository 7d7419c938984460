"""Step 2 of a decode run: every planned unit decoded once by an executor (`jobs.parts`),
which writes its rows, companion tables and quarantined frames straight to Parquet in the
run's folders and sends back only a `UnitReport`; then one `FileReport` per file.

A split file whose ranges do not fit together (a range before the last that does not end
cleanly: a split point that was not really a frame start) has its range parts deleted and
is decoded again whole, so correctness never rests on the split points; a file's ranges
then add up to its accounting.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Iterable, Mapping

from pyspark.sql import SparkSession

from jobs import layout, metrics, storage
from jobs.parts import SHOWN_BAD_FRAMES, decode_units
from jobs.plan import group_by_size, plan_units
from jobs.units import (
    ACCOUNTING_COUNTS,
    DataFile,
    FileReport,
    FileSplits,
    Unit,
    UnitReport,
    Work,
    part_name,
)

log = logging.getLogger("wirelake.decode")


@dataclasses.dataclass(frozen=True)
class UnitFigures:
    """How a run's files were decoded: units (ranges and whole files decoded again), Spark
    partitions, files cut into ranges, and those decoded whole again."""

    units: int
    partitions: int
    split_files: int
    split_fallback_files: int


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
    splits: Mapping[str, FileSplits],
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

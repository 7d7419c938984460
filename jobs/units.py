"""The work of a decode run as the driver and the executors share it, typed once: the files
the driver lists, the work unit that goes from its plan to every executor task (to find a
file's split points, then to decode it), and the reports that come back.

A `Unit` is a whole file, or a byte range of one that starts at a frame (a `SplitPoint` the
format found); an executor returns a `FileSplits` for a whole-file unit it looked into and a
`UnitReport` for a unit it decoded; the driver makes each file's `FileReport` (a row of the
run manifest) from its units' reports and the run's `Totals` from those. Imported by the
executors: no Spark, nothing of the driver.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping

import pyarrow as pa
from pyarrow import fs as pafs

from wirecodecs import FileAccounting
from wirecodecs.options import Resolved
from wirecodecs.registry import SplitPoint

# The int fields of FileAccounting, and the counts a manifest gives per file and in its
# totals: those and the rows and quarantined frames written.
ACCOUNTING_COUNTS = [f.name for f in dataclasses.fields(FileAccounting) if f.type == "int"]
COUNTS = [*ACCOUNTING_COUNTS, "rows", "quarantine_items"]


@dataclasses.dataclass(frozen=True)
class DataFile:
    """A landed file to decode, as the driver listed it."""

    uri: str  # what the decoder, lineage columns and the manifest name the file by
    path: str  # the same file inside the landing filesystem
    size: int


@dataclasses.dataclass(frozen=True)
class Unit:
    """A file, or a range of one, to decode: `uri` is what lineage columns and the manifest
    name the file by, `path` the same file inside the landing filesystem."""

    index: int  # names the unit's part files, so reruns write the same names
    uri: str
    path: str
    size: int  # bytes to decode (as listed, when the unit reads to the end of the file)
    start: int = 0  # where they start in the file: added to the rows' file offsets
    to_end: bool = True  # the unit reads on to the end of the file, not just `size` bytes
    shifts: Mapping[str, int] = dataclasses.field(default_factory=dict)  # SplitPoint.shifts

    @classmethod
    def whole(cls, index: int, file: DataFile) -> Unit:
        """All of `file` as unit `index`."""
        return cls(index, file.uri, file.path, file.size)

    def ranges(self, points: Iterable[SplitPoint], first_index: int) -> list[Unit]:
        """This whole-file unit cut at `points` (increasing, inside the file), numbered from
        `first_index`: itself, renumbered, when there are none."""
        starts = [SplitPoint(0), *points]
        ends = [point.offset for point in starts[1:]]
        return [
            Unit(
                first_index + number,
                self.uri,
                self.path,
                (self.size if end is None else end) - point.offset,
                point.offset,
                end is None,
                dict(point.shifts),
            )
            for number, (point, end) in enumerate(zip(starts, [*ends, None], strict=True))
        ]


def part_name(index: int) -> str:
    """The file name of unit `index`'s part in each run folder."""
    return f"part-{index:05d}.parquet"


@dataclasses.dataclass(frozen=True)
class Work:
    """What every unit of a run shares: the format, its options (checked on the driver) and
    row schema, and where parts go (table key -> the run's folder in the table's partition;
    None for the main table, a companion table's name, or QUARANTINE; a missing key is not
    written)."""

    envelope: str
    payload: str
    options: Resolved
    row_schema: pa.Schema
    landing: pafs.FileSystem
    run_dirs: Mapping[str | None, str]
    day: dt.date | None = None  # the run's day: event times are counted by its hours


@dataclasses.dataclass(frozen=True)
class FileSplits:
    """Where a file may be cut (`WireFormat.split`: increasing points inside it) and what
    the format checked on the way (entries of the file's manifest row, e.g. `index_check`)."""

    uri: str
    points: list[SplitPoint]
    checks: Mapping[str, dict]


@dataclasses.dataclass(frozen=True)
class BadFrame:
    """A quarantined frame as a failure message names it."""

    source_file: str
    byte_offset: int
    error_kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.source_file}@{self.byte_offset} {self.error_kind}: {self.detail}"


@dataclasses.dataclass
class Decoded:
    """What a unit, a file or a run decoded: its byte and frame accounting, and the rows of
    each table and the quarantined frames it wrote."""

    accounting: FileAccounting
    rows: int
    quarantine_items: int
    table_rows: dict[str, int]  # companion table -> rows

    def to_dict(self) -> dict:
        """The accounting and counts as the manifest's row of a file gives them."""
        return {
            **self.accounting.to_dict(),
            "rows": self.rows,
            "quarantine_items": self.quarantine_items,
            "table_rows": dict(self.table_rows),
        }

    def count(self, name: str) -> int:
        """One of COUNTS."""
        if name in ("rows", "quarantine_items"):
            return getattr(self, name)
        return getattr(self.accounting, name)


@dataclasses.dataclass
class UnitReport(Decoded):
    """What an executor sends back for a unit it decoded: its accounting and counts, its
    first bad frames (for a failure message) and its share of the day's figures
    (`jobs.metrics.PartFigures`)."""

    unit: int  # Unit.index
    first_bad: list[BadFrame]
    figures: dict


@dataclasses.dataclass
class FileReport(Decoded):
    """A file's units' reports as one: the file's row of the manifest (`to_dict`)."""

    first_bad: list[BadFrame]
    figures: dict
    ranges: int = 1  # the units it was decoded in
    split_fallback: str | None = None  # why its ranges were decoded whole again
    checks: Mapping[str, object] = dataclasses.field(default_factory=dict)  # FileSplits.checks

    def to_dict(self) -> dict:
        return {
            **super().to_dict(),
            "ranges": self.ranges,
            "split_fallback": self.split_fallback,
            **self.checks,
        }


@dataclasses.dataclass
class Totals(Decoded):
    """A run's counts over its files (`accounting` holds the sums, its source and format
    are no file's) and the rates its gates judge."""

    files: int
    truncated_tail_files: int
    error_rate: float  # bad frames / frames, or bad payloads / payloads if worse
    bad_bytes: int  # bytes not decoded: quarantined, skipped, truncated tails
    bad_byte_rate: float

    def to_dict(self) -> dict:
        """The manifest's `totals`."""
        return {
            **{name: self.count(name) for name in COUNTS},
            "files": self.files,
            "truncated_tail_files": self.truncated_tail_files,
            "table_rows": dict(self.table_rows),
            "error_rate": self.error_rate,
            "bad_bytes": self.bad_bytes,
            "bad_byte_rate": self.bad_byte_rate,
        }

"""What executors run: find where large files may be cut, decode work units and write
their rows straight to Parquet parts.

A work unit is a whole file, or a byte range of one that starts at a frame (the format's
`WireFormat.split` found it, `find_splits`). It is decoded once, as a stream (a range as a
stream of its own bytes, through the same decoder): the decoder's row batches go into one
pyarrow ParquetWriter per table in the run's folders (never through Spark rows,
which cost several times the decode), its quarantined frames into the quarantine table's,
and the unit's accounting travels back to the driver as one small dict. A range's rows and
quarantined frames have their file offsets (and the format's file-wide counts) moved by
where the range starts, so that they read as the whole file's. The driver then checks the
accounting and the gates and either moves the staged partitions into place or deletes
them (`jobs.decode`). Executors import this module, not the job script, so it holds no
driver state.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

import wirecodecs
from jobs import layout, storage
from jobs.metrics import PartFigures
from wirecodecs import FileAccounting, Quarantined, WireFormat
from wirecodecs.options import Resolved
from wirecodecs.registry import TableRows

STREAM_BUFFER_BYTES = 1 << 20  # read-ahead of remote streams; the decoder bounds the rest
SPLIT_READ_BYTES = 64 << 10  # what a split finder's small reads are served from
QUARANTINE_FLUSH = 4096  # quarantined frames buffered per Parquet write
SHOWN_BAD_FRAMES = 5  # bad frames a unit reports to the driver for a failure message
QUARANTINE = "_quarantine"  # the run folder key of the quarantine table

QUARANTINE_SCHEMA = pa.schema(
    [
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("byte_offset", pa.int64(), nullable=False),
        pa.field("length", pa.int64(), nullable=False),
        pa.field("error_kind", pa.string(), nullable=False),
        pa.field("detail", pa.string(), nullable=False),
        pa.field("head", pa.binary(), nullable=False),  # the first bytes of the frame
        pa.field("format", pa.string(), nullable=False),
    ]
)


def output_tables(warehouse: str, source: str, companions: Iterable[str]) -> dict[str | None, str]:
    """Table key (None: the source's own table; a companion table's name; QUARANTINE) ->
    the table a run of `source` writes its day into."""
    tables = {None: layout.table_dir(warehouse, source)}
    for name in companions:
        tables[name] = layout.table_dir(warehouse, layout.table_name(source, name))
    tables[QUARANTINE] = layout.quarantine_table_dir(warehouse, source)
    return tables


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


def find_splits(files: Iterable[tuple[str, str, int, list[int]]], work: Work) -> Iterator[dict]:
    """mapPartitions function: for each (uri, path, size, boundaries) of a file, where the
    format says it may be cut (`WireFormat.split`) and what it checked on the way."""
    fmt = wirecodecs.source_format(work.envelope, work.payload)

    def open_file(path: str) -> BinaryIO:
        if work.landing.get_file_info(path).type != pafs.FileType.File:
            raise FileNotFoundError(path)
        return io.BufferedReader(work.landing.open_input_file(path), SPLIT_READ_BYTES)

    for uri, path, size, boundaries in files:
        try:
            splits = fmt.split(open_file, path, size, boundaries, work.options)
        except Exception as exc:  # an I/O failure or a finder bug: name the file
            raise RuntimeError(f"{fmt.name}: finding split points in {uri} failed: {exc}") from exc
        offsets = [0, *(point.offset for point in splits.points), size]
        if any(a >= b for a, b in itertools.pairwise(offsets)):
            raise ValueError(f"{fmt.name}: split points of {uri} do not increase inside it")
        points = [(point.offset, dict(point.shifts)) for point in splits.points]
        yield {"uri": uri, "points": points, "checks": dict(splits.checks)}


def decode_units(units: Iterable[Unit], work: Work) -> Iterator[dict]:
    """mapPartitions function: each unit of the partition decoded and written in turn."""
    fmt = wirecodecs.source_format(work.envelope, work.payload)
    for unit in units:
        try:
            yield decode_unit(fmt, unit, work)
        except Exception as exc:  # an I/O failure or a decoder bug: name the file
            raise RuntimeError(f"{fmt.name}: decoding {unit.uri} failed: {exc}") from exc


class _Parts:
    """The unit's Parquet part in each run folder, opened at its first rows."""

    def __init__(self, unit: Unit, run_dirs: Mapping[str | None, str]) -> None:
        self._name = part_name(unit.index)
        self._run_dirs = run_dirs
        self._writers: dict[str | None, pq.ParquetWriter] = {}

    def write(self, table: str | None, batch: pa.RecordBatch) -> None:
        if table not in self._run_dirs or not batch.num_rows:
            return
        writer = self._writers.get(table)
        if writer is None:
            filesystem, folder = storage.resolve(self._run_dirs[table])
            filesystem.create_dir(folder, recursive=True)
            writer = pq.ParquetWriter(f"{folder}/{self._name}", batch.schema, filesystem=filesystem)
            self._writers[table] = writer
        writer.write_batch(batch)

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()


def decode_unit(fmt: WireFormat, unit: Unit, work: Work) -> dict:
    """Stream one unit through the decoder into its parts; its accounting as a dict."""
    accounting = FileAccounting(source=unit.uri, format=fmt.name)
    counts = {"rows": 0, "quarantine_items": 0, "table_rows": dict.fromkeys(fmt.tables, 0)}
    first_bad: list[dict] = []
    bad: list[Quarantined] = []
    parts = _Parts(unit, work.run_dirs)
    figures = PartFigures(work.day)  # the unit's share of the day's metrics (jobs.metrics)
    shifts = {"byte_offset": unit.start, **unit.shifts} if unit.start else {}
    try:
        with _open(unit, work.landing) as stream:
            for item in fmt.decode(stream, unit.uri, accounting, work.options):
                if shifts:
                    item = _shifted(item, shifts)
                if isinstance(item, Quarantined):
                    counts["quarantine_items"] += 1
                    figures.quarantined(item.source, item.byte_offset, item.kind)
                    if len(first_bad) < SHOWN_BAD_FRAMES:
                        first_bad.append(_described(item))
                    bad.append(item)
                    if len(bad) >= QUARANTINE_FLUSH:
                        parts.write(QUARANTINE, _quarantine_batch(bad, fmt.name))
                        bad.clear()
                elif isinstance(item, TableRows):
                    _check_schema(item.batch, fmt.tables.get(item.table), item.table)
                    counts["table_rows"][item.table] += item.batch.num_rows
                    figures.rows(item.table, item.batch)
                    parts.write(item.table, item.batch)
                else:
                    _check_schema(item, work.row_schema, None)
                    counts["rows"] += item.num_rows
                    figures.rows(None, item)
                    parts.write(None, item)
        parts.write(QUARANTINE, _quarantine_batch(bad, fmt.name))
    finally:
        parts.close()
    return {
        "unit": unit.index,
        "accounting": {**accounting.to_dict(), **counts},
        "first_bad": first_bad,
        "figures": figures.figures,
    }


def _open(unit: Unit, landing: pafs.FileSystem) -> BinaryIO:
    """The unit's bytes as a stream: a whole file read ahead, or a range of it."""
    if not unit.start and unit.to_end:
        return landing.open_input_stream(
            unit.path, compression=None, buffer_size=STREAM_BUFFER_BYTES
        )
    file = landing.open_input_file(unit.path)
    file.seek(unit.start)
    return file if unit.to_end else _Range(file, unit.size)


class _Range(io.RawIOBase):
    """The next `length` bytes of `file`, then the end of the stream."""

    def __init__(self, file: BinaryIO, length: int) -> None:
        super().__init__()
        self._file = file
        self._left = length

    def readable(self) -> bool:
        return True

    def readinto(self, into) -> int:
        size = min(len(into), self._left)
        got = self._file.readinto(memoryview(into)[:size]) if size else 0
        self._left -= got
        return got

    def close(self) -> None:
        self._file.close()
        super().close()


def _shifted(item, shifts: Mapping[str, int]):
    """A range's row batch or quarantined frame with its file offsets, and the columns
    that count over the file, moved to where the range starts (`shifts`)."""
    if isinstance(item, Quarantined):
        return dataclasses.replace(item, byte_offset=item.byte_offset + shifts["byte_offset"])
    batch = item.batch if isinstance(item, TableRows) else item
    columns = batch.columns
    for name, amount in shifts.items():
        at = batch.schema.get_field_index(name)
        if at >= 0:
            columns[at] = pc.add(columns[at], pa.scalar(amount, columns[at].type))
    batch = pa.RecordBatch.from_arrays(columns, schema=batch.schema)
    return TableRows(item.table, batch) if isinstance(item, TableRows) else batch


def _check_schema(batch: pa.RecordBatch, expected: pa.Schema | None, table: str | None) -> None:
    """Every part of a table has the table's schema, or the decoder has a bug."""
    if expected is None:
        raise TypeError(f"the decoder yielded rows of an undeclared table {table!r}")
    if batch.schema.names != expected.names or batch.schema.types != expected.types:
        raise TypeError(
            f"the decoder yielded a batch of table {table or 'main'} that does not match its "
            f"schema:\n{batch.schema}\nexpected:\n{expected}"
        )


def _described(item: Quarantined) -> dict:
    return {
        "source_file": item.source,
        "byte_offset": item.byte_offset,
        "error_kind": item.kind,
        "detail": item.detail,
    }


def _quarantine_batch(items: list[Quarantined], format_name: str) -> pa.RecordBatch:
    columns = {
        "source_file": [item.source for item in items],
        "byte_offset": [item.byte_offset for item in items],
        "length": [item.length for item in items],
        "error_kind": [item.kind for item in items],
        "detail": [item.detail for item in items],
        "head": [item.head for item in items],
        "format": [format_name] * len(items),
    }
    return pa.RecordBatch.from_pydict(columns, schema=QUARANTINE_SCHEMA)

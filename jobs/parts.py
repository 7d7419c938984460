"""What executors run: find where large files may be cut, decode work units and write
their rows straight to Parquet parts.

A work unit is a whole file, or a byte range of one that starts at a frame (the format's
`WireFormat.split` found it, `find_splits`). It is decoded once, as a stream (a range as a
stream of its own bytes, through the same decoder): the decoder's row batches go into one
pyarrow ParquetWriter per table in the run's folders (never through Spark rows,
which cost several times the decode), its quarantined frames into the quarantine table's,
and the unit's accounting travels back to the driver as one small `UnitReport`. A range's rows and
quarantined frames have their file offsets (and the format's file-wide counts) moved by
where the range starts, so that they read as the whole file's. The driver then checks the
accounting and the gates and either moves the staged partitions into place or deletes
them (`jobs.verify`, `jobs.save`). Executors import this module, not the job script, so it holds no
driver state.
"""

from __future__ import annotations

import dataclasses
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
from jobs.units import BadFrame, FileSplits, Unit, UnitReport, Work, part_name
from wirecodecs import FileAccounting, Quarantined, WireFormat
from wirecodecs.registry import SplitPoint, TableRows

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


def boundaries(size: int, split_bytes: int) -> list[int]:
    """Where a file of `size` bytes would be cut into equal ranges of at most
    `split_bytes` (none when it is not larger)."""
    ranges = -(-size // split_bytes)
    return [size * k // ranges for k in range(1, ranges)]


def find_splits(units: Iterable[Unit], work: Work, split_bytes: int) -> Iterator[FileSplits]:
    """mapPartitions function: for each whole-file unit, where the format says the file may
    be cut into ranges of about `split_bytes` (`WireFormat.split`) and what it checked on
    the way."""
    fmt = wirecodecs.source_format(work.envelope, work.payload)

    def open_file(path: str) -> BinaryIO:
        if work.landing.get_file_info(path).type != pafs.FileType.File:
            raise FileNotFoundError(path)
        return io.BufferedReader(work.landing.open_input_file(path), SPLIT_READ_BYTES)

    for unit in units:
        cuts = boundaries(unit.size, split_bytes)
        try:
            splits = fmt.split(open_file, unit.path, unit.size, cuts, work.options)
        except Exception as exc:  # an I/O failure or a finder bug: name the file
            raise RuntimeError(
                f"{fmt.name}: finding split points in {unit.uri} failed: {exc}"
            ) from exc
        offsets = [0, *(point.offset for point in splits.points), unit.size]
        if any(a >= b for a, b in itertools.pairwise(offsets)):
            raise ValueError(f"{fmt.name}: split points of {unit.uri} do not increase inside it")
        points = [SplitPoint(point.offset, dict(point.shifts)) for point in splits.points]
        yield FileSplits(unit.uri, points, dict(splits.checks))


def decode_units(units: Iterable[Unit], work: Work) -> Iterator[UnitReport]:
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


def decode_unit(fmt: WireFormat, unit: Unit, work: Work) -> UnitReport:
    """Stream one unit through the decoder into its parts; what it decoded and wrote."""
    accounting = FileAccounting(source=unit.uri, format=fmt.name)
    report = UnitReport(
        accounting,
        rows=0,
        quarantine_items=0,
        table_rows=dict.fromkeys(fmt.tables, 0),
        unit=unit.index,
        first_bad=[],
        figures={},
    )
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
                    report.quarantine_items += 1
                    figures.quarantined(item.source, item.byte_offset, item.kind)
                    if len(report.first_bad) < SHOWN_BAD_FRAMES:
                        report.first_bad.append(_described(item))
                    bad.append(item)
                    if len(bad) >= QUARANTINE_FLUSH:
                        parts.write(QUARANTINE, _quarantine_batch(bad, fmt.name))
                        bad.clear()
                elif isinstance(item, TableRows):
                    _check_schema(item.batch, fmt.tables.get(item.table), item.table)
                    report.table_rows[item.table] += item.batch.num_rows
                    figures.rows(item.table, item.batch)
                    parts.write(item.table, item.batch)
                else:
                    _check_schema(item, work.row_schema, None)
                    report.rows += item.num_rows
                    figures.rows(None, item)
                    parts.write(None, item)
        parts.write(QUARANTINE, _quarantine_batch(bad, fmt.name))
    finally:
        parts.close()
    report.figures = figures.figures
    return report


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


def _described(item: Quarantined) -> BadFrame:
    return BadFrame(item.source, item.byte_offset, item.kind, item.detail)


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

"""What executors run: decode work units and write their rows straight to Parquet parts.

A work unit is decoded once, as a stream: the decoder's row batches go into one pyarrow
ParquetWriter per table in the run's staging folders (never through Spark rows, which cost
several times the decode), its quarantined frames into the quarantine table's, and the
unit's accounting travels back to the driver as one small dict. The driver then checks the
accounting and the gates and either moves the staged partitions into place or deletes
them (`jobs.decode`). Executors import this module, not the job script, so it holds no
driver state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

import wirecodecs
from jobs import storage
from wirecodecs import FileAccounting, Quarantined, WireFormat
from wirecodecs.registry import TableRows

STREAM_BUFFER_BYTES = 1 << 20  # read-ahead of remote streams; the decoder bounds the rest
QUARANTINE_FLUSH = 4096  # quarantined frames buffered per Parquet write
SHOWN_BAD_FRAMES = 5  # bad frames a unit reports to the driver for a failure message
QUARANTINE = "_quarantine"  # the staging key of the quarantine table

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


@dataclasses.dataclass(frozen=True)
class Unit:
    """One file to decode: `uri` is what lineage columns and the manifest name it by,
    `path` the same file inside the landing filesystem."""

    index: int  # names the unit's part files, so reruns write the same names
    uri: str
    path: str
    size: int


@dataclasses.dataclass(frozen=True)
class Work:
    """What every unit of a run shares: the format, its options and where parts go
    (table key -> staging partition folder: None for the main table, a companion table's
    name, or QUARANTINE; a missing key is not written)."""

    envelope: str
    payload: str
    options: Mapping[str, object]
    landing: pafs.FileSystem
    staging: Mapping[str | None, str]


def decode_units(units: Iterable[Unit], work: Work) -> Iterator[dict]:
    """mapPartitions function: each unit of the partition decoded and written in turn."""
    fmt = wirecodecs.source_format(work.envelope, work.payload)
    for unit in units:
        try:
            yield decode_unit(fmt, unit, work)
        except Exception as exc:  # an I/O failure or a decoder bug: name the file
            raise RuntimeError(f"{fmt.name}: decoding {unit.uri} failed: {exc}") from exc


class _Parts:
    """The unit's Parquet part in each staging folder, opened at its first rows."""

    def __init__(self, unit: Unit, staging: Mapping[str | None, str]) -> None:
        self._name = f"part-{unit.index:05d}.parquet"
        self._staging = staging
        self._writers: dict[str | None, pq.ParquetWriter] = {}

    def write(self, table: str | None, batch: pa.RecordBatch) -> None:
        if table not in self._staging or not batch.num_rows:
            return
        writer = self._writers.get(table)
        if writer is None:
            filesystem, folder = storage.resolve(self._staging[table])
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
    row_schema = fmt.row_schema(work.options)
    counts = {"rows": 0, "quarantine_items": 0, "table_rows": dict.fromkeys(fmt.tables, 0)}
    first_bad: list[dict] = []
    bad: list[Quarantined] = []
    parts = _Parts(unit, work.staging)
    stream = work.landing.open_input_stream(
        unit.path, compression=None, buffer_size=STREAM_BUFFER_BYTES
    )
    try:
        with stream:
            for item in fmt.decode(stream, unit.uri, accounting, work.options):
                if isinstance(item, Quarantined):
                    counts["quarantine_items"] += 1
                    if len(first_bad) < SHOWN_BAD_FRAMES:
                        first_bad.append(_described(item))
                    bad.append(item)
                    if len(bad) >= QUARANTINE_FLUSH:
                        parts.write(QUARANTINE, _quarantine_batch(bad, fmt.name))
                        bad.clear()
                elif isinstance(item, TableRows):
                    _check_schema(item.batch, fmt.tables.get(item.table), item.table)
                    counts["table_rows"][item.table] += item.batch.num_rows
                    parts.write(item.table, item.batch)
                else:
                    _check_schema(item, row_schema, None)
                    counts["rows"] += item.num_rows
                    parts.write(None, item)
        parts.write(QUARANTINE, _quarantine_batch(bad, fmt.name))
    finally:
        parts.close()
    return {"accounting": {**accounting.to_dict(), **counts}, "first_bad": first_bad}


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

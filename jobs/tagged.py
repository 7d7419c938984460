"""The one decode pass: executors turn files into one tagged Arrow stream.

Each file is decoded exactly once, into rows, quarantined frames and, last, the file's
accounting, all in one output schema with a `_kind` column saying which of the three a row
is. The driver persists that stream and splits it (rows table, quarantine table, manifest),
so no file is read twice and the three outputs always describe the same decode.
Executors import this module (not the job script), so it stays free of driver state.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyarrow import fs as pafs

import wirecodecs
from wirecodecs import FileAccounting, Quarantined, WireFormat

KIND = "_kind"
ROW, QUARANTINE, ACCOUNTING = "row", "quarantine", "accounting"
# Quarantine rows reuse the lineage columns source_file and byte_offset.
QUARANTINE_COLUMNS = {
    "_q_length": ("length", pa.int64()),
    "_q_error_kind": ("error_kind", pa.string()),
    "_q_detail": ("detail", pa.string()),
    "_q_head": ("head", pa.binary()),
}
ACCOUNTING_JSON = "_accounting"  # FileAccounting.to_dict() + rows and quarantine_items

# The work-unit rows the driver hands to mapInArrow: one per file.
UNIT_SCHEMA = pa.schema(
    [
        pa.field("uri", pa.string(), nullable=False),  # what the decoder and lineage see
        pa.field("path", pa.string(), nullable=False),  # inside the landing filesystem
        pa.field("size", pa.int64(), nullable=False),
    ]
)

STREAM_BUFFER_BYTES = 1 << 20  # read-ahead of remote streams; the decoder bounds the rest


def tagged_schema(row_schema: pa.Schema) -> pa.Schema:
    """Kind, then the format's row columns, then quarantine and accounting columns."""
    return pa.schema(
        [
            pa.field(KIND, pa.string(), nullable=False),
            *(field.with_nullable(True) for field in row_schema),
            *(pa.field(name, type_) for name, (_, type_) in QUARANTINE_COLUMNS.items()),
            pa.field(ACCOUNTING_JSON, pa.string()),
        ]
    )


def decode_partition(
    units: Iterator[pa.RecordBatch],
    *,
    envelope: str,
    payload: str,
    options: Mapping[str, object],
    filesystem: pafs.FileSystem,
) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: decode every file of the partition's work units in turn."""
    fmt = wirecodecs.source_format(envelope, payload)
    schema = tagged_schema(fmt.schema)
    for batch in units:
        for unit in batch.to_pylist():
            try:
                yield from decode_file(fmt, filesystem, unit["uri"], unit["path"], options, schema)
            except Exception as exc:  # an I/O failure or a decoder bug: name the file
                raise RuntimeError(f"{fmt.name}: decoding {unit['uri']} failed: {exc}") from exc


def decode_file(
    fmt: WireFormat,
    filesystem: pafs.FileSystem,
    uri: str,
    path: str,
    options: Mapping[str, object],
    schema: pa.Schema,
) -> Iterator[pa.RecordBatch]:
    """Stream one file through the decoder; the file's accounting row comes last."""
    accounting = FileAccounting(source=uri, format=fmt.name)
    rows = quarantine_items = 0
    stream = filesystem.open_input_stream(path, compression=None, buffer_size=STREAM_BUFFER_BYTES)
    with stream:
        for item in fmt.decode(stream, uri, accounting, options):
            if isinstance(item, Quarantined):
                quarantine_items += 1
                yield _quarantine_batch(item, schema)
            else:
                rows += item.num_rows
                yield _row_batch(item, fmt, schema)
    summary = {**accounting.to_dict(), "rows": rows, "quarantine_items": quarantine_items}
    yield pa.RecordBatch.from_pylist(
        [{KIND: ACCOUNTING, "source_file": uri, ACCOUNTING_JSON: json.dumps(summary)}],
        schema=schema,
    )


def _row_batch(batch: pa.RecordBatch, fmt: WireFormat, schema: pa.Schema) -> pa.RecordBatch:
    if batch.schema.names != fmt.schema.names or batch.schema.types != fmt.schema.types:
        raise TypeError(
            f"{fmt.name} decoder yielded a batch that does not match the format schema:\n"
            f"{batch.schema}"
        )
    n = batch.num_rows
    extra = schema.names[1 + batch.num_columns :]
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar(ROW, pa.string()), n),
            *batch.columns,
            *(pa.nulls(n, schema.field(name).type) for name in extra),
        ],
        schema=schema,
    )


def _quarantine_batch(item: Quarantined, schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [
            {
                KIND: QUARANTINE,
                "source_file": item.source,
                "byte_offset": item.byte_offset,
                "_q_length": item.length,
                "_q_error_kind": item.kind,
                "_q_detail": item.detail,
                "_q_head": item.head,
            }
        ],
        schema=schema,
    )

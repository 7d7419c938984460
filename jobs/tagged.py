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
from wirecodecs.registry import TableRows

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


def table_kind(table: str) -> str:
    """The `_kind` of a companion table's rows."""
    return f"{ROW}:{table}"


def table_column(table: str, column: str) -> str:
    """Where a companion table's column travels in the tagged stream."""
    return f"_t_{table}__{column}"


def tagged_schema(row_schema: pa.Schema, tables: Mapping[str, pa.Schema]) -> pa.Schema:
    """Kind, the main table's row columns, each companion table's (prefixed), then
    quarantine and accounting columns."""
    return pa.schema(
        [
            pa.field(KIND, pa.string(), nullable=False),
            *(field.with_nullable(True) for field in row_schema),
            *(
                field.with_name(table_column(table, field.name)).with_nullable(True)
                for table, schema in tables.items()
                for field in schema
            ),
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
    schema = tagged_schema(fmt.row_schema(options), fmt.tables)
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
    table_rows = dict.fromkeys(fmt.tables, 0)
    row_schema = fmt.row_schema(options)
    stream = filesystem.open_input_stream(path, compression=None, buffer_size=STREAM_BUFFER_BYTES)
    with stream:
        for item in fmt.decode(stream, uri, accounting, options):
            if isinstance(item, Quarantined):
                quarantine_items += 1
                yield _quarantine_batch(item, schema)
            elif isinstance(item, TableRows):
                table_rows[item.table] += item.batch.num_rows
                yield _table_batch(item, fmt, schema)
            else:
                rows += item.num_rows
                yield _tagged_batch(ROW, "", item, row_schema, schema)
    summary = {
        **accounting.to_dict(),
        "rows": rows,
        "quarantine_items": quarantine_items,
        "table_rows": table_rows,
    }
    yield pa.RecordBatch.from_pylist(
        [{KIND: ACCOUNTING, "source_file": uri, ACCOUNTING_JSON: json.dumps(summary)}],
        schema=schema,
    )


def _tagged_batch(
    kind: str, prefix: str, batch: pa.RecordBatch, expected: pa.Schema, schema: pa.Schema
) -> pa.RecordBatch:
    """`batch`, which must match `expected`, in its (`prefix`ed) columns of the tagged
    `schema`; every other column null."""
    if batch.schema.names != expected.names or batch.schema.types != expected.types:
        raise TypeError(
            f"{kind}: the decoder yielded a batch that does not match its schema:\n"
            f"{batch.schema}\nexpected:\n{expected}"
        )
    n = batch.num_rows
    given = {prefix + name: batch.column(name) for name in batch.schema.names}
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar(kind, pa.string()), n),
            *(given.get(field.name, pa.nulls(n, field.type)) for field in list(schema)[1:]),
        ],
        schema=schema,
    )


def _table_batch(item: TableRows, fmt: WireFormat, schema: pa.Schema) -> pa.RecordBatch:
    if item.table not in fmt.tables:
        raise TypeError(f"{fmt.name} decoder yielded rows of an undeclared table {item.table!r}")
    prefix = table_column(item.table, "")
    kind = table_kind(item.table)
    return _tagged_batch(kind, prefix, item.batch, fmt.tables[item.table], schema)


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

"""The row model every format shares: lineage columns first, then the format's own.

Every row leads back to its bytes and its time the same way, whatever the format:
`source_file`, `byte_offset` (of the frame in the file), the checksum verdict where the
format has one, `event_time` (UTC), then the format's typed columns. Each format's page
(docs/<format>.md) lists its own columns.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from collections.abc import Iterator

import pyarrow as pa

EVENT_TIME_TYPE = pa.timestamp("us", tz="UTC")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)  # what every format's clock counts from
# A decoder's row buffer is flushed at `batch_rows` rows or once this much variable-length
# data (values, bodies, payloads) is buffered: memory stays bounded whatever batch_rows is.
FLUSH_BYTES = 8 << 20
# event_time is null outside years 1..9999, where Python's datetime (and so Spark's and
# pyarrow's conversions) cannot show it; the format's raw clock value keeps its own column.
EVENT_TIME_MIN_MS = -62135596800000  # 0001-01-01T00:00:00Z
EVENT_TIME_MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999Z


def lineage_fields(checksum_column: str | None) -> list[pa.Field]:
    """Lineage columns, with the format's checksum verdict column (or none) third."""
    fields = [
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("byte_offset", pa.int64(), nullable=False),
    ]
    if checksum_column:
        fields.append(pa.field(checksum_column, pa.bool_()))
    fields.append(pa.field("event_time", EVENT_TIME_TYPE))
    return fields


def in_batches(batch: pa.RecordBatch, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """`batch` as zero-copy slices of at most `batch_rows` rows (a flush may hold more)."""
    for at in range(0, batch.num_rows, batch_rows):
        yield batch.slice(at, batch_rows)


def json_ready(value: object) -> object:
    """One Arrow value as JSON: bytes as base64, timestamps as ISO-8601, decimals exact,
    containers walked."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, decimal.Decimal):  # exact: decimal(20,0) ids as whole numbers
        return int(value) if value.as_tuple().exponent >= 0 else str(value)
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(item) for item in value]
    return value


def json_rows(batch: pa.RecordBatch) -> Iterator[dict]:
    """The rows of a record batch as JSON-ready dicts, columns in schema order."""
    for row in batch.to_pylist():
        yield {name: json_ready(value) for name, value in row.items()}

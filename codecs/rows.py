"""The row model every format shares: lineage columns first, then the format's own.

DESIGN.md: `source_file`, `byte_offset` (of the frame in the file), the checksum verdict
where the format has one, `event_time` (UTC), then typed format columns.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Iterator

import pyarrow as pa

EVENT_TIME_TYPE = pa.timestamp("us", tz="UTC")


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


def json_ready(value: object) -> object:
    """One Arrow value as JSON: bytes as base64, timestamps as ISO-8601, containers walked."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(item) for item in value]
    return value


def json_rows(batch: pa.RecordBatch) -> Iterator[dict]:
    """The rows of a record batch as JSON-ready dicts, columns in schema order."""
    for row in batch.to_pylist():
        yield {name: json_ready(value) for name, value in row.items()}

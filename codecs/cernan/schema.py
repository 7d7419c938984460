"""Row schemas of decoded cernan dumps: `records` (main table) and `packets` (companion).

records: one row per Avro datum of an ok packet. The datum is `record_json` (JSON that
keeps every value; schemas vary packet to packet) unless the option `datum_schema_file`
names the expected schema (.avsc): then it is `record`, a typed column mapped from Avro by
`arrow_type`, and `schema_for(options)` gives the table's schema.
packets: one row per frame, errors and empty containers included (cernan.md §11 table A).
Unsigned 64-bit ids are decimal(20,0): Spark has no unsigned long and refuses Arrow uint64.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec
import pyarrow as pa
from fastavro import parse_schema

from wirecodecs.rows import lineage_fields

U64 = pa.decimal128(20, 0)
KV_TYPE = pa.list_(
    pa.struct(
        [
            pa.field("key", pa.string()),  # null when the key is not UTF-8
            pa.field("key_bytes", pa.binary(), nullable=False),
            pa.field("value", pa.binary(), nullable=False),
        ]
    )
)

# Columns every record row shares with its packet (joins packets on source_file + packet_index).
RECORD_PACKET_FIELDS = [
    *lineage_fields(None),  # byte_offset: the packet's length prefix; event_time: see docs
    pa.field("packet_index", pa.int64(), nullable=False),
    pa.field("id", U64, nullable=False),
    pa.field("shard_by", U64, nullable=False),
    pa.field("schema_fingerprint", pa.string(), nullable=False),  # CRC-64-AVRO of the PCF
    pa.field("schema_full_name", pa.string(), nullable=False),  # or the type if unnamed
    pa.field("block_index", pa.int32(), nullable=False),
    pa.field("record_index_in_block", pa.int64(), nullable=False),
    pa.field("record_index", pa.int64(), nullable=False),  # within the packet
]
RECORDS_SCHEMA = pa.schema(
    [*RECORD_PACKET_FIELDS, pa.field("record_json", pa.string(), nullable=False)]
)

PACKETS_SCHEMA = pa.schema(
    [
        *lineage_fields(None),  # event_time: earliest event_time of the packet's records
        pa.field("packet_index", pa.int64(), nullable=False),
        pa.field("packet_length", pa.int64(), nullable=False),  # declared, excludes its 4 bytes
        pa.field("complete", pa.bool_(), nullable=False),  # false: cut by the end of the file
        pa.field("resynced", pa.bool_(), nullable=False),  # start found by the resync scan
        pa.field("status", pa.string(), nullable=False),  # ok | error
        pa.field("error_stage", pa.string()),  # framing|header|kv|avro_header|avro_block
        pa.field("error_code", pa.string()),
        pa.field("error_detail", pa.string()),
        pa.field("warnings", pa.list_(pa.string()), nullable=False),
        pa.field("version", pa.int64()),  # u32 as sent (errors keep 0, 3, 2^32-1 ...)
        pa.field("control", pa.int64()),
        pa.field("sync", pa.bool_()),
        pa.field("id", U64),
        pa.field("id_hex", pa.string()),
        pa.field("shard_by", U64),
        pa.field("shard_by_hex", pa.string()),
        pa.field("cernan_kafka_key", pa.string()),  # what cernan's Kafka sink keys by
        pa.field("kv", KV_TYPE),  # v2 pairs in wire order; null for v1
        pa.field("kv_map", pa.map_(pa.string(), pa.string())),  # last wins; null for v1
        pa.field("kv_section_length", pa.int64()),
        pa.field("avro_offset", pa.int64()),  # file offset of the container
        pa.field("avro_length", pa.int64()),
        pa.field("avro_sha256", pa.string()),  # of the container bytes
        pa.field("codec", pa.string()),  # null | deflate | snappy
        pa.field("schema_json", pa.string()),  # raw avro.schema
        pa.field("schema_full_name", pa.string()),
        pa.field("schema_fingerprint", pa.string()),
        pa.field("ocf_sync", pa.binary()),
        pa.field("ocf_user_metadata", pa.map_(pa.string(), pa.binary())),
        pa.field("block_count", pa.int64()),  # whole good blocks
        pa.field("block_record_counts", pa.list_(pa.int64())),  # declared, per good block
        pa.field("declared_record_count", pa.int64()),  # their sum
        pa.field("record_count", pa.int64(), nullable=False),  # rows in records (0 on error)
        pa.field("records_before_error", pa.int64()),  # block errors: a salvage could keep
    ]
)


# ---- Avro datum -> JSON (every value kept) ---------------------------------------------------

_encoder = msgspec.json.Encoder()
_fast_json = _encoder.encode  # C; writes NaN and infinities as null


def _json_default(value: object) -> object:
    """The stdlib encoder's fallback, in msgspec's formats: bytes/fixed base64, datetimes
    and times ISO-8601 (UTC as Z, fraction only when not zero), decimals and uuids as
    strings, dates YYYY-MM-DD."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime | dt.time):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(value, dt.date | uuid.UUID | decimal.Decimal):
        return str(value)
    raise TypeError(f"no JSON form for {type(value).__name__}")


_exact_json = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), default=_json_default
).encode  # writes NaN, Infinity, -Infinity: Python's and Spark's JSON readers take them


def datum_json(value: object, floats: bool = True) -> bytes:
    """A datum as UTF-8 JSON that keeps every value. msgspec does the work; where the
    schema has float/double (`floats`), msgspec wrote a null, which may stand for a NaN
    or an infinity, and the datum holds a float, the stdlib encoder writes it again."""
    return _exact_if_needed(value, _fast_json(value), floats)


def datums_json(values: list, floats: bool = True) -> list[bytes]:
    """`datum_json` of each value, msgspec writing them all in one call (its lines: JSON
    escapes newlines); if that fails, value by value, so the error is the one
    `datum_json` raises first."""
    try:
        text = _encoder.encode_lines(values)
    except Exception:  # msgspec raises various types; `datum_json` names the first
        return [datum_json(value, floats) for value in values]
    lines = text.split(b"\n")
    lines.pop()  # after the last newline
    if floats and b"null" in text:
        return [
            _exact_if_needed(value, line, floats) for value, line in zip(values, lines, strict=True)
        ]
    return lines


def _exact_if_needed(value: object, text: bytes, floats: bool) -> bytes:
    """msgspec's `text`, or the stdlib's when it may differ: the two write every value
    alike but floats (msgspec: NaN as null, 1e16 not 1e+16), so a datum without one
    (its nulls are Nones) keeps msgspec's text."""
    if floats and b"null" in text and _holds_float(value):
        return _exact_json(value).encode("utf-8")
    return text


_FLOAT_SCAN_DEPTH = 64  # deeper datums are assumed to hold a float (the stdlib writes them)


def _holds_float(value: object, depth: int = _FLOAT_SCAN_DEPTH) -> bool:
    """Whether a float is anywhere in a fastavro value (dicts, lists, scalars)."""
    kind = type(value)
    if kind is float:
        return True
    if kind is dict:
        value = value.values()
    elif kind is not list:
        return False
    if not depth:
        return True
    for item in value:
        kind = type(item)
        if kind is float or ((kind is dict or kind is list) and _holds_float(item, depth - 1)):
            return True
    return False


def datum_json_text(value: object) -> str:
    return datum_json(value).decode("utf-8")


# ---- Avro schema -> Arrow type (the typed `record` column) -------------------------------------

Converter = Callable[[object], object] | None  # fastavro value -> what pa.array accepts


class _Recursive(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


_PRIMITIVES = {
    "null": pa.string(),  # always null; Spark cannot write a void column to Parquet
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
_MIDNIGHT = dt.datetime.min


def _since_midnight(unit_us: int) -> Callable[[dt.time], int]:
    def convert(value: dt.time) -> int:
        delta = dt.datetime.combine(_MIDNIGHT, value) - _MIDNIGHT
        return (delta // dt.timedelta(microseconds=1)) // unit_us

    return convert


_LOGICAL: dict[str, tuple[pa.DataType, Converter]] = {
    "timestamp-millis": (pa.timestamp("us", tz="UTC"), None),
    "timestamp-micros": (pa.timestamp("us", tz="UTC"), None),
    "local-timestamp-millis": (pa.timestamp("us"), None),
    "local-timestamp-micros": (pa.timestamp("us"), None),
    "date": (pa.date32(), None),
    "time-millis": (pa.int32(), _since_midnight(1000)),  # Spark has no time type
    "time-micros": (pa.int64(), _since_midnight(1)),
    "uuid": (pa.string(), str),
}


def arrow_type(schema, named: dict | None = None) -> tuple[pa.DataType, Converter]:
    """The Arrow type of a parsed Avro schema and the converter its fastavro values need
    (None: pa.array takes them as they are). Records map to structs, arrays to lists, maps
    to map<string, T>, [null, T] to a nullable T, enums to strings, fixed to binary;
    other unions and recursive records become JSON strings (Spark cannot nest them)."""
    return _arrow(schema, {} if named is None else named, [])


def _arrow(schema, named: dict, stack: list[str]) -> tuple[pa.DataType, Converter]:
    if isinstance(schema, list):
        branches = [branch for branch in schema if branch != "null"]
        if len(branches) == 1:
            return _arrow(branches[0], named, stack)
        return pa.string(), datum_json_text
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema], None
        if schema in stack:
            raise _Recursive(schema)
        return _arrow(named[schema], named, stack)
    logical = schema.get("logicalType")
    kind = schema["type"]
    if kind in ("enum", "fixed"):
        named[schema["name"]] = schema
    if logical == "decimal":  # beyond 38 digits Arrow/Spark decimals end: exact text
        precision = schema.get("precision", 0)
        if precision <= 38:
            return pa.decimal128(precision, schema.get("scale", 0)), None
        return pa.string(), str
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    if kind in ("enum", "fixed"):
        return (pa.string() if kind == "enum" else pa.binary()), None
    if kind == "array":
        item, convert = _arrow(schema["items"], named, stack)
        return pa.list_(item), None if convert is None else _each(convert)
    if kind == "map":
        value, convert = _arrow(schema["values"], named, stack)
        return pa.map_(pa.string(), value), None if convert is None else _each_value(convert)
    if kind == "record":
        return _record(schema, named, stack)
    return _arrow(kind, named, stack)


def _record(schema: dict, named: dict, stack: list[str]) -> tuple[pa.DataType, Converter]:
    name = schema["name"]
    named[name] = schema
    stack.append(name)
    try:
        fields, converters = [], {}
        for item in schema["fields"]:
            type_, convert = _arrow(item["type"], named, stack)
            fields.append(pa.field(item["name"], type_))
            if convert is not None:
                converters[item["name"]] = convert
    except _Recursive as err:
        if err.name != name:
            raise
        return pa.string(), datum_json_text
    finally:
        stack.pop()
    return pa.struct(fields), None if not converters else _fields(converters)


def _nullable(convert: Callable) -> Callable:
    return lambda value: None if value is None else convert(value)


def _each(convert: Callable) -> Callable:
    convert = _nullable(convert)
    return lambda values: None if values is None else [convert(v) for v in values]


def _each_value(convert: Callable) -> Callable:
    convert = _nullable(convert)
    return lambda values: None if values is None else {k: convert(v) for k, v in values.items()}


def _fields(converters: Mapping[str, Callable]) -> Callable:
    converters = {name: _nullable(convert) for name, convert in converters.items()}

    def convert(record: dict | None) -> dict | None:
        if record is None:
            return None
        out = dict(record)
        for name, field_convert in converters.items():
            out[name] = field_convert(out.get(name))
        return out

    return convert


def load_datum_schema(path: str):
    """The parsed expected schema from an .avsc file (option `datum_schema_file`)."""
    return parse_schema(json.loads(Path(path).read_text(encoding="utf-8")))


def records_schema(datum_type: pa.DataType | None) -> pa.Schema:
    """The records table: `record_json`, or `record` typed as `datum_type` when given."""
    if datum_type is None:
        return RECORDS_SCHEMA
    return pa.schema([*RECORD_PACKET_FIELDS, pa.field("record", datum_type)])


def schema_for(options: Mapping[str, object]) -> pa.Schema:
    """The records table's schema for a run's options (`WireFormat.schema_for`)."""
    path = options.get("datum_schema_file") or ""
    if not path:
        return RECORDS_SCHEMA
    return records_schema(arrow_type(load_datum_schema(str(path)))[0])

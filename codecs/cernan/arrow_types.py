"""Avro schemas as Arrow types: the typed `record` column of option `datum_schema_file`.

Records map to structs, arrays to lists, maps to map<string, T>, [null, T] to a nullable T,
enums to strings, fixed to binary; other unions and recursive records become JSON text
(Spark cannot nest them). Each type comes with the converter its fastavro values need.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from pathlib import Path

import pyarrow as pa
from fastavro import parse_schema

from wirecodecs.cernan.render import datum_json_text

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

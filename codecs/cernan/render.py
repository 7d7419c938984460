"""Avro datums as JSON text for the `record_json` column: every value kept (NaN and the
infinities included), fast where msgspec can write a datum alike."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import uuid

import msgspec

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

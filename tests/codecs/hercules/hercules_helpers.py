"""Shared by the Hercules codec tests: run the decoder, read the sidecars, and render
decoded tag lists in the sidecars' `tags_typed` form (and encoder values likewise)."""

from __future__ import annotations

import functools
import gzip
import json
import math
import struct
import uuid
from pathlib import Path

import pyarrow as pa
from decoding import decode_all

from wirecodecs.hercules.options import HerculesOptions
from wirecodecs.hercules.payload import decode_values

DATA = Path(__file__).resolve().parents[2] / "data" / "hercules"


# The registered hercules decoder run to the end over bytes or a stream, every item kept.
decode = functools.partial(decode_all, source="mem.bin", fmt="hercules")


def decode_value(value: bytes, opts: HerculesOptions) -> list[dict]:
    """One Kafka record value through the payload codec (`payload.decode_values`): its
    row, or its DecodeError raised."""
    carried = decode_values(pa.array([value], pa.binary()), opts)
    if carried.errors:
        raise carried.errors[0][1]
    return carried.batch.to_pylist()


def sidecar(name: str) -> dict:
    return json.loads(gzip.decompress((DATA / f"{name}.json.gz").read_bytes()))


def vector(name: str) -> bytes:
    return (DATA / name).read_bytes()


# ---- decoded entries -> the sidecars' typed view ------------------------------------


def _float(value: float, bits: int, width: int) -> dict:
    if math.isnan(value):
        shown = "NaN"
    elif math.isinf(value):
        shown = "Infinity" if value > 0 else "-Infinity"
    else:
        shown = value
    return {"value": shown, "bits": f"0x{bits & ((1 << width) - 1):0{width // 4}x}"}


def typed(entries: list[dict]) -> list[dict]:
    """A row's flat `tags` list as the sidecar's nested `tags_typed` list; also checks
    that paths and parents agree."""
    children: dict[int, list[int]] = {}
    for i, entry in enumerate(entries):
        assert entry["parent"] < i
        children.setdefault(entry["parent"], []).append(i)

    def value(i: int):
        entry = entries[i]
        kind = entry["type"]
        if kind == "Container":
            assert entry["count"] == len(children.get(i, []))
            return [tag(c) for c in children.get(i, [])]
        if kind == "Vector":
            return elements(i)
        if kind in ("Byte", "Short", "Integer", "Long"):
            return entry["int_value"]
        if kind in ("Float", "Double"):
            return _float(entry["float_value"], entry["float_bits"], 32 if kind == "Float" else 64)
        if kind == "Flag":
            return entry["bool_value"]
        if kind == "String" and entry["bytes_value"] is not None:
            return {"text": entry["string_value"], "raw_hex": entry["bytes_value"].hex()}
        return entry["string_value"]  # String, UUID; None for Null

    def elements(i: int) -> list:
        entry = entries[i]
        kind = entry["element_type"]
        if kind == "Byte":
            return list(entry["bytes_value"])
        if kind == "Null":
            return [None] * entry["count"]
        items = children.get(i, [])
        assert len(items) == entry["count"]
        for n, c in enumerate(items):
            assert entries[c]["index"] == n and entries[c]["key"] is None
            assert entries[c]["path"] == f"{entry['path']}[{n}]"
        if kind == "Vector":
            return [{"element_type": entries[c]["element_type"], "value": value(c)} for c in items]
        return [value(c) for c in items]

    def tag(i: int) -> dict:
        entry = entries[i]
        parent = entry["parent"]
        prefix = "" if parent < 0 else entries[parent]["path"] + "/"
        assert entry["path"].startswith(prefix)
        out = {"key": entry["key"]}
        if entry["key_raw"] is not None:
            out["key_raw_hex"] = entry["key_raw"].hex()
        out["type"] = entry["type"]
        if entry["type"] == "Vector":
            out["element_type"] = entry["element_type"]
        out["value"] = value(i)
        return out

    return [tag(i) for i in children.get(-1, [])]


# ---- encoder values -> the same views (what a correct decoder must produce) ----------


def _float_of(kind: str, given) -> tuple[float, int]:
    """The float a Float/Double encoder value decodes to, and its IEEE bits."""
    code, bits_code = ("f", "I") if kind == "Float" else ("d", "Q")
    raw = struct.pack(">" + (bits_code if isinstance(given, int) else code), given)
    return struct.unpack(">" + code, raw)[0], struct.unpack(">" + bits_code, raw)[0]


def _text(given) -> tuple[str, bytes | None]:
    raw = given.encode() if isinstance(given, str) else given
    try:
        return raw.decode(), None
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), raw


def _uuid(given) -> str:
    return str(given if isinstance(given, uuid.UUID) else uuid.UUID(bytes=given))


def expected_typed(tags) -> list[dict]:
    """The `tags_typed` view of encoder tags."""

    def payload(kind: str, given, element_type=None):
        if kind == "Container":
            return expected_typed(given)
        if kind == "Vector":
            if element_type == "Byte":
                return list(given)
            if element_type == "Vector":
                return [
                    {
                        "element_type": e.element_type,
                        "value": payload("Vector", e.value, e.element_type),
                    }
                    for e in given
                ]
            return [payload(element_type, e) for e in given]
        if kind in ("Float", "Double"):
            value, bits = _float_of(kind, given)
            return _float(value, bits, 32 if kind == "Float" else 64)
        if kind == "String":
            text, raw = _text(given)
            return text if raw is None else {"text": text, "raw_hex": raw.hex()}
        if kind == "UUID":
            return _uuid(given)
        if kind == "Flag":
            return bool(given)
        return given  # numbers, None

    out = []
    for key, value in tags:
        text, raw = _text(key)
        entry = {"key": text}
        if raw is not None:
            entry["key_raw_hex"] = raw.hex()
        entry["type"] = value.type
        if value.type == "Vector":
            entry["element_type"] = value.element_type
        entry["value"] = payload(value.type, value.value, value.element_type)
        out.append(entry)
    return out


def expected_plain(tags) -> dict:
    """The plain JSON view of encoder tags (last duplicate wins), as `tags_json` holds it."""

    def plain(kind: str, given, element_type=None):
        if kind == "Container":
            return expected_plain(given)
        if kind == "Vector":
            if element_type == "Byte":
                return list(given)
            if element_type == "Vector":
                return [plain("Vector", e.value, e.element_type) for e in given]
            return [plain(element_type, e) for e in given]
        if kind in ("Float", "Double"):
            return _float(*_float_of(kind, given), 64)["value"]
        if kind == "String":
            return _text(given)[0]
        if kind == "UUID":
            return _uuid(given)
        if kind == "Flag":
            return bool(given)
        return given

    out = {}
    for key, value in tags:
        out[_text(key)[0]] = plain(value.type, value.value, value.element_type)
    return out

"""The compiled JSON walk (`compiled.py`) against the pure path (fastavro, then
`render.datums_json`): the same text for every block it takes, None for every block it
must leave to the pure path (damaged bytes, NaN, a datum the stdlib encoder writes)."""

from __future__ import annotations

import datetime as dt
import io
import math
import struct

import pytest
from cernan_helpers import run
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from hypothesis import given
from hypothesis import strategies as st

from wirecodecs.cernan import decoder
from wirecodecs.cernan import encoder as enc
from wirecodecs.cernan.compiled import MAX_MAP_KEYS, program, render_block
from wirecodecs.cernan.render import _holds_float, datums_json
from wirecodecs.compiled import file_size, forced

pytest.importorskip("numba")

INNER = {"type": "record", "name": "Inner", "fields": [{"name": "q", "type": "boolean"}]}
ALL_TYPES = {
    "type": "record",
    "name": "All",
    "namespace": "test.web-1",
    "fields": [
        {"name": "n", "type": "null"},
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "s", "type": "string"},
        {"name": "raw", "type": "bytes"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B_2"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 3}},
        {"name": "items", "type": {"type": "array", "items": ["null", "int", "string"]}},
        {"name": "m", "type": {"type": "map", "values": INNER}},
        {"name": "again", "type": "Inner"},
        {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "nested", "type": {"type": "array", "items": {"type": "map", "values": "long"}}},
        {"name": "empty", "type": {"type": "record", "name": "Empty", "fields": []}},
    ],
}
FLOATS = {
    "type": "record",
    "name": "Floats",
    "fields": [
        {"name": "d", "type": "double"},
        {"name": "f", "type": "float"},
        {"name": "maybe", "type": ["null", "double"]},
        {"name": "s", "type": "string"},
        {"name": "ds", "type": {"type": "array", "items": "double"}},
    ],
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS_RANGE = (-62_000_000_000_000, 253_000_000_000_000)  # inside datetime's years 1-9999

texts = st.text(st.characters(codec="utf-8"), max_size=12)
longs = st.integers(-(2**63), 2**63 - 1)
inner = st.fixed_dictionaries({"q": st.booleans()})
all_types = st.fixed_dictionaries(
    {
        "n": st.none(),
        "b": st.booleans(),
        "i": st.integers(-(2**31), 2**31 - 1),
        "l": longs,
        "s": texts,
        "raw": st.binary(max_size=8),
        "e": st.sampled_from(["A", "B_2"]),
        "fx": st.binary(min_size=3, max_size=3),
        "items": st.lists(st.none() | st.integers(-(2**31), 2**31 - 1) | texts, max_size=4),
        "m": st.dictionaries(texts, inner, max_size=3),
        "again": inner,
        "ms": st.integers(*_MS_RANGE).map(lambda ms: _EPOCH + dt.timedelta(milliseconds=ms)),
        "us": st.integers(*_MS_RANGE).map(lambda ms: _EPOCH + dt.timedelta(microseconds=ms)),
        "nested": st.lists(st.dictionaries(texts, longs, max_size=2), max_size=2),
        "empty": st.just({}),
    }
)
floats = st.fixed_dictionaries(
    {
        "d": st.floats(),
        "f": st.floats(width=32),
        "maybe": st.none() | st.floats(allow_nan=False),
        "s": st.sampled_from(["", "nullable", "x"]),
        "ds": st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=3),
    }
)


def block(schema: dict, datums: list) -> bytes:
    raw = io.BytesIO()
    for datum in datums:
        schemaless_writer(raw, schema, datum)
    return raw.getvalue()


def pure(schema: dict, raw: bytes, count: int) -> list[bytes] | None:
    """What the pure path makes of the block: the datums' texts, or None (an error)."""
    stream = io.BytesIO(raw)
    try:
        values = [schemaless_reader(stream, schema, None) for _ in range(count)]
    except Exception:
        return None
    if stream.tell() != len(raw):
        return None
    return datums_json(values, True)


def compiled(schema: dict, raw: bytes, count: int) -> list[bytes] | None:
    got = render_block(program(schema), raw, count)
    if got is None:
        return None
    text, ends = got
    return [text[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]


def _long(value: int) -> bytes:
    """An Avro long (zig-zag varint)."""
    raw = io.BytesIO()
    schemaless_writer(raw, "long", value)
    return raw.getvalue()


def needs_stdlib(values: list, texts: list[bytes]) -> bool:
    """Whether `render` writes one of these datums with the stdlib encoder."""
    return any(
        b"null" in text and _holds_float(value) for value, text in zip(values, texts, strict=True)
    )


@given(st.lists(all_types, min_size=1, max_size=5))
def test_all_types_render_alike(datums):
    schema = parse_schema(ALL_TYPES)
    raw = block(schema, datums)
    expected = pure(schema, raw, len(datums))
    assert compiled(schema, raw, len(datums)) == expected


@given(st.lists(floats, min_size=1, max_size=5))
def test_floats_render_alike_or_go_to_the_pure_path(datums):
    schema = parse_schema(FLOATS)
    raw = block(schema, datums)
    expected = pure(schema, raw, len(datums))
    got = compiled(schema, raw, len(datums))
    values = [schemaless_reader(io.BytesIO(block(schema, [d])), schema, None) for d in datums]
    numbers = [x for d in datums for x in (d["d"], d["f"], d["maybe"], *d["ds"]) if x is not None]
    left = needs_stdlib(values, expected) or not all(map(math.isfinite, numbers))
    assert got == (None if left else expected)


def test_float_texts_are_msgspecs():
    schema = parse_schema(FLOATS)
    datums = [
        {"d": d, "f": 0.1, "maybe": 1e16, "s": "", "ds": [1e-5, -0.0, 5e-324]}
        for d in (1e16, 1e-7, 0.1, 1.2345678901234568e17, 100.0)
    ]
    raw = block(schema, datums)
    got = compiled(schema, raw, len(datums))
    assert got == pure(schema, raw, len(datums))
    assert got[0] == (
        b'{"d":1e16,"f":0.10000000149011612,"maybe":1e16,"s":"","ds":[0.00001,-0.0,5e-324]}'
    )


@given(st.data())
def test_damaged_blocks_render_alike_or_go_to_the_pure_path(data):
    schema = parse_schema(ALL_TYPES)
    datums = data.draw(st.lists(all_types, min_size=1, max_size=3))
    raw = bytearray(block(schema, datums))
    at = data.draw(st.integers(0, len(raw) - 1))
    how = data.draw(st.sampled_from(["flip", "cut", "byte"]))
    if how == "cut":
        del raw[at:]
    else:
        raw[at] = raw[at] ^ 0xFF if how == "flip" else data.draw(st.integers(0, 255))
    count = data.draw(st.sampled_from([len(datums), len(datums) + 1, max(len(datums) - 1, 1)]))
    expected = pure(schema, bytes(raw), count)
    got = compiled(schema, bytes(raw), count)
    assert got is None or got == expected
    if expected is None:
        assert got is None


def test_what_it_leaves_to_the_pure_path():
    schema = parse_schema(
        {
            "type": "record",
            "name": "M",
            "fields": [{"name": "m", "type": {"type": "map", "values": "int"}}],
        }
    )
    prog = program(schema)
    twice = b"\x04" + b"\x02a\x02" + b"\x02a\x04" + b"\x00"  # {"a": 1, "a": 2}
    assert pure(schema, twice, 1) == [b'{"m":{"a":2}}']  # fastavro's dict keeps one
    assert render_block(prog, twice, 1) is None
    for keys in (MAX_MAP_KEYS, MAX_MAP_KEYS + 1):  # beyond, duplicates are not looked for
        entries = b"".join(b"\x04" + f"{k:02}".encode() + b"\x02" for k in range(keys))
        raw = _long(keys) + entries + b"\x00"
        assert pure(schema, raw, 1) is not None
        assert compiled(schema, raw, 1) == (pure(schema, raw, 1) if keys == MAX_MAP_KEYS else None)
    text = parse_schema(
        {"type": "record", "name": "T", "fields": [{"name": "s", "type": "string"}]}
    )
    for bad in (b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xe2\x82"):  # not UTF-8
        raw = bytes([2 * len(bad)]) + bad
        assert pure(text, raw, 1) is None
        assert render_block(program(text), raw, 1) is None
    stamp = parse_schema({"type": "long", "logicalType": "timestamp-millis"})
    assert render_block(program(stamp), b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", 1) is None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2},
        {"type": "string", "logicalType": "uuid"},
        {"type": "int", "logicalType": "date"},
        {"type": "int", "logicalType": "time-millis"},
        {"type": "long", "logicalType": "local-timestamp-millis"},
        {
            "type": "record",
            "name": "Node",
            "fields": [{"name": "next", "type": ["null", "Node"]}],
        },
    ],
)
def test_schemas_only_the_pure_path_takes(schema):
    assert program(parse_schema(schema)) is None


def _decoded(data: bytes, walk: str):
    with forced(walk):
        got = run(data)
    return got.records, got.packets, got.quarantined, got.accounting


def test_packets_either_walk_takes_decode_alike():
    """NaN (left to the pure path), a clean float packet, an unsupported schema, and a
    damaged block: the same rows, packets rows and quarantined items either way."""
    nan = {"d": float("nan"), "f": 1.5, "maybe": None, "s": "", "ds": []}
    clean = {"d": 2.5, "f": 1.5, "maybe": 3.0, "s": "x", "ds": [1.0]}
    uuid_schema = {
        "type": "record",
        "name": "U",
        "fields": [{"name": "u", "type": {"type": "string", "logicalType": "uuid"}}],
    }
    damaged = bytearray(enc.container(FLOATS, [clean] * 3))
    damaged[-1] ^= 0xFF  # the sync marker after the block
    frames = [
        enc.frame(enc.Packet(enc.container(FLOATS, [clean, nan, clean], codec="deflate"))),
        enc.frame(enc.Packet(enc.container(FLOATS, [clean] * 4, records_per_block=2))),
        enc.frame(
            enc.Packet(enc.container(uuid_schema, [{"u": "12345678-1234-5678-1234-567812345678"}]))
        ),
        enc.frame(enc.Packet(bytes(damaged))),
        enc.frame(enc.Packet(enc.container(ALL_TYPES, [], codec="snappy"))),
    ]
    data = b"".join(frames)
    assert _decoded(data, "compiled") == _decoded(data, "pure")
    records, packets, quarantined, _ = _decoded(data, "compiled")
    assert [p["record_count"] for p in packets] == [3, 4, 1, 0, 0]
    assert len(quarantined) == 1
    assert struct.unpack(">I", frames[0][:4])[0] == packets[0]["packet_length"]
    assert records[0]["record_json"] == '{"d":2.5,"f":1.5,"maybe":3.0,"s":"x","ds":[1.0]}'


def test_auto_takes_the_compiled_walk_for_a_large_file_from_its_start(tmp_path, auto_walk):
    """A file of `pure_below` bytes or more (fstat) is compiled from its first packet; a
    small stream, not before the process has read that much."""
    small = io.BytesIO(b"x" * 100)
    assert file_size(small) == 0
    assert not decoder._compiled(decoder.StreamWindow(small), 0)
    path = tmp_path / "dump.cernan"
    path.write_bytes(b"x" * decoder.WALK.pure_below)
    with path.open("rb") as stream:
        assert file_size(stream) == decoder.WALK.pure_below
        assert decoder._compiled(decoder.StreamWindow(stream), file_size(stream))

"""Round trips through the Hercules encoder, property-based over random nested events, and
the decoder's limits (depth, tag count, hostile lengths, tag names, duplicate keys)."""

from __future__ import annotations

import json
import random
import struct
import tracemalloc
import uuid

import pytest
from budget import examples
from decoding import ChunkedReads, peak_bytes
from hercules_helpers import decode, decode_value, expected_plain, expected_typed, typed
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wirecodecs.errors import DecodeError
from wirecodecs.hercules import decoder
from wirecodecs.hercules.encoder import Event, Value, encode_batch, encode_event, lz4_body
from wirecodecs.hercules.event import TYPE_CODES
from wirecodecs.hercules.options import HerculesOptions

SCALARS = {
    "Byte": st.integers(0, 255),
    "Short": st.integers(-(2**15), 2**15 - 1),
    "Integer": st.integers(-(2**31), 2**31 - 1),
    "Long": st.integers(-(2**63), 2**63 - 1),
    "Flag": st.booleans(),
    "Float": st.one_of(st.floats(width=32), st.integers(0, 2**32 - 1)),  # value or raw bits
    "Double": st.one_of(st.floats(), st.integers(0, 2**64 - 1)),
    "String": st.one_of(st.text(max_size=12), st.binary(max_size=12)),  # bytes: maybe not UTF-8
    "UUID": st.uuids(),
    "Null": st.none(),
}
KEYS = st.one_of(
    st.text(max_size=8).filter(lambda key: len(key.encode()) <= 255),
    st.sampled_from(["", "a/b", "x[0]", "50%", "dup", "dup"]),
    st.binary(max_size=6),
)
SCALAR_VALUES = st.sampled_from(sorted(SCALARS)).flatmap(
    lambda kind: SCALARS[kind].map(lambda value: Value(kind, value))
)
SCALAR_VECTORS = st.sampled_from(sorted(SCALARS)).flatmap(
    lambda kind: st.lists(SCALARS[kind], max_size=4).map(lambda items: Value("Vector", items, kind))
)


def _nested(tags):
    containers = tags.map(lambda inner: Value("Container", inner))
    container_vectors = st.lists(tags, max_size=3).map(
        lambda items: Value("Vector", items, "Container")
    )
    vector_vectors = st.lists(st.one_of(SCALAR_VECTORS, container_vectors), max_size=3).map(
        lambda items: Value("Vector", items, "Vector")
    )
    values = st.one_of(SCALAR_VALUES, SCALAR_VECTORS, containers, container_vectors, vector_vectors)
    return st.lists(st.tuples(KEYS, values), max_size=5)


TAGS = st.recursive(st.lists(st.tuples(KEYS, SCALAR_VALUES), max_size=5), _nested, max_leaves=25)
EVENTS = st.builds(
    Event,
    timestamp=st.integers(-(2**63), 2**63 - 1),
    uuid=st.uuids(),
    tags=TAGS,
    version=st.integers(0, 255),
)


def check_row(row: dict, event: Event, data: bytes) -> None:
    assert (row["version"], row["timestamp"]) == (event.version, event.timestamp)
    assert row["uuid"] == str(event.uuid)
    assert (row["size"], row["tag_count"]) == (len(data), len(event.tags))
    assert typed(row["tags"]) == expected_typed(event.tags)
    assert json.loads(row["tags_json"]) == expected_plain(event.tags)


# Found once by this test: a key of one lead byte (0xC2) whose continuation would be the
# next tag's type code; the compiled UTF-8 check read that byte and let the key through.
KEY_CUT_MID_CHARACTER = Event(
    0,
    uuid.UUID(int=1),
    [("", Value("Container", [(b"\xc2", Value("Vector", [], element_type="Container"))]))],
)


@settings(max_examples=examples(3), suppress_health_check=[HealthCheck.too_slow])
@given(EVENTS)
@example(KEY_CUT_MID_CHARACTER)
def test_any_event_round_trips(event):
    data = encode_event(event)
    (row,) = decode_value(data, HerculesOptions())
    check_row(row, event, data)


@settings(max_examples=examples(0.6), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EVENTS, max_size=6), st.integers(1, 64), st.booleans())
def test_any_batch_round_trips_through_short_reads(events, step, compress):
    encoded = [encode_event(event) for event in events]
    body = encode_batch(encoded)
    source = "b.bin.lz4" if compress else "b.bin"
    got = decode(ChunkedReads(lz4_body(body) if compress else body, [step]), source=source)
    assert got.quarantined == [] and got.accounting.balanced
    assert len(got.rows) == len(events)
    offset = 4
    for row, event, data in zip(got.rows, events, encoded, strict=True):
        check_row(row, event, data)
        assert row["byte_offset"] == offset
        offset += len(data)


def test_events_longer_than_the_lookahead_are_read_whole(monkeypatch):
    monkeypatch.setattr(decoder, "_LOOKAHEAD", 16)
    event = Event(1, uuid.UUID(int=7), [("blob", Value("String", "x" * 5000))] * 3)
    data = encode_batch([encode_event(event)] * 4)
    got = decode(ChunkedReads(data, [100]))
    assert len(got.rows) == 4 and got.accounting.bytes_decoded == len(data)


def test_events_framing_reads_events_without_a_count():
    events = [Event(i, uuid.UUID(int=i), [("n", Value("Integer", i))]) for i in range(5)]
    got = decode(b"".join(map(encode_event, events)), framing="events")
    assert [row["timestamp"] for row in got.rows] == list(range(5))


# ---- limits -----------------------------------------------------------------------------

HEAD = struct.pack(">Bq16s", 1, 0, bytes(16))


def nested_containers(levels: int) -> bytes:
    """An event whose payload holds `levels` containers, each inside the previous one."""
    return HEAD + b"\x00\x01" + b"\x01a\x01\x00\x01" * (levels - 1) + b"\x01a\x01\x00\x00"


def nested_vectors(levels: int) -> bytes:
    """An event with one tag: a vector of vectors `levels` deep around an empty one."""
    return HEAD + b"\x00\x01\x01v\x80" + b"\x80\x00\x00\x00\x01" * levels + b"\x02\x00\x00\x00\x00"


@pytest.mark.parametrize("build", [nested_containers, nested_vectors])
def test_hostile_depth_is_an_error_not_a_crash(build):
    for levels in (10_000, 1_000_000):
        with pytest.raises(DecodeError) as err:
            decode_value(build(levels), HerculesOptions())
        assert err.value.kind == "too_deep"


def test_max_depth_is_the_nesting_allowed():
    (row,) = decode_value(nested_containers(99), HerculesOptions(max_depth=100))
    assert len(row["tags"]) == 99 and row["tags"][-1]["path"] == "/".join(["a"] * 99)
    with pytest.raises(DecodeError, match="max_depth 100"):
        decode_value(nested_containers(100), HerculesOptions(max_depth=100))
    (row,) = decode_value(nested_containers(150), HerculesOptions(max_depth=200))
    assert json.loads(row["tags_json"])["a"]["a"]["a"] is not None
    with pytest.raises(ValueError, match="at most 200"):
        decode_value(nested_containers(1), HerculesOptions(max_depth=201))


def test_a_hostile_depth_inside_a_batch_is_quarantined_and_the_rest_kept():
    good = encode_event(Event(5, uuid.UUID(int=5), [("ok", Value("Flag", True))]))
    deep = nested_containers(200)  # each 0x01 in it is a resync candidate: see the mutation test
    got = decode(encode_batch([good, deep, good]))
    assert len(got.rows) == 2
    (item,) = got.quarantined
    assert (item.byte_offset, item.length, item.kind) == (4 + len(good), len(deep), "too_deep")


def test_the_65535_tag_limit():
    tags = [(f"t{i}", Value("Null")) for i in range(65535)]
    (row,) = decode_value(encode_event(Event(0, uuid.UUID(int=1), tags)), HerculesOptions())
    assert row["tag_count"] == len(row["tags"]) == 65535
    assert row["tags"][-1]["path"] == "t65534"
    with pytest.raises(ValueError, match="at most 65535"):
        encode_event(Event(0, uuid.UUID(int=1), [*tags, ("one-more", Value("Null"))]))


@pytest.mark.parametrize("kind", sorted(TYPE_CODES))
def test_a_vector_length_of_2_31_minus_1_allocates_nothing(kind):
    data = HEAD + b"\x00\x01\x01v\x80" + bytes([TYPE_CODES[kind]]) + b"\x7f\xff\xff\xff" + bytes(8)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError) as err:
            decode_value(data, HerculesOptions())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200_000
    assert err.value.kind == "length_out_of_range"


def test_the_null_vectors_of_an_event_together_hold_at_most_max_event_bytes_elements():
    """A Null vector's elements take no bytes: each vector alone within the event's size
    was not enough (many of them made a million-element list each)."""

    def nulls(*lengths: int) -> bytes:
        vectors = [(f"n{i}", Value("Vector", [None] * n, "Null")) for i, n in enumerate(lengths)]
        return encode_event(Event(0, uuid.UUID(int=1), vectors))

    (row,) = decode_value(nulls(400, 400), HerculesOptions(max_event_bytes=1000))
    assert [tag["count"] for tag in row["tags"]] == [400, 400]
    with pytest.raises(DecodeError) as err:
        decode_value(nulls(600, 600), HerculesOptions(max_event_bytes=1000))
    assert err.value.kind == "length_out_of_range"


def test_paths_are_bounded_by_the_event_size():
    """Paths repeat their ancestors' keys: 20 levels of 255-byte keys over 30 000 Flags
    (a 35 KB event) would make 150 MB of paths; an event may make 64 path characters per
    byte of max_event_bytes."""

    def flags_deep_down(count: int) -> bytes:
        value = Value("Vector", [True] * count, "Flag")
        for _ in range(20):
            value = Value("Container", [("k" * 255, value)])
        return encode_event(Event(0, uuid.UUID(int=1), [("k" * 255, value)]))

    data = flags_deep_down(30_000)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError) as err:
            decode_value(data, HerculesOptions(max_event_bytes=64 << 10))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.value.kind == "length_out_of_range" and "paths" in err.value.detail
    assert peak < 8 << 20
    (row,) = decode_value(flags_deep_down(500), HerculesOptions(max_event_bytes=64 << 10))
    assert row["tags"][-1]["path"] == "/".join(["k" * 255] * 21) + "[499]"


def test_an_lz4_body_allocates_for_its_size_not_the_bound():
    """python-lz4 allocates the room it is given: 255x a 100 KB body was 25 MB."""
    rng = random.Random(3)
    events = [
        encode_event(
            Event(i, uuid.UUID(int=i), [("hex", Value("String", rng.randbytes(500).hex()))])
        )
        for i in range(200)
    ]
    body = lz4_body(encode_batch(events))
    peak, got = peak_bytes(decode, body, source="b.bin.lz4")
    assert len(got.rows) == 200 and got.accounting.bytes_decoded == len(body)
    assert peak < 8 << 20


def test_negative_lengths_and_bad_type_codes_are_typed_errors():
    cases = {
        HEAD + b"\x00\x01\x01v\x80\x04\xff\xff\xff\xff": "negative_length",
        HEAD + b"\x00\x01\x01s\x09\x80\x00\x00\x00": "negative_length",
        HEAD + b"\x00\x01\x01v\x80\x0c\x00\x00\x00\x00": "unknown_type",
        HEAD + b"\x00\x01\x01v\x00": "invalid_type",
        HEAD + b"\x00\x01\x01v\xff": "unknown_type",
        HEAD + b"\x00\x02\x01v\x0b": "truncated",
        HEAD + b"\x00\x00\x00": "trailing_bytes",
    }
    for data, kind in cases.items():
        with pytest.raises(DecodeError) as err:
            decode_value(data, HerculesOptions())
        assert err.value.kind == kind, data.hex()


def test_tag_names_that_break_the_rules_are_kept_and_escaped_in_paths():
    tags = [
        ("", Value("Integer", 1)),
        ("a/b", Value("Container", [("c]", Value("Integer", 2))])),
        ("x[0]", Value("Vector", [3], "Integer")),
        ("50%", Value("Null")),
        (b"\xffbad", Value("Flag", True)),
        ("k" * 255, Value("Short", 4)),
    ]
    (row,) = decode_value(encode_event(Event(0, uuid.UUID(int=2), tags)), HerculesOptions())
    assert [(t["path"], t["key"]) for t in row["tags"]] == [
        ("", ""),
        ("a%2Fb", "a/b"),
        ("a%2Fb/c%5D", "c]"),
        ("x%5B0%5D", "x[0]"),
        ("x%5B0%5D[0]", None),
        ("50%25", "50%"),
        ("\ufffdbad", "\ufffdbad"),
        ("k" * 255, "k" * 255),
    ]
    assert row["tags"][6]["key_raw"] == b"\xffbad"


def test_duplicate_keys_are_all_kept_and_the_plain_view_keeps_the_last():
    tags = [
        ("dup", Value("Integer", 1)),
        ("other", Value("String", "x")),
        ("dup", Value("String", "2")),
    ]
    (row,) = decode_value(encode_event(Event(0, uuid.UUID(int=3), tags)), HerculesOptions())
    assert [(t["path"], t["type"]) for t in row["tags"]] == [
        ("dup", "Integer"),
        ("other", "String"),
        ("dup", "String"),
    ]
    assert json.loads(row["tags_json"]) == {"dup": "2", "other": "x"}


def test_byte_is_unsigned_and_float_bits_are_exact():
    signalling_nan = 0x7F800001
    tags = [
        ("b", Value("Byte", 255)),
        ("f", Value("Float", signalling_nan)),
        ("d", Value("Double", -0.0)),
    ]
    (row,) = decode_value(encode_event(Event(0, uuid.UUID(int=4), tags)), HerculesOptions())
    byte, flt, dbl = row["tags"]
    assert byte["int_value"] == 255
    assert flt["float_bits"] == signalling_nan
    assert dbl["float_bits"] == -(2**63) and str(dbl["float_value"]) == "-0.0"

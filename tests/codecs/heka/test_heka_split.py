"""Heka's split finder (`wirecodecs.heka.splitting`): the points it gives are where the
decoder's own frame test passes, and decoding the ranges between them reads as the whole
stream whenever the ranges fit (every range but the last ends with `eof`); a false point
(a frame inside a payload) makes the range before it end otherwise. The truth is the
whole stream's decode and the vectors' sidecars (record offsets)."""

from __future__ import annotations

import gzip

import pytest
from budget import examples
from heka_support import DATA, VECTORS, sidecar
from hypothesis import given, settings
from hypothesis import strategies as st
from ranges import find, fits, in_ranges, whole

from wirecodecs.heka import encoder as enc
from wirecodecs.registry import SplitPoint

PLAIN = [name for name in VECTORS if name.endswith(".heka")]


def message_frame(payload: bytes, number: int = 1) -> bytes:
    message = enc.Message(uuid=b"u" * 16, timestamp=number, payload=payload)
    return enc.frame(enc.encode_message(message))


@pytest.mark.parametrize("name", PLAIN)
def test_points_in_the_vectors_are_record_starts_or_caught(name):
    data = (DATA / name).read_bytes()
    starts = {record["offset"] for record in sidecar(name)["records"]}
    for step in (61, 257, 1009):
        points = find("heka", data, list(range(step, len(data), step))).points
        outcome, accountings = in_ranges(data, "heka", points)
        assert fits(accountings) == all(point.offset in starts for point in points), step
        if fits(accountings):
            assert outcome == whole(data, "heka")


def test_a_large_stream_is_cut_near_each_boundary():
    data = (DATA / "many_records.heka").read_bytes()
    starts = sorted(record["offset"] for record in sidecar("many_records.heka")["records"])
    boundaries = [len(data) * k // 5 for k in range(1, 5)]
    points = [point.offset for point in find("heka", data, boundaries).points]
    assert points == [min(start for start in starts if start >= b) for b in boundaries]


def test_a_frame_inside_a_payload_is_caught_by_the_range_before_it():
    inner = message_frame(b"inner", 2)
    outer = message_frame(b"pad" + inner + b"pad", 1)
    data = outer + message_frame(b"after", 3)
    fake = outer.index(inner)
    points = find("heka", data, [fake - 2]).points
    assert [point.offset for point in points] == [fake]  # the finder cannot tell
    _, accountings = in_ranges(data, "heka", points)
    assert accountings[0].stop_reason == "truncated_tail"
    assert not fits(accountings)


def test_a_point_inside_a_header_running_over_it_is_refused():
    """Garbage, then a frame whose header holds a 0x1E (message length 3845: varint
    85 1E) that starts a complete fake frame: cut there, the range before would end with
    `eof` (the cut header is skipped after garbage), yet read otherwise than the file."""
    fake_header = b"\x08\x0a\x22\x1b" + b"s" * 27  # message_length 10, a 27-byte signer
    body = fake_header + b"\x1f" + b"q" * 10
    body += b"a" * (0x1E * 128 + 5 - len(body))
    outer = enc.frame(body)
    assert outer[:6] == b"\x1e\x03\x08\x85\x1e\x1f"
    after = message_frame(b"after")
    data = b"zz" + outer + after

    cut = [SplitPoint(2 + 4)]
    outcome, accountings = in_ranges(data, "heka", cut)
    assert fits(accountings) and outcome != whole(data, "heka")  # why the rule exists

    points = find("heka", data, [3]).points
    assert [point.offset for point in points] == [2 + len(outer)]


def test_whole_file_compression_is_never_cut():
    data = gzip.compress((DATA / "many_records.heka").read_bytes())
    assert find("heka", data, [len(data) // 2]).points == []


def test_no_point_where_no_frame_starts_before_the_next_boundary():
    frame = message_frame(b"x")
    data = frame + b"garbage " * 40 + frame
    points = find("heka", data, [len(frame) + 10, len(frame) + 100]).points
    assert [point.offset for point in points] == [len(data) - len(frame)]


ALPHABET = b"\x1e\x1f\x00\x02\x08\x0a\x85ab"  # separators, header bytes, text
texts = st.binary(max_size=40).map(lambda raw: bytes(ALPHABET[c % len(ALPHABET)] for c in raw))
pieces = st.one_of(
    st.tuples(st.just("frame"), texts),
    st.tuples(st.just("nested"), texts),  # a frame whose payload is a whole frame
    st.tuples(st.just("garbage"), texts.filter(bool)),
)


def build(items, cut: int) -> bytes:
    """Frames and garbage as listed, then the first `cut` bytes of one more frame."""
    parts = []
    for number, (kind, content) in enumerate(items, 1):
        if kind == "frame":
            parts.append(message_frame(content, number))
        elif kind == "nested":
            parts.append(message_frame(message_frame(content, number), number))
        else:
            parts.append(content)
    return b"".join(parts) + message_frame(b"last")[:cut]


@given(
    items=st.lists(pieces, min_size=1, max_size=25),
    cut=st.integers(0, 12),
    fractions=st.lists(st.floats(0.01, 0.99), min_size=1, max_size=5),
)
@settings(max_examples=examples(1.5))
def test_ranges_that_fit_read_as_the_whole_stream(items, cut, fractions):
    data = build(items, cut)
    boundaries = sorted({int(len(data) * f) for f in fractions} - {0})
    points = find("heka", data, boundaries).points
    outcome, accountings = in_ranges(data, "heka", points)
    entire = whole(data, "heka")
    if fits(accountings):
        assert outcome == entire
    frames = {row["byte_offset"] for row in entire.tables.get(None, [])}
    frames |= {quarantined[0] for quarantined in entire.quarantine}
    if all(point.offset in frames for point in points):  # true points never fail a range
        assert all(accounting.stop_reason == "eof" for accounting in accountings[:-1])

"""Damaged gate batches: truncated at every byte, a byte flipped at every position,
garbage inserted at every event boundary, all read through short reads. The decoder never
raises, accounts for every byte, and keeps every event the damage did not touch."""

from __future__ import annotations

import random
import struct
import sys

import pytest
from budget import examples, sweep
from decoding import ChunkedReads
from hercules_helpers import decode, decode_value
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecodecs.errors import DecodeError
from wirecodecs.hercules import decoder
from wirecodecs.hercules.encoder import encode_batch, encode_event
from wirecodecs.hercules.event import EventReader
from wirecodecs.hercules.options import HerculesOptions
from wirecodecs.hercules.samples import log_event

TICK0 = 17_000_000_000_000_000


@pytest.fixture(scope="module")
def batch() -> tuple[bytes, list[bytes], list[int]]:
    """A gate batch of 8 realistic log events, the events, and their offsets."""
    rng = random.Random(5)
    events = [encode_event(log_event(rng, TICK0 + i * 10_000)) for i in range(8)]
    offsets, at = [], 4
    for event in events:
        offsets.append(at)
        at += len(event)
    return encode_batch(events), events, offsets


def checked(data: bytes, source: str = "mem.bin", **options):
    got = decode(ChunkedReads(data, [997]), source=source, **options)
    acc = got.accounting
    assert acc.balanced and acc.bytes_total == len(data)
    assert acc.records_good == len(got.rows) == acc.frames_good
    assert acc.frames_bad == len(got.quarantined)
    return got


def kept(got) -> set[int]:
    """Offsets of decoded rows."""
    return {row["byte_offset"] for row in got.rows}


def boundaries(offsets: list[int]) -> set[int]:
    """The count and the bytes on either side of each event boundary: what a sweep over
    the batch always takes (tests/budget.py)."""
    return {*range(5), *(at + step for at in offsets for step in (-1, 0, 1))}


def test_truncated_at_every_byte(batch):
    data, events, offsets = batch
    for cut in sweep(range(len(data)), keep=boundaries(offsets)):
        got = checked(data[:cut])
        whole = [at for at, event in zip(offsets, events, strict=True) if at + len(event) <= cut]
        assert [row["byte_offset"] for row in got.rows] == whole, cut
        assert got.quarantined == []
        assert got.accounting.bytes_truncated_tail == cut - (
            whole[-1] + len(events[len(whole) - 1]) if whole else min(cut, 4) * (cut >= 4)
        )


def test_flipped_byte_at_every_position(batch, monkeypatch):
    """Only the hit event may be lost or quarantined. The format has no framing, so one
    case stays out of reach: a damaged length that makes its event swallow the next ones
    and end exactly on a 0x01 byte that reads as an event; this batch has one such byte
    (of 5135), and the test holds the decoder to that."""
    monkeypatch.setattr(decoder, "_LOOKAHEAD", 256)  # chunk boundaries inside events too
    data, _, offsets = batch
    misread = []
    for pos in sweep(range(4, len(data)), keep=boundaries(offsets)):
        mutated = bytearray(data)
        mutated[pos] ^= 0xFF
        got = checked(bytes(mutated))
        hit = max(i for i, at in enumerate(offsets) if at <= pos)
        others = {at for i, at in enumerate(offsets) if i != hit}
        rows = kept(got)
        starts = {item.byte_offset for item in got.quarantined}
        if not others <= rows or rows - set(offsets) or starts - {offsets[hit]}:
            misread.append(pos)
    assert len(misread) <= 1, misread


def test_flipped_count(batch):
    data, events, _ = batch
    for pos in range(4):
        mutated = bytearray(data)
        mutated[pos] ^= 0xFF
        got = checked(bytes(mutated))
        assert got.rows == [] or len(got.rows) == len(events)
        assert {item.kind for item in got.quarantined} <= {"negative_count", "trailing_bytes"}


@pytest.mark.parametrize("garbage", [b"\x00", b"\xff" * 40, b"\x01" * 30, bytes(range(256))])
def test_garbage_at_every_event_boundary_is_quarantined_alone(batch, garbage):
    data, events, offsets = batch
    for index, at in enumerate(offsets[1:], start=1):
        got = checked(data[:at] + garbage + data[at:])
        assert len(got.rows) == len(events), index
        (item,) = got.quarantined
        assert (item.byte_offset, item.length) == (at, len(garbage))
        assert got.accounting.records_bad == 0


def test_garbage_instead_of_the_last_event_is_quarantined(batch):
    data, events, offsets = batch
    got = checked(data[: offsets[-1]] + b"\xff" * len(events[-1]))
    assert len(got.rows) == len(events) - 1
    (item,) = got.quarantined
    assert (item.byte_offset, item.kind) == (offsets[-1], "invalid_event")
    assert got.accounting.records_bad == 1


def test_trailing_bytes_after_the_declared_events(batch):
    data, events, _ = batch
    got = checked(data + b"\x00\x00\x00")
    assert len(got.rows) == len(events)
    (item,) = got.quarantined
    assert (item.byte_offset, item.length, item.kind) == (len(data), 3, "trailing_bytes")


@settings(max_examples=examples(3))
@given(
    st.binary(max_size=600),
    st.sampled_from(["batch", "events", "stream_read"]),
    st.sampled_from(["b.bin", "b.bin.lz4"]),
)
def test_arbitrary_bytes_never_raise_and_always_balance(data, framing, source):
    got = checked(data, framing=framing, source=source)
    assert got.accounting.stop_reason


@settings(max_examples=examples(3))
@given(st.binary(max_size=300))
def test_decode_value_raises_only_decode_errors(data):
    try:
        decode_value(data, HerculesOptions())
    except DecodeError as err:
        assert err.format == "hercules" and err.kind


def test_resync_passes_short_hostile_runs_and_gives_up_on_long_ones(batch):
    """0x01 repeated makes every offset a candidate that reads 100 levels deep: a short run
    is passed over and every event after it kept; a 100 KB run spends the file's resync
    budget, and the rest of the file is quarantined instead of parsed for seconds."""
    data, events, offsets = batch
    for run, kept_after in ((300, True), (100_000, False)):
        landed = data[: offsets[4]] + b"\x01" * run + data[offsets[4] :]
        got = checked(landed)
        assert len(got.rows) == (len(events) if kept_after else 4)
        (item,) = got.quarantined
        assert item.byte_offset == offsets[4]
        assert item.length == (run if kept_after else len(landed) - offsets[4])


# An event of vectors nested past max_depth (too_deep; cheap candidates), then filler that
# makes every 0x01 a costly resync candidate: nested containers (each candidate reads 100
# levels), 0x01 repeated (the same), or events whose Null vectors declare a million
# elements each before they fail.
_HEAD = struct.pack(">Bq16s", 1, 0, bytes(16))
_TOO_DEEP = _HEAD + b"\x00\x01\x01v\x80" + b"\x80\x00\x00\x00\x01" * 101
HOSTILE_FILLERS = {
    "nested_containers": b"\x01a\x01\x00\x01",
    "ones": b"\x01",
    "null_vectors": _HEAD + b"\x00\x02" + b"\x00\x80\x0b\x00\x0f\x00\x00" + b"\x00\x00",
}


def reader_work(data: bytes):
    """`checked(data)`, with the work the event reader did meanwhile, counted rather than
    timed: its calls (an event, a container level, a value; about 1 us each) and the
    vector elements it made (about 1 ns each, and a Null vector's take no bytes)."""
    codes = {
        method.__code__
        for method in (EventReader.event, EventReader._container, EventReader._value)
    }
    vector = EventReader._vector.__code__
    work = {"calls": 0, "elements": 0}

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            work["calls"] += 1
        elif event == "return" and frame.f_code is vector and arg is not None:
            work["elements"] += len(arg[1])

    sys.setprofile(profile)
    try:
        got = checked(data)
    finally:
        sys.setprofile(None)
    return got, work


@pytest.mark.parametrize("filler", sorted(HOSTILE_FILLERS))
def test_resync_work_grows_with_the_input_not_faster(batch, filler):
    """Resync may cost about 0.1 s per file plus 0.5 s per MB: at most 100 000 reader
    calls plus 0.5 per byte, and 10^8 vector elements plus 500 per byte (one candidate
    may overshoot). Before this bound, each of these inputs cost seconds per 50 KB."""
    data, _, offsets = batch
    for size in (50_000, 200_000):
        bad = _TOO_DEEP + HOSTILE_FILLERS[filler] * (size // len(HOSTILE_FILLERS[filler]))
        landed = data[: offsets[4]] + bad + data[offsets[4] :]
        got, work = reader_work(landed)
        assert work["calls"] <= 100_000 + 0.5 * len(landed) + 1_000, (size, work)
        assert work["elements"] <= 10**8 + 500 * len(landed) + 2**20, (size, work)
        assert len(got.rows) == 4
        (item,) = got.quarantined
        assert (item.byte_offset, item.kind) == (offsets[4], "too_deep")

"""Damaged gate batches: truncated at every byte, a byte flipped at every position,
garbage inserted at every event boundary, all read through short reads. The decoder never
raises, accounts for every byte, and keeps every event the damage did not touch."""

from __future__ import annotations

import random
import time

import pytest
from decoding import ChunkedReads
from hercules_helpers import decode
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecodecs.errors import DecodeError
from wirecodecs.hercules import decoder
from wirecodecs.hercules.decoder import decode_value
from wirecodecs.hercules.encoder import encode_batch, encode_event
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


def test_truncated_at_every_byte(batch):
    data, events, offsets = batch
    for cut in range(len(data)):
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
    for pos in range(4, len(data)):
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


@settings(max_examples=300)
@given(
    st.binary(max_size=600),
    st.sampled_from(["batch", "events", "stream_read"]),
    st.sampled_from(["b.bin", "b.bin.lz4"]),
)
def test_arbitrary_bytes_never_raise_and_always_balance(data, framing, source):
    got = checked(data, framing=framing, source=source)
    assert got.accounting.stop_reason


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_decode_value_raises_only_decode_errors(data):
    try:
        decode_value(data, {})
    except DecodeError as err:
        assert err.format == "hercules" and err.kind


def test_resync_work_is_bounded_on_hostile_bytes(batch):
    """0x01 repeated makes every offset a candidate that reads 100 levels deep: a 10 KB run
    is passed over and every event after it kept; a 100 KB run exhausts the file's resync
    budget, and the rest of the file is quarantined instead of parsed for minutes."""
    data, events, offsets = batch
    for run, kept_after in ((10_000, True), (100_000, False)):
        landed = data[: offsets[4]] + b"\x01" * run + data[offsets[4] :]
        started = time.perf_counter()
        got = checked(landed)
        assert time.perf_counter() - started < 30
        assert len(got.rows) == (len(events) if kept_after else 4)
        (item,) = got.quarantined
        assert item.byte_offset == offsets[4]
        assert item.length == (run if kept_after else len(landed) - offsets[4])

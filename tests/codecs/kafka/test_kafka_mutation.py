"""Damaged and adversarial input for the Kafka decoder.

Whatever the bytes, the decoder yields only row batches and quarantined items, never
raises, keeps its byte accounting balanced, finishes quickly, allocates no more than the
input justifies, and gives the same answer however the stream splits its reads.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from budget import examples
from decoding import ChunkedReads, check_items, check_quarantined, outcome, peak_bytes
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecodecs.kafka.schema import KAFKA_SCHEMA

KAFKA_DATA = Path(__file__).resolve().parents[2] / "data" / "kafka"
SEEDS = {
    name: (KAFKA_DATA / name).read_bytes()
    for name in (
        "mixed_magic.log",
        "v0_lz4.log",
        "v0_snappy.log",
        "v1_gzip.log",
        "v1_logappendtime_mixed.log",
        "v2_gzip.log",
        "v2_logappend_compacted.log",
        "v2_none.log",
        "v2_snappy.log",
        "v2_transactions.log",
        "v2_zstd.log",
    )
}
SEED_NAMES = sorted(SEEDS)
BATCH_ROWS = 50
FAST = settings(max_examples=examples(3))


def entry_starts(data: bytes) -> list[int]:
    """File positions of the log entries of a valid file (12 + size bytes each)."""
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    return starts


def checked(decode, data: bytes, stream=None):
    """Decode `data` and assert the invariants that hold for any input."""
    got = decode(io.BytesIO(data) if stream is None else stream, batch_rows=BATCH_ROWS)
    acc = got.accounting
    check_items(got, data, KAFKA_SCHEMA, BATCH_ROWS)
    assert acc.bytes_skipped == 0
    assert acc.records_good == sum(batch.num_rows for batch in got.batches)
    assert check_quarantined(got, data) <= len(data)
    assert acc.stop_reason in (
        "eof",
        "truncated_tail",
        "implausible_tail",
        "record_size_too_small",
        "length_out_of_range",
    )
    return got


seeds = st.sampled_from(SEED_NAMES)


@FAST
@given(seeds, st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1))
def test_byte_flips(decode, name, flips):
    data = bytearray(SEEDS[name])
    for at, xor in flips:
        data[at % len(data)] ^= xor
    checked(decode, bytes(data))


@FAST
@given(seeds, st.data())
def test_truncation_anywhere(decode, name, pick):
    data = SEEDS[name]
    cut = pick.draw(st.integers(0, len(data)))
    got = checked(decode, data[:cut])
    whole = max(s for s in [*entry_starts(data), len(data)] if s <= cut)
    acc = got.accounting
    assert (acc.bytes_decoded, acc.bytes_truncated_tail) == (whole, cut - whole)
    assert acc.frames_good == len([s for s in entry_starts(data) if s < whole])


@FAST
@given(seeds, seeds, st.data())
def test_splices_of_two_files(decode, first, second, pick):
    a, b = SEEDS[first], SEEDS[second]
    checked(decode, a[: pick.draw(st.integers(0, len(a)))] + b[pick.draw(st.integers(0, len(b))) :])


@FAST
@given(seeds, seeds, st.data())
def test_splices_at_entry_boundaries_decode_both_parts(decode, first, second, pick):
    a, b = SEEDS[first], SEEDS[second]
    head = a[: pick.draw(st.sampled_from([*entry_starts(a), len(a)]))]
    tail = b[pick.draw(st.sampled_from([*entry_starts(b), len(b)])) :]
    whole = checked(decode, head + tail).rows
    shifted = [{**row, "byte_offset": row["byte_offset"] + len(head)} for row in decode(tail).rows]
    assert whole == decode(head).rows + shifted


@FAST
@given(
    seeds,
    st.data(),
    st.one_of(st.just(0x7FFF0000), st.integers(-(2**31), 2**31 - 1)),
)
def test_absurd_entry_lengths(decode, name, pick, size):
    data = bytearray(SEEDS[name])
    at = pick.draw(st.sampled_from(entry_starts(bytes(data))))
    struct.pack_into(">i", data, at + 8, size)
    acc = checked(decode, bytes(data)).accounting
    assert acc.bytes_decoded >= at  # the entries before it are untouched
    if size < 14 or size > 128 << 20:  # cannot be walked past: the rest is quarantined
        assert (acc.bytes_decoded, acc.bytes_quarantined) == (at, len(data) - at)


@FAST
@given(seeds, st.data(), st.integers(1, 5000))
def test_zero_tails(decode, name, pick, zeros):
    data = SEEDS[name]
    cut = pick.draw(st.sampled_from([*entry_starts(data), len(data)]))
    got = checked(decode, data[:cut] + bytes(zeros))
    acc = got.accounting
    assert acc.bytes_decoded == cut
    if zeros >= 17:
        assert (acc.stop_reason, acc.bytes_quarantined) == ("record_size_too_small", zeros)
    elif zeros >= 8 and cut:  # offset 0 cannot follow the entries before it
        assert (acc.stop_reason, acc.bytes_quarantined) == ("implausible_tail", zeros)
    else:
        assert (acc.stop_reason, acc.bytes_truncated_tail) == ("truncated_tail", zeros)


@given(
    seeds,
    st.lists(st.integers(1, 700), min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), max_size=3),
    st.integers(0, 1 << 20),
)
def test_same_result_whatever_the_read_sizes(decode, name, sizes, flips, cut):
    data = bytearray(SEEDS[name])
    for at, xor in flips:
        data[at % len(data)] ^= xor
    data = bytes(data[: cut % (len(data) + 1)])
    assert outcome(checked(decode, data, ChunkedReads(data, sizes))) == outcome(
        checked(decode, data)
    )


def test_one_byte_reads(decode):
    data = SEEDS["mixed_magic.log"] + SEEDS["v2_transactions.log"][:-30]
    assert outcome(checked(decode, data, ChunkedReads(data, [1]))) == outcome(checked(decode, data))


# ---- memory and time on hostile sizes --------------------------------------------------------


def v2_entry(base_offset: int, size: int) -> bytes:
    """A v2 batch header claiming `size` bytes (the rest of its fields zero: a plausible
    empty batch)."""
    return struct.pack(">qiib", base_offset, size, -1, 2) + b"\x00" * 44


@pytest.mark.parametrize("size", [100 << 20, 0x7FFF0000])
def test_huge_declared_length_allocates_nothing_big(decode, size):
    first = SEEDS["v2_none.log"][: entry_starts(SEEDS["v2_none.log"])[1]]
    peak, got = peak_bytes(decode, first + v2_entry(13, size) + b"\x01" * 1_000_000)
    assert peak < 8 << 20
    assert got.accounting.balanced and got.accounting.frames_good == 1
    expected = "truncated_tail" if size <= 128 << 20 else "length_out_of_range"
    assert got.accounting.stop_reason == expected


def test_huge_records_count_is_refused_quickly(decode):
    data = bytearray(SEEDS["v2_none.log"][: entry_starts(SEEDS["v2_none.log"])[1]])
    struct.pack_into(">i", data, 57, 2**31 - 1)  # recordsCount
    got = decode(bytes(data))
    (q,) = got.quarantined
    assert (q.kind, got.accounting.records_bad) == ("record_count_mismatch", 2**31 - 1)


def test_decompression_bomb_in_a_batch_is_quarantined(decode):
    data = SEEDS["v2_gzip.log"]
    got = decode(data, max_decompressed_bytes=256)
    assert {q.kind for q in got.quarantined} == {"decompressed_too_large"}
    assert got.accounting.bytes_quarantined + got.accounting.bytes_decoded == len(data)


# ---- a cut entry is a tail only if it could start the next entry -----------------------------

TAIL_DAMAGE = {  # field position in a v2 batch -> bytes written there, words in the detail
    "offset back to 0": (0, struct.pack(">q", 0), "does not follow the previous entry"),
    "unknown magic": (16, b"\x07", "magic byte 7"),
    "undefined codec": (21, struct.pack(">h", 6), "codec 6"),
    "more records than offsets": (57, struct.pack(">i", 1000), "1000 records"),
}


@pytest.mark.parametrize("damage", [None, *TAIL_DAMAGE])
def test_a_cut_entry_that_breaks_kafka_rules_is_corruption_not_a_tail(decode, damage):
    data = SEEDS["v2_none.log"]
    starts = entry_starts(data)
    at, end = starts[len(starts) // 2], starts[len(starts) // 2 + 1]
    cut = bytearray(data[: (at + end) // 2])  # the middle entry loses its second half
    if damage is not None:
        field, value, _ = TAIL_DAMAGE[damage]
        cut[at + field : at + field + len(value)] = value
    got = checked(decode, bytes(cut))
    acc = got.accounting
    assert acc.bytes_decoded == at
    if damage is None:
        assert (acc.stop_reason, acc.bytes_truncated_tail, got.quarantined) == (
            "truncated_tail",
            len(cut) - at,
            [],
        )
    else:
        (q,) = got.quarantined
        assert (acc.stop_reason, q.kind, q.byte_offset, q.length) == (
            "implausible_tail",
            "implausible_tail",
            at,
            len(cut) - at,
        )
        assert TAIL_DAMAGE[damage][2] in q.detail

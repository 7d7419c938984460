"""Damaged dumps: cut, flipped and padded at every position class. The decoder never
raises, every byte is accounted for, and the packets the damage does not touch decode
exactly as before (the strict walk loses only what follows a broken length prefix)."""

from __future__ import annotations

import pytest
from budget import examples, sweep
from cernan_helpers import check_invariants, run, sidecar, vector
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.usefixtures("each_walk")  # each test on both walks (conftest.py)

# v2 null/deflate/snappy packets with KV, then v1 and v2 packets: every stage is present
BASE = vector("v2_basic")[:1472] + vector("mixed_v1_v2")
WHOLE = run(BASE)
FRAMES = [(p["byte_offset"], p["byte_offset"] + 4 + p["packet_length"]) for p in WHOLE.packets]
# what the cut and flip sweeps always take (tests/budget.py): each frame's 4-byte length
# prefix with the byte before it, and its last byte
BOUNDARIES = {at for start, end in FRAMES for at in (*range(start - 1, start + 5), end - 1)}


def frame_of(position: int) -> int:
    return next(i for i, (start, end) in enumerate(FRAMES) if start <= position < end)


def records_of(result, indexes) -> list:
    return [
        (row["packet_index"], row["record_index"], row["record_json"])
        for row in result.records
        if row["packet_index"] in indexes
    ]


def test_base_is_clean():
    assert WHOLE.accounting.frames_good == len(FRAMES) == 8
    assert WHOLE.accounting.bytes_decoded == len(BASE)


@pytest.mark.parametrize("cut", sweep(range(len(BASE)), keep=BOUNDARIES))
def test_cut_anywhere(cut):
    result = run(BASE[:cut])
    check_invariants(result, cut)
    whole_frames = [i for i, (_, end) in enumerate(FRAMES) if end <= cut]
    assert result.accounting.frames_good == len(whole_frames)
    assert records_of(result, whole_frames) == records_of(WHOLE, whole_frames)
    assert result.accounting.bytes_truncated_tail == cut - (
        FRAMES[len(whole_frames) - 1][1] if whole_frames else 0
    )


@pytest.mark.parametrize("position", sweep(range(0, len(BASE), 3), keep=BOUNDARIES))
def test_flip_anywhere(position):
    data = bytearray(BASE)
    data[position] ^= 0xFF
    result = run(bytes(data))
    check_invariants(result, len(BASE))
    hit = frame_of(position)
    before = list(range(hit))
    assert records_of(result, before) == records_of(WHOLE, before)
    if position - FRAMES[hit][0] >= 4:  # the length prefix is intact: the walk goes on
        after = list(range(hit + 1, len(FRAMES)))
        assert records_of(result, after) == records_of(WHOLE, after)
        assert len(result.packets) == len(FRAMES)


@pytest.mark.parametrize("frame", range(len(FRAMES) + 1))
@pytest.mark.parametrize("garbage", [b"\xff" * 13, b"\x00\x00\x10\x00" + b"junk" * 5])
def test_garbage_between_packets(frame, garbage):
    at = FRAMES[frame][0] if frame < len(FRAMES) else len(BASE)
    data = BASE[:at] + garbage + BASE[at:]
    strict = run(data)
    check_invariants(strict, len(data))
    before = list(range(frame))
    assert records_of(strict, before) == records_of(WHOLE, before)
    result = run(data, resync=True)
    check_invariants(result, len(data))
    if frame < len(FRAMES):  # every packet after the garbage is found again
        assert result.accounting.frames_good == len(FRAMES)
        assert result.accounting.bytes_skipped == len(garbage)
        assert [r["record_json"] for r in result.records] == [
            r["record_json"] for r in WHOLE.records
        ]
        assert [p["resynced"] for p in result.packets].count(True) == 1
    else:  # garbage at the end: a tail
        assert result.accounting.bytes_truncated_tail == len(garbage)


@settings(max_examples=examples(1.5))
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["flip", "insert", "delete"]),
            st.integers(0, len(BASE) - 1),
            st.binary(min_size=1, max_size=8),
        ),
        min_size=1,
        max_size=4,
    ),
    st.booleans(),
)
def test_random_damage_never_breaks_the_contract(edits, resync):
    data = bytearray(BASE)
    for op, position, blob in edits:
        position = min(position, len(data))
        if op == "flip":
            data[position : position + len(blob)] = bytes(
                a ^ b for a, b in zip(data[position : position + len(blob)], blob, strict=False)
            )
        elif op == "insert":
            data[position:position] = blob
        else:
            del data[position : position + len(blob)]
    result = run(bytes(data), resync=resync)
    check_invariants(result, len(data))


def test_corrupt_vectors_keep_good_packets_around_bad_ones():
    for case in ("corrupt_avro_block", "corrupt_avro_header", "corrupt_kv", "corrupt_bad_version"):
        truth = sidecar(case)
        result = run(vector(case))
        ok = [p["offset"] for p in truth["expected"]["packets"] if p["status"] == "ok"]
        assert ok[0] == 0 and ok[-1] == truth["expected"]["packets"][-1]["offset"]
        assert [p["byte_offset"] for p in result.packets if p["status"] == "ok"] == ok

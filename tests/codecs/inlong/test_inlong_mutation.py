"""Damaged and adversarial input for the InLong decoder.

Whatever the bytes, the decoder yields only row batches and quarantined messages, never
raises, keeps its accounting balanced, and a bad message never costs the good ones
around it (length-prefixed files); lengths are checked before anything is allocated.
"""

from __future__ import annotations

import io
import tracemalloc

import cramjam
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from budget import examples, sweep
from decoding import outcome
from hypothesis import given, settings
from hypothesis import strategies as st
from inlong_helpers import checked, vector

from wirecodecs import FileAccounting, get
from wirecodecs.inlong import encoder as enc
from wirecodecs.inlong.decoder import PREFIX
from wirecodecs.options import resolve
from wirecodecs.rows import FLUSH_BYTES

SEEDS = ["v0_handmade", "v1_snappy_multi", "v2_plain_multi", "v3_snappy", "v4_private_attrs_snappy",
         "v4_snappy_by_sdk", "v4_lf_separated", "ext_go_test_v4"]  # fmt: skip
FAST = settings(max_examples=examples(3))
GOOD = enc.encode_blocks(1, [("m=0&dt=1700000000000", [b"before"])], 1)
AFTER = enc.encode_v4([b"after"], "groupId=g&streamId=s", ext_field=4, data_time=1700000000)


def framed(middle: bytes) -> bytes:
    """A good message, `middle` as the second message, a good message."""
    return enc.length_prefixed([GOOD, middle, AFTER])


def bodies(got) -> list[bytes]:
    return [row["body"] for row in got.rows]


def frame_bytes(data: bytes) -> set[int]:
    """The front magic and the field after it, and the last four bytes (V4's inner magic,
    the back magic): what a sweep over a message always takes (tests/budget.py)."""
    return {*range(6), *range(len(data) - 4, len(data))}


@pytest.mark.parametrize("seed", SEEDS)
def test_every_byte_flipped(seed):
    """A flipped byte damages at most its own message: the neighbours always decode."""
    data = vector(seed)
    for at in sweep(range(len(data)), keep=frame_bytes(data)):
        damaged = bytearray(data)
        damaged[at] ^= 0xFF
        got = checked(framed(bytes(damaged)), framing="length_prefixed")
        found = bodies(got)
        assert found[0] == b"before" and found[-1] == b"after"
        assert got.accounting.frames_good + got.accounting.frames_bad == 3
        checked(bytes(damaged))  # alone, in message framing


@pytest.mark.parametrize("seed", SEEDS)
def test_every_truncation(seed):
    """A message cut anywhere is quarantined (alone: its back magic is lost), a frame cut
    anywhere is a truncated tail, and the messages before it are kept."""
    data = vector(seed)
    for cut in sweep(range(len(data)), keep=frame_bytes(data)):
        got = checked(data[:cut])
        assert got.rows == [] and got.accounting.frames_good == 0
        whole = enc.length_prefixed([GOOD, data])
        got = checked(whole[: len(whole) - len(data) + cut], framing="length_prefixed")
        assert bodies(got) == [b"before"]
        assert got.accounting.stop_reason == "truncated_tail"
        assert got.accounting.bytes_truncated_tail == 4 + cut


@pytest.mark.parametrize("seed", SEEDS)
def test_garbage_inserted_inside_a_message(seed):
    """Bytes inserted anywhere inside a message (its length prefix adjusted) leave the
    neighbours decoding; a wrong prefix walks on from wherever it points."""
    data = vector(seed)
    for at in sweep(range(2, len(data) - 2), keep=frame_bytes(data)):
        damaged = data[:at] + b"\x00\xff\x7f" + data[at:]
        got = checked(framed(damaged), framing="length_prefixed")
        found = bodies(got)
        assert found[0] == b"before" and found[-1] == b"after"
    stray = enc.length_prefixed([GOOD]) + b"\x0f\x01garbage" + enc.length_prefixed([AFTER])
    checked(stray, framing="length_prefixed")


def test_length_beyond_max_ends_the_walk():
    """A length above max_message_bytes: the rest of the file is one quarantined region."""
    data = enc.length_prefixed([GOOD]) + PREFIX.pack(0xFFFF_FFF0) + b"x" * 100 + framed(GOOD)
    got = checked(data, framing="length_prefixed", max_message_bytes=1000)
    (bad,) = got.quarantined
    assert bodies(got) == [b"before"]
    assert (bad.byte_offset, bad.length, bad.kind) == (
        4 + len(GOOD),
        len(data) - 4 - len(GOOD),
        "length_out_of_range",
    )
    assert got.accounting.stop_reason == "length_out_of_range"


def test_whole_file_over_max_is_quarantined_unread():
    data = framed(GOOD)
    got = checked(data, max_message_bytes=len(data) - 1)
    (bad,) = got.quarantined
    assert (bad.byte_offset, bad.length, bad.kind) == (0, len(data), "length_out_of_range")


def test_short_lengths_are_bad_messages_not_framing_errors():
    """A prefix of 0-3 bytes frames a message too short to be one: quarantined, walk on."""
    data = enc.length_prefixed([GOOD, b"", b"\x0f", b"\x0f\x01\x0f", AFTER])
    got = checked(data, framing="length_prefixed")
    assert [q.kind for q in got.quarantined] == ["message_too_short"] * 3
    assert bodies(got) == [b"before", b"after"]


def test_snappy_bomb_is_bounded():
    """A block declaring more output than max_decompressed_bytes fails before inflating."""
    payload = enc.item_list([b"\0" * 200_000])
    message = enc.encode_blocks(1, [("a=1", [])], 1)  # then swap in a compressed block
    compressed = bytes(cramjam.snappy.compress_raw(payload))
    block = b"\x00\x03a=1" + (len(compressed) + 1).to_bytes(4, "big") + b"\x01" + compressed
    message = message[:10] + b"\x00\x00\x00\x01" + block + b"\x0f\x01"
    tracemalloc.start()
    got = checked(message, max_decompressed_bytes=100_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [q.kind for q in got.quarantined] == ["decompressed_too_large"]
    assert peak < 2_000_000
    assert len(checked(message).rows) == 1


def test_huge_declared_lengths_allocate_nothing():
    """Counts and lengths near 2**31 inside a small message are errors, not allocations."""
    cases = [
        b"\x0f\x01" + b"\0" * 8 + b"\x7f\xff\xff\xff" + b"\x0f\x01",  # AttrDataCnt
        b"\x0f\x04" + b"\0" * 21 + b"\x7f\xff\xff\xff" + b"\0" * 4 + b"\x0f\x04",  # BodyLen
        enc.encode_blocks(1, [("a=1", [b"x"])], 1)[:-7] + b"\x7f\xff\xff\xff" + b"\x0f\x01",
    ]
    tracemalloc.start()
    for data in cases:
        got = checked(data)
        assert got.rows == [] and len(got.quarantined) == 1
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1_000_000


@FAST
@given(st.binary(max_size=300))
def test_arbitrary_bytes_as_one_message(data):
    checked(data)


@FAST
@given(st.binary(max_size=300))
def test_arbitrary_bytes_as_length_prefixed(data):
    checked(data, framing="length_prefixed", max_message_bytes=200)


@FAST
@given(st.sampled_from(SEEDS), st.data())
def test_random_edits_of_real_messages(seed, data):
    message = bytearray(vector(seed))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(message) - 1))
        message[at] = data.draw(st.integers(0, 255))
    got = checked(framed(bytes(message)), framing="length_prefixed")
    found = bodies(got)
    assert found[0] == b"before" and found[-1] == b"after"


def test_items_lost_in_a_bad_message_are_counted_when_declared():
    """records_bad: the MsgCnt of a quarantined V2-V4 message (V0/V1 declare none)."""
    v4 = bytearray(enc.encode_v4([b"a"] * 5, compress=True))
    v4[27] = 0xFF  # the snappy length varint of the body: now undecodable
    v2 = enc.encode_blocks(2, [("a=1", [b"x"] * 3)], 1)[:-3] + b"\x0f\x02"
    v1 = enc.encode_blocks(1, [("a=1", [b"x"] * 3)], 1)[:-3] + b"\x0f\x01"
    got = checked(enc.length_prefixed([bytes(v4), v2, v1]), framing="length_prefixed")
    assert [q.kind for q in got.quarantined] == ["decompress_failed", "truncated", "truncated"]
    assert got.accounting.records_bad == 5 + 3


def streamed(data: bytes, **options) -> tuple[list[pa.Array], int, FileAccounting]:
    """Decode with each batch cut down to its `attr` column as it comes (the caller keeps
    no rows): those columns, the Python heap's peak meanwhile, and the accounting."""
    checked(GOOD)  # what the first rows import (pyarrow's pandas shim) is not theirs
    wire = get("inlong")
    accounting = FileAccounting("mem.bin", "inlong")
    attrs = []
    tracemalloc.start()
    try:
        opts = resolve(wire, options)
        for item in wire.decode(io.BytesIO(data), "mem.bin", accounting, opts):
            assert isinstance(item, pa.RecordBatch)
            attrs.append(item.column("attr"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return attrs, peak, accounting


MANY = 10_000
MANY_ITEMS = {  # one snappy message each: 40-50 KB of item data
    "v1": lambda: enc.encode_blocks(1, [("a=1", [b""] * MANY)], 1, compress=True),
    "v4": lambda: enc.encode_v4([b""] * MANY, "a=1", msg_count=0, compress=True),
    "v3": lambda: enc.encode_v3([("a=1", [[(b"x", "k=1")] * (MANY // 2)])], 1, compress=True),
    "v4_private": lambda: enc.encode_v4(
        [b"x"] * (MANY // 2), "a=1", private=["k=1"] * (MANY // 2), msg_count=0, compress=True
    ),
}


@pytest.mark.parametrize("shape", sorted(MANY_ITEMS))
def test_a_message_of_very_many_items_is_streamed_in_batches(shape):
    """A message's items come out a batch at a time, never all held at once: the Python
    heap peaks far below what its rows take gathered (about 400 bytes each), whatever
    the message holds (a real one: 4 M items from a 787 KB message)."""
    data = MANY_ITEMS[shape]()
    attrs, peak, accounting = streamed(data, batch_rows=100)
    count = MANY // 2 if shape in ("v3", "v4_private") else MANY
    assert [len(column) for column in attrs] == [100] * (count // 100)
    assert accounting.records_good == count and accounting.balanced
    assert peak < 1_000_000  # streamed: 0.2-0.3 MB; gathered, the rows took 3.5-5 MB


@FAST
@given(st.sampled_from(SEEDS), st.data())
def test_batch_rows_never_change_the_outcome(seed, data):
    """Items come in chunks of batch_rows, but what a damaged message decodes to (and the
    error that quarantines it) does not depend on them."""
    message = bytearray(vector(seed))
    for _ in range(data.draw(st.integers(1, 4))):
        message[data.draw(st.integers(0, len(message) - 1))] = data.draw(st.integers(0, 255))
    framing = framed(bytes(message))
    want = outcome(checked(framing, framing="length_prefixed"))
    assert outcome(checked(framing, framing="length_prefixed", batch_rows=2)) == want


def test_the_first_error_of_a_private_attribute_walk_wins_whatever_the_chunks():
    """V4 private attributes: every pair is read before any is split (an unreadable pair
    after an entry that is not k=v is the error), in one chunk or in many."""
    items = [b"a", b"b", b"c", b"d"]
    message = enc.encode_v4(items, "g=1", private=["junk", "k=2", "k=3", "k=4"])
    message = message.replace(b"k=4", b"\xff=4")  # not UTF-8
    for batch_rows in (1, 2, 65536):
        (bad,) = checked(message, batch_rows=batch_rows).quarantined
        assert bad.kind == "invalid_attribute"
        assert bad.detail.startswith("V4 body item 3 private attr: invalid start byte")


def test_a_bad_last_item_loses_only_its_message_after_many_batches():
    """The whole message is checked before its first row goes out: an error after many
    batches' worth of items quarantines the message, with no rows of it written."""
    message = bytearray(enc.encode_blocks(1, [("a=1", [b"x"] * 50)], 1))
    message[-7:-3] = (2).to_bytes(4, "big")  # the last item's length: past its block's end
    got = checked(framed(bytes(message)), framing="length_prefixed", batch_rows=3)
    assert [q.kind for q in got.quarantined] == ["truncated"]
    assert bodies(got) == [b"before", b"after"]
    assert got.accounting.records_good == 2


def test_rows_sharing_a_long_attribute_come_in_small_batches():
    """A row holds its attribute string and map, however many items share them: a 60 KB
    attribute on 1000 empty items is 60 MB of rows, flushed a few MB at a time."""
    attr = "k=" + "v" * 60_000
    data = enc.encode_blocks(1, [(attr, [b""] * 1000)], 1, compress=True)
    attrs, _, accounting = streamed(data)
    assert sum(len(column) for column in attrs) == 1000 and accounting.balanced
    assert max(pc.sum(pc.binary_length(column)).as_py() for column in attrs) <= 3 * FLUSH_BYTES

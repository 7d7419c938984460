"""Damaged and adversarial input for the Heka decoder.

Whatever the bytes, the decoder yields only row batches and quarantined frames, never
raises, keeps its byte accounting balanced, stays within bounded memory, and gives the
same answer however the stream (plain or gzip) splits its reads.
"""

from __future__ import annotations

import gzip
import io
import zlib

import pytest
import zstandard
from budget import examples
from decoding import ChunkedReads, check_items, check_quarantined, outcome, peak_bytes
from heka_support import DATA, decode, sidecar
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from wirecodecs.accounting import HEAD_BYTES
from wirecodecs.heka.schema import HEKA_SCHEMA
from wirecodecs.inflate import REPLAY_BYTES

pytestmark = pytest.mark.usefixtures("each_walk")  # each test on both walks (conftest.py)

SEEDS = {
    name: (DATA / name).read_bytes()
    for name in (
        "basic.heka",
        "signed_mixed.heka",
        "snappy_mixed.heka",
        "embedded_separators.heka",
        "unpacked_numerics.heka",
        "invalid_bodies.heka",
    )
}
SEED_NAMES = sorted(SEEDS)
BATCH_ROWS = 3
FAST = settings(max_examples=examples(2))


def frame_starts(name: str) -> list[int]:
    return [record["offset"] for record in sidecar(name)["records"]]


def checked(data: bytes, stream=None, **options):
    """Decode `data` and assert the invariants that hold for any input."""
    got = decode(io.BytesIO(data) if stream is None else stream, batch_rows=BATCH_ROWS, **options)
    acc = got.accounting
    check_items(got, data, HEKA_SCHEMA, BATCH_ROWS)
    assert acc.records_good == acc.frames_good == len(got.rows)
    assert acc.stop_reason in ("eof", "truncated_tail", "decompress_failed")
    if data[:3] != b"\x1f\x8b\x08":
        assert check_quarantined(got, data) <= len(data)
    return got


seeds = st.sampled_from(SEED_NAMES)


@FAST
@given(seeds, st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1))
def test_byte_flips(name, flips):
    data = bytearray(SEEDS[name])
    for at, xor in flips:
        data[at % len(data)] ^= xor
    checked(bytes(data))


@FAST
@given(seeds, st.data())
def test_truncation_anywhere(name, pick):
    data = SEEDS[name]
    cut = pick.draw(st.integers(0, len(data)))
    got = checked(data[:cut])
    starts = frame_starts(name)
    whole = max(s for s in [*starts, len(data)] if s <= cut)
    acc = got.accounting
    assert acc.bytes_decoded + acc.bytes_quarantined == whole
    assert acc.bytes_truncated_tail == cut - whole
    assert acc.stop_reason == ("truncated_tail" if cut > whole else "eof")


@FAST
@given(seeds, st.data(), st.binary(min_size=1, max_size=300).map(lambda b: b.replace(b"\x1e", b"")))
def test_garbage_without_separators_between_frames_is_skipped(name, pick, garbage):
    data = SEEDS[name]
    at = pick.draw(st.sampled_from([*frame_starts(name), len(data)]))
    assume(at or not garbage.startswith((b"\x1f\x8b\x08", b"\x28\xb5\x2f\xfd")))
    clean = checked(data)
    got = checked(data[:at] + garbage + data[at:])
    assert got.accounting.bytes_skipped == len(garbage)
    shifted = [{**r, "byte_offset": r["byte_offset"] + len(garbage)} for r in clean.rows]
    assert got.rows == [
        r if r["byte_offset"] < at else s for r, s in zip(clean.rows, shifted, strict=True)
    ]


@FAST
@given(seeds, st.data(), st.binary(min_size=1, max_size=300))
def test_any_garbage_between_frames(name, pick, garbage):
    data = SEEDS[name]
    at = pick.draw(st.sampled_from([*frame_starts(name), len(data)]))
    got = checked(data[:at] + garbage + data[at:])
    before = [r for r in checked(data).rows if r["byte_offset"] < at]
    assert got.rows[: len(before)] == before  # nothing before the garbage is lost


@FAST
@given(seeds, seeds, st.data())
def test_splices_of_two_files(first, second, pick):
    a, b = SEEDS[first], SEEDS[second]
    checked(a[: pick.draw(st.integers(0, len(a)))] + b[pick.draw(st.integers(0, len(b))) :])


@given(
    seeds,
    st.lists(st.integers(1, 700), min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), max_size=3),
    st.integers(0, 1 << 20),
    st.booleans(),
)
def test_same_result_whatever_the_read_sizes(name, sizes, flips, cut, compress):
    """Frames, headers and gzip members straddle the chunk boundaries of the streamed read."""
    data = bytearray(SEEDS[name])
    for at, xor in flips:
        data[at % len(data)] ^= xor
    data = bytes(data[: cut % (len(data) + 1)])
    if compress:
        data = gzip.compress(data[: len(data) // 2]) + gzip.compress(data[len(data) // 2 :])
    assert outcome(checked(data, ChunkedReads(data, sizes))) == outcome(checked(data))


def test_one_byte_reads():
    data = (DATA / "garbage_between.heka").read_bytes() + SEEDS["basic.heka"][:-30]
    assert outcome(checked(data, ChunkedReads(data, [1]))) == outcome(checked(data))


# ---- whole-file compression damage -------------------------------------------------------


def zstd_frames(data: bytes, size: int = 8192) -> bytes:
    """zstd as a writer that flushes a frame per 8 KiB would leave it."""
    pack = zstandard.ZstdCompressor().compress
    return b"".join(pack(data[at : at + size]) for at in range(0, len(data), size))


PACK = {"gzip": lambda data: gzip.compress(data, mtime=0), "zstd": zstd_frames}
DAMAGE = {"gzip": 0x00, "zstd": 0xFF}  # what each inflater is sure to reject


@pytest.mark.parametrize("codec", PACK)
def test_truncated_compressed_file_keeps_what_inflated(codec):
    packed = PACK[codec]((DATA / "many_records.heka").read_bytes())
    got = checked(packed[: len(packed) // 2])
    assert got.accounting.stop_reason == "truncated_tail"
    assert 100 < len(got.rows) < 1000


@pytest.mark.parametrize("codec", PACK)
def test_corrupt_compressed_file_keeps_what_came_before(codec):
    """The second half overwritten: the inflater either rejects it (the rest of the file is
    quarantined) or inflates it to junk the walk cannot frame; the first half's records
    decode either way."""
    packed = bytearray(PACK[codec]((DATA / "many_records.heka").read_bytes()))
    half = len(packed) // 2
    packed[half:] = bytes([DAMAGE[codec]]) * (len(packed) - half)
    got = checked(bytes(packed))
    acc = got.accounting
    assert 100 < len(got.rows) < 1000
    assert acc.bytes_decoded < len(packed)
    failed = [q for q in got.quarantined if q.kind == "decompress_failed"]
    if acc.stop_reason == "decompress_failed":
        (q,) = failed
        assert q.byte_offset + q.length == len(packed)
        assert acc.bytes_quarantined >= q.length
    else:
        assert (acc.stop_reason, failed) == ("truncated_tail", [])


@pytest.mark.parametrize("codec", PACK)
def test_bytes_after_the_last_member_are_skipped(codec):
    packed = PACK[codec](SEEDS["basic.heka"]) + b"not a member at all"
    got = checked(packed)
    assert len(got.rows) == 5
    assert got.accounting.bytes_skipped == len(b"not a member at all")


MAGICS = {
    "zstd": b"\x28\xb5\x2f\xfd",
    "gzip": b"\x1f\x8b\x08\x00",  # ID1 ID2 CM, then no flags
    "gzip, flags from the stream": b"\x1f\x8b\x08",  # 0x1E as FLG: FEXTRA FNAME FCOMMENT FHCRC
}


@pytest.mark.parametrize("magic", MAGICS.values(), ids=MAGICS)
def test_plain_stream_that_starts_with_a_magic_loses_nothing(magic):
    """Issue 10, found by test_any_garbage_between_frames: a compression magic in front of
    basic.heka made the quarantined bytes of the accounting differ from the quarantined
    items (and lost every message). Walked as the plain stream it is, the magic is
    skipped garbage and every row of the plain file is there, shifted by it."""
    plain = SEEDS["basic.heka"]
    data = magic + plain
    got = checked(data)
    acc = got.accounting
    shifted = [{**r, "byte_offset": r["byte_offset"] + len(magic)} for r in checked(plain).rows]
    assert len(shifted) == len(sidecar("basic.heka")["records"])
    assert got.rows == shifted
    assert (got.quarantined, acc.bytes_quarantined) == ([], 0)
    assert (acc.bytes_decoded, acc.bytes_skipped, acc.bytes_truncated_tail) == (
        len(plain),
        len(magic),
        0,
    )
    assert (acc.frames_good, acc.frames_bad, acc.stop_reason) == (len(shifted), 0, "eof")
    assert outcome(checked(data, ChunkedReads(data, [1, 5, 300]))) == outcome(got)


@pytest.mark.parametrize("magic", [MAGICS["zstd"], MAGICS["gzip"]], ids=["zstd", "gzip"])
def test_magic_before_bytes_that_hold_no_frame_is_a_file_that_would_not_inflate(magic):
    """Walked as plain it frames nothing either: one decompress_failed item for the whole
    file, and exactly those bytes quarantined."""
    data = magic + bytes(range(0x20, 0x7F)) * 20  # no 0x1E anywhere
    got = checked(data)
    acc = got.accounting
    assert [(q.byte_offset, q.length, q.kind, q.head) for q in got.quarantined] == [
        (0, len(data), "decompress_failed", data[:HEAD_BYTES])
    ]
    assert (acc.bytes_quarantined, acc.frames_bad, acc.stop_reason) == (
        len(data),
        1,
        "decompress_failed",
    )


def test_inflater_that_takes_more_than_the_replay_before_failing_quarantines_the_file():
    """A gzip header whose file name runs past REPLAY_BYTES: the start is no longer kept,
    so the file is not walked again as plain (a documented limit); still exact."""
    name = b"n" * (REPLAY_BYTES + 1)
    data = b"\x1f\x8b\x08\x08" + bytes(6) + name + b"\0" + b"\xff" + SEEDS["basic.heka"]
    got = checked(data)  # 0xFF: a final block of the reserved type
    acc = got.accounting
    assert [(q.byte_offset, q.length, q.kind) for q in got.quarantined] == [
        (0, len(data), "decompress_failed")
    ]
    assert (got.rows, acc.bytes_quarantined) == ([], len(data))


# ---- memory on hostile sizes -----------------------------------------------------------------


def test_declared_length_at_the_limit_buffers_only_what_exists():
    header = b"\x08\xff\xff\xff\x03"  # message_length 8 MiB - 1
    data = SEEDS["basic.heka"] + b"\x1e\x05" + header + b"\x1f" + b"\x01" * 500_000
    peak, got = peak_bytes(decode, data)
    assert peak < 6 << 20
    acc = got.accounting
    assert (len(got.rows), acc.stop_reason) == (5, "truncated_tail")
    assert acc.bytes_truncated_tail == len(data) - len(SEEDS["basic.heka"])


def test_declared_length_over_the_limit_is_not_trusted():
    header = b"\x08\xff\xff\xff\xff\x07"  # 2**31 - 1
    data = b"\x1e\x06" + header + b"\x1f" + SEEDS["basic.heka"]
    got = checked(data)
    assert len(got.rows) == 5
    assert got.accounting.bytes_skipped == 9


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_decompression_bomb_streams_in_bounded_memory(codec):
    zeros = bytes(64 << 20)
    packed = (
        zlib.compress(zeros, 9, wbits=31)
        if codec == "gzip"
        else zstandard.ZstdCompressor(level=19).compress(zeros)
    )
    peak, got = peak_bytes(decode, packed)
    assert peak < 16 << 20  # a raw chunk, a bounded inflate step, the window's chunk
    acc = got.accounting
    assert (got.rows, acc.bytes_total, acc.bytes_skipped) == ([], len(packed), len(packed))

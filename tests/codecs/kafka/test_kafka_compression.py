"""LZ4 frames as Java Kafka writes them take liblz4's block decoder (`_lz4_blocks`), not
its frame decoder: whatever the bytes, both must give the same output, or both fail."""

from __future__ import annotations

import random
import tracemalloc

import lz4.frame
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecodecs.compression import decompress
from wirecodecs.errors import DecodeError

MIB = 1 << 20


def java_frame(payload: bytes, block_size: int = lz4.frame.BLOCKSIZE_MAX64KB) -> bytes:
    """Kafka's Lz4BlockOutputStream framing: independent blocks, no size, no checksums."""
    return lz4.frame.compress(
        payload, block_size=block_size, block_linked=False, content_checksum=False, store_size=False
    )


def frame_decoder(frame: bytes) -> bytes | None:
    """What liblz4's frame decoder makes of `frame` (None: it fails or finds no end mark)."""
    inflater = lz4.frame.LZ4FrameDecompressor()
    try:
        out = inflater.decompress(frame)
    except RuntimeError:
        return None
    return out if inflater.eof else None


def ours(frame: bytes, max_bytes: int = MIB) -> bytes | None:
    try:
        return decompress("lz4", frame, max_bytes)
    except DecodeError:
        return None


def payload(seed: int, size: int) -> bytes:
    """Half random bytes (blocks stored raw), half repetitive text (compressed blocks)."""
    rng = random.Random(seed)
    text = b"".join(
        b"user-%d clicked %d; " % (rng.randrange(50), rng.randrange(9)) for _ in range(size)
    )
    return (rng.randbytes(size // 2) + text)[:size]


FRAMES = [java_frame(payload(seed, size)) for seed, size in ((1, 0), (2, 900), (3, 200_000))]


@pytest.mark.parametrize("frame", FRAMES, ids=["empty", "one_block", "four_blocks"])
def test_java_frames_decompress_as_the_frame_decoder_does(frame):
    assert ours(frame) == frame_decoder(frame)
    assert ours(frame + b"trailing bytes") == frame_decoder(frame)


@settings(max_examples=examples(4))
@given(
    st.sampled_from(FRAMES),
    st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1, max_size=3),
    st.integers(0, 1 << 20),
)
def test_damaged_java_frames_fail_or_agree_with_the_frame_decoder(frame, flips, cut):
    damaged = bytearray(frame)
    for at, byte in flips:
        damaged[at % len(damaged)] = byte
    damaged = bytes(damaged[: max(cut % (len(damaged) + 1), 1)])
    assert ours(damaged) == frame_decoder(damaged)


def test_the_bound_holds_for_java_frames():
    frame = FRAMES[2]
    assert ours(frame, 200_000) == frame_decoder(frame)
    with pytest.raises(DecodeError) as failed:
        decompress("lz4", frame, 199_999)
    assert failed.value.kind == "decompressed_too_large"


def test_a_block_is_bounded_by_what_is_left_of_the_bound():
    """A 4 MiB block size does not make a call allocate 4 MiB under a smaller bound."""
    frame = java_frame(bytes(MIB), lz4.frame.BLOCKSIZE_MAX4MB)
    assert ours(frame) == bytes(MIB)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError) as failed:
            decompress("lz4", frame, 64 << 10)
        assert tracemalloc.get_traced_memory()[1] < 512 << 10
    finally:
        tracemalloc.stop()
    assert failed.value.kind == "decompressed_too_large"

"""Shared primitives: varints, checksums, bounded decompression and the stream window.

Expected values come from the specs (docs/kafka.md §2.1, §2.9), from Java's documented behaviour,
or from independent implementations (kafka-python's varint encoder, the gzip/zstd/lz4/
snappy compressors), never from the code under test.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import random
import struct
import tracemalloc

import cramjam
import lz4.frame
import pyarrow as pa
import pytest
import zstandard
from decoding import ChunkedReads
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.util import encode_varint

from wirecodecs.binary import Cursor, need, read_uvarint, read_varint, read_varlong
from wirecodecs.checksums import crc32, crc32_matches, crc32c, crc32c_matches
from wirecodecs.compression import decompress, lz4_header_checksum
from wirecodecs.errors import DecodeError
from wirecodecs.stream import CHUNK_BYTES, StreamWindow

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
MIB = 1 << 20


def varint_bytes(value: int) -> bytes:
    out = bytearray()
    encode_varint(value, out.append)
    return bytes(out)


def kind_of(call) -> str:
    with pytest.raises(DecodeError) as caught:
        call()
    return caught.value.kind


# ---- varints ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoded", "value"),
    [
        ("00", 0),
        ("01", -1),
        ("02", 1),
        ("7e", 63),
        ("7f", -64),
        ("8001", 64),
        ("feffffff0f", 2**31 - 1),  # Integer.MAX_VALUE: 5 bytes
        ("ffffffff0f", -(2**31)),  # Integer.MIN_VALUE
    ],
)
def test_varint_examples(encoded, value):
    data = bytes.fromhex(encoded) + b"\xaa"  # a following byte must not be read
    assert read_varint("t", data, 0) == (value, len(data) - 1)


def test_varlong_extremes_take_ten_bytes():
    assert read_varlong("t", bytes.fromhex("feffffffffffffffff01"), 0) == (2**63 - 1, 10)
    assert read_varlong("t", bytes.fromhex("ffffffffffffffffff01"), 0) == (-(2**63), 10)


@given(INT32)
def test_varint_reads_what_kafka_python_writes(value):
    data = varint_bytes(value)
    assert read_varint("t", data, 0) == (value, len(data))


@given(INT64)
def test_varlong_reads_what_kafka_python_writes(value):
    data = varint_bytes(value)
    assert read_varlong("t", data, 0) == (value, len(data))


def test_varint_rejects_a_sixth_byte_like_java():
    """Java: 'Varint is too long, the most significant bit in the 5th byte is set'."""
    assert kind_of(lambda: read_varint("t", bytes.fromhex("8080808080") + b"\x00", 0)) == (
        "varint_too_long"
    )
    assert kind_of(lambda: read_varlong("t", b"\x80" * 10 + b"\x00", 0)) == "varint_too_long"


def test_varint_fifth_byte_high_bits_are_dropped_like_java():
    """Java shifts the 5th byte left by 28 inside an int: bits past 32 are lost."""
    assert read_varint("t", bytes.fromhex("ffffffff7f"), 0)[0] == -(2**31)
    assert read_varint("t", bytes.fromhex("feffffff7f"), 0)[0] == 2**31 - 1


def test_truncated_varint_is_a_decode_error():
    with pytest.raises(DecodeError) as caught:
        read_varint("fmt", b"\x80\x80", 0)
    assert (caught.value.format, caught.value.kind) == ("fmt", "truncated")


def test_uvarint_is_unsigned():
    assert read_uvarint("t", bytes.fromhex("ac02"), 0, 5, "len") == (300, 2)


# ---- bounds-checked reads ------------------------------------------------------------------


def test_need_distinguishes_short_and_negative():
    need("t", 10, 4, 6, "x")
    assert kind_of(lambda: need("t", 10, 4, 7, "x")) == "truncated"
    assert kind_of(lambda: need("t", 10, 4, -1, "x")) == "length_out_of_range"


def test_cursor_reads_and_reports_file_offsets():
    cursor = Cursor("t", memoryview(b"\x00\x03abc\x04\x80\x01"), base=1000)
    assert cursor.unpack(struct.Struct(">h"), "len") == (3,)
    assert bytes(cursor.take(3, "body")) == b"abc"
    assert (cursor.varint(), cursor.varlong()) == (2, 64)
    assert cursor.remaining == 0
    assert cursor.sized_bytes(-2, "value") is None  # any negative length is null (Java)
    assert bytes(cursor.sized_bytes(0, "value")) == b""
    with pytest.raises(DecodeError) as caught:
        cursor.take(1, "more")
    assert (caught.value.kind, caught.value.offset) == ("truncated", 1008)
    with pytest.raises(DecodeError) as caught:
        Cursor("t", b"\x00\xff", pos=1, base=50).varint()
    assert (caught.value.kind, caught.value.offset) == ("truncated", 52)


# ---- checksums -------------------------------------------------------------------------------


def test_crc_check_values():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32(b"123456789") == 0xCBF43926
    assert crc32c_matches(memoryview(b"123456789"), 0xE3069283)
    assert not crc32c_matches(b"123456780", 0xE3069283)
    assert crc32_matches(b"123456789", 0xCBF43926)
    assert not crc32_matches(b"123456789", 0xE3069283)


# ---- bounded decompression -------------------------------------------------------------------

PAYLOAD = b"".join(b"record %06d payload\n" % i for i in range(5000))  # ~100 KB


def xerial(*blocks: bytes, header: bytes = b"\x82SNAPPY\x00" + bytes.fromhex("0000000100000001")):
    """snappy-java's stream: header, then int32 length + raw block per chunk (kafka.md §2.9)."""
    out = [header]
    for block in blocks:
        raw = bytes(cramjam.snappy.compress_raw(block))
        out.append(struct.pack(">i", len(raw)) + raw)
    return b"".join(out)


def test_gzip_multi_member():
    data = gzip.compress(PAYLOAD[:50000], mtime=0) + gzip.compress(PAYLOAD[50000:], mtime=0)
    assert decompress("gzip", data, MIB) == PAYLOAD


def test_gzip_many_small_members_then_a_large_one():
    """Members are fed in pieces (zlib copies whatever follows a member's end): member ends
    inside a piece, across pieces and at the very end all join up."""
    parts = [bytes([i % 256]) * i for i in range(300)] + [PAYLOAD]
    data = b"".join(gzip.compress(part, mtime=0) for part in parts)
    assert decompress("gzip", data, MIB) == b"".join(parts)


def test_gzip_ignores_trailing_non_member_bytes_like_java():
    assert decompress("gzip", gzip.compress(b"abc") + b"\x00\x00junk", MIB) == b"abc"


@pytest.mark.parametrize("cut", [0, 5, 20, -9, -1])
def test_gzip_cut_short_fails(cut):
    data = gzip.compress(PAYLOAD)
    assert kind_of(lambda: decompress("gzip", data[:cut], MIB)) == "decompress_failed"


def test_snappy_raw_block():
    assert decompress("snappy", bytes(cramjam.snappy.compress_raw(PAYLOAD)), MIB) == PAYLOAD


def test_snappy_xerial_blocks_and_concatenated_streams():
    chunks = [PAYLOAD[i : i + 32768] for i in range(0, len(PAYLOAD), 32768)]
    assert decompress("snappy_xerial", xerial(*chunks), MIB) == PAYLOAD
    two_streams = xerial(*chunks[:2]) + xerial(*chunks[2:])
    assert decompress("snappy_xerial", two_streams, MIB) == PAYLOAD


def test_snappy_xerial_ignores_version_fields():
    """Redpanda wrote version/compat little-endian; Java checks only the magic."""
    header = b"\x82SNAPPY\x00" + bytes.fromhex("0100000001000000")
    assert decompress("snappy_xerial", xerial(b"abc", header=header), MIB) == b"abc"


def test_snappy_without_xerial_magic_is_one_raw_block():
    raw = bytes(cramjam.snappy.compress_raw(PAYLOAD))
    assert decompress("snappy_xerial", raw, MIB) == PAYLOAD


def test_snappy_xerial_damage_fails():
    data = xerial(PAYLOAD[:30000], PAYLOAD[30000:60000])
    assert kind_of(lambda: decompress("snappy_xerial", data[:-10], MIB)) == "decompress_failed"
    assert kind_of(lambda: decompress("snappy_xerial", data + b"\x00\x01", MIB)) == (
        "decompress_failed"
    )


def test_lz4_header_checksum_values_from_the_spec():
    assert lz4_header_checksum(bytes.fromhex("6040")) == 0x82
    assert lz4_header_checksum(bytes.fromhex("04224d186040")) == 0x1A  # Kafka 0.8/0.9 bug


def test_lz4_magic0_broken_header_checksum():
    frame = bytearray(
        lz4.frame.compress(PAYLOAD, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)
    )
    assert frame[4] == 0x68  # kafka-python's FLG: content size present, HC at byte 14
    frame[14] = lz4_header_checksum(bytes(frame[:14]))  # checksum over the magic too
    broken = bytes(frame)
    assert decompress("lz4", broken, MIB, legacy_lz4=True) == PAYLOAD
    assert kind_of(lambda: decompress("lz4", broken, MIB)) == "decompress_failed"


def test_lz4_kafka_header_without_content_size():
    frame = bytearray(lz4.frame.compress(b"hello", store_size=False, block_linked=False))
    assert frame[4:7] == bytes.fromhex("604082")  # what Java Kafka writes (docs/kafka.md §2.9)
    frame[6] = 0x1A
    assert decompress("lz4", bytes(frame), MIB, legacy_lz4=True) == b"hello"


def test_lz4_cut_short_fails():
    frame = lz4.frame.compress(PAYLOAD)
    assert kind_of(lambda: decompress("lz4", frame[:-20], MIB)) == "decompress_failed"


ZSTD_PAYLOADS = {"one_call": random.Random(7).randbytes(100_000), "steps_37x": PAYLOAD}


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "undeclared"])
@pytest.mark.parametrize("name", sorted(ZSTD_PAYLOADS))
def test_zstd_one_frame_in_one_call_or_in_steps(declared, name):
    """One frame inflating up to 8x is decompressed in one call, others in steps: the
    output is the same, and the bound holds on both paths."""
    payload = ZSTD_PAYLOADS[name]
    frame = zstandard.ZstdCompressor(write_content_size=declared).compress(payload)
    assert decompress("zstd", frame, len(payload)) == payload
    too_small = len(payload) - 1
    assert kind_of(lambda: decompress("zstd", frame, too_small)) == "decompressed_too_large"


def test_zstd_frame_declaring_a_wrong_size_fails():
    frame = bytearray(zstandard.ZstdCompressor(write_content_size=True).compress(SMALL))
    params = zstandard.get_frame_parameters(bytes(frame))
    assert params.content_size == len(SMALL) and frame[4] == 0x60  # single segment, 2-byte FCS
    frame[5:7] = (len(SMALL) + 1 - 256).to_bytes(2, "little")
    assert kind_of(lambda: decompress("zstd", bytes(frame), MIB)) == "decompress_failed"


def test_zstd_multi_frame_without_content_size():
    cctx = zstandard.ZstdCompressor(write_content_size=False)
    data = cctx.compress(PAYLOAD[:40000]) + cctx.compress(PAYLOAD[40000:])
    assert decompress("zstd", data, MIB) == PAYLOAD


@pytest.mark.parametrize("damage", ["cut", "garbage", "empty"])
def test_zstd_damage_fails(damage):
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(PAYLOAD)
    data = {"cut": frame[:-7], "garbage": frame + b"junk!", "empty": b""}[damage]
    assert kind_of(lambda: decompress("zstd", data, MIB)) == "decompress_failed"


BOMB = b"\x00" * (16 * MIB)


@pytest.mark.parametrize(
    ("codec", "compressed", "size"),
    [
        ("gzip", gzip.compress(BOMB, compresslevel=1), len(BOMB)),
        ("zstd", zstandard.ZstdCompressor(write_content_size=False).compress(BOMB), len(BOMB)),
        ("lz4", lz4.frame.compress(BOMB, store_size=False), len(BOMB)),
        ("snappy", bytes(cramjam.snappy.compress_raw(BOMB[: 4 * MIB])), 4 * MIB),
        ("snappy_xerial", xerial(*[BOMB[:32768]] * 128), 4 * MIB),
    ],
    ids=["gzip", "zstd", "lz4", "snappy", "snappy_xerial"],
)
def test_decompression_bomb_is_refused_over_the_bound(codec, compressed, size):
    assert len(compressed) < MIB
    assert kind_of(lambda: decompress(codec, compressed, MIB)) == "decompressed_too_large"
    assert traced_peak(lambda: decompress(codec, compressed, MIB)) < 8 * MIB
    assert decompress(codec, compressed, size) == BOMB[:size]  # the bound is inclusive


def traced_peak(call) -> int:
    """tracemalloc's peak while `call` runs (after one untraced run: lazy imports)."""
    with contextlib.suppress(DecodeError):
        call()
    tracemalloc.start()
    try:
        with contextlib.suppress(DecodeError):
            call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


SMALL = PAYLOAD[:1000]
SMALL_COMPRESSED = {
    "gzip": gzip.compress(SMALL),
    "zstd": zstandard.ZstdCompressor(write_content_size=False).compress(SMALL),
    "lz4": lz4.frame.compress(SMALL, store_size=False, block_linked=False),  # Java Kafka's
    "lz4_sized": lz4.frame.compress(SMALL),  # kafka-python's: declares its content size
    "snappy": bytes(cramjam.snappy.compress_raw(SMALL)),
    "snappy_xerial": xerial(SMALL[:500], SMALL[500:]),
}


@pytest.mark.parametrize("name", sorted(SMALL_COMPRESSED))
def test_a_small_output_allocates_little_whatever_the_bound(name):
    """Memory follows the real output, not `max_bytes` (python-lz4 allocated a call's
    whole max_length up front: 256 MiB for every LZ4 batch)."""
    codec = name.removesuffix("_sized")
    data = SMALL_COMPRESSED[name]
    assert decompress(codec, data, 256 * MIB) == SMALL
    assert traced_peak(lambda: decompress(codec, data, 256 * MIB)) < 8 * MIB


def lz4_declaring(payload: bytes, declared: int) -> bytes:
    """An LZ4 frame of `payload` whose header declares `declared` content bytes (with a
    correct header checksum: the lie is only in the size)."""
    frame = bytearray(lz4.frame.compress(payload, store_size=True))
    assert frame[4] & 0x08  # FLG: content size present, 8 bytes LE after BD (spec)
    frame[6:14] = declared.to_bytes(8, "little")
    frame[14] = lz4_header_checksum(bytes(frame[4:14]))
    return bytes(frame)


@pytest.mark.parametrize("declared", [len(SMALL) - 1, len(SMALL) + 1, 1 << 27, 1 << 40])
def test_lz4_frame_that_lies_about_its_size_fails_without_allocating_it(declared):
    frame = lz4_declaring(SMALL, declared)
    assert kind_of(lambda: decompress("lz4", frame, 256 * MIB)) == "decompress_failed"
    assert traced_peak(lambda: decompress("lz4", frame, 256 * MIB)) < 8 * MIB


def test_lz4_declared_size_is_used_but_not_trusted_past_the_bound():
    frame = lz4_declaring(PAYLOAD, len(PAYLOAD))
    assert decompress("lz4", frame, len(PAYLOAD)) == PAYLOAD
    too_small = len(PAYLOAD) - 1
    assert kind_of(lambda: decompress("lz4", frame, too_small)) == "decompressed_too_large"


def test_snappy_impossible_declared_length_fails_without_allocating():
    block = bytes.fromhex("80808040") + b"\x00" * 8  # declares 128 MiB from 12 bytes
    assert kind_of(lambda: decompress("snappy", block, 256 * MIB)) == "decompress_failed"


def test_unknown_codec_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown codec"):
        decompress("brotli", b"", MIB)


# ---- stream window ---------------------------------------------------------------------------


def test_window_assembles_short_reads_and_tracks_offsets():
    data = bytes(range(256)) * 4
    window = StreamWindow(ChunkedReads(data, [3]), chunk_bytes=5)
    assert window.fill(10) >= 10
    view = window.peek(10)
    window.consume(10)
    assert window.offset == 10
    assert bytes(window.peek(100)) == data[10:110]
    assert bytes(view) == data[:10]  # earlier views stay valid after refills
    window.consume(100)
    assert window.fill(2000) == len(data) - 110
    assert len(window.peek(2000)) == len(data) - 110
    assert window.bytes_read == len(data)


def test_window_drain_counts_without_keeping():
    window = StreamWindow(io.BytesIO(b"x" * 10_000), chunk_bytes=1000)
    window.fill(10)
    window.consume(4)
    assert window.drain() == 9996
    assert (window.offset, window.bytes_read, window.available) == (10_000, 10_000, 0)
    assert window.fill(1) == 0


def test_window_memory_follows_the_stream_not_the_request():
    """A length field claiming 100 MiB over a 1 MiB stream buffers about what is there
    (the window's buffers live in Arrow's pool, where tracemalloc does not look)."""
    data = b"x" * MIB
    window = StreamWindow(io.BytesIO(data))
    before = pa.total_allocated_bytes()
    assert window.fill(100 * MIB) == MIB
    assert pa.total_allocated_bytes() - before <= 2 * MIB + CHUNK_BYTES
    assert bytes(window.peek(MIB)) == data


def test_window_views_are_read_only():
    window = StreamWindow(io.BytesIO(b"abcdef"))
    assert window.peek(3).readonly


def test_window_find_looks_within_the_next_n_bytes():
    window = StreamWindow(io.BytesIO(b"..\x1e...\x1e"), chunk_bytes=4)
    window.fill(9)
    window.consume(3)
    assert window.find(b"\x1e", 3) == -1
    assert window.find(b"\x1e", 4) == 3
    assert window.find(b"\x1e", 100) == 3


def test_window_reads_streams_that_only_have_read():
    class ReadOnly:  # the inflating readers' interface: pieces of their own size
        def __init__(self, data: bytes) -> None:
            self._data = io.BytesIO(data)

        def read(self, n: int) -> bytes:
            return self._data.read(5)

    window = StreamWindow(ReadOnly(b"0123456789"), chunk_bytes=4)
    assert window.fill(7) >= 7
    assert bytes(window.peek(7)) == b"0123456"
    window.consume(7)
    assert window.drain() == 3  # what is buffered, then what was read but not taken
    assert (window.offset, window.bytes_read) == (10, 10)


def test_window_refuses_to_consume_unbuffered_bytes():
    window = StreamWindow(io.BytesIO(b"abc"))
    window.fill(3)
    with pytest.raises(ValueError):
        window.consume(4)

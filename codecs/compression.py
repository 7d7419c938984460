"""Bounded decompression for the codecs the wire formats use.

Every codec refuses to produce more than `max_bytes` of output (a decompression bomb ends
as `decompressed_too_large`, not as an exhausted executor) and allocates as its output
grows, never `max_bytes` up front (snappy: the declared length, checked against the
input first); any damage becomes a `DecodeError` of kind `decompress_failed`. All work is
done by C-backed packages (zlib, cramjam, lz4, zstandard); only the 2-to-10-byte LZ4
header checksum is computed here.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable

import cramjam
import lz4.block
import lz4.frame
import zstandard

from wirecodecs.binary import UINT32, read_uvarint
from wirecodecs.errors import DecodeError

_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_PIECE = 16 << 10  # the first input piece of a gzip member: see `_gzip`
_XERIAL_MAGIC = b"\x82SNAPPY\x00"  # snappy-java's stream header, then version and compat
_XERIAL_HEADER_BYTES = 16
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_BLOCK_SIZE = struct.Struct("<I")  # before each block; 0 is the end mark
_LZ4_CONTENT_SIZE = 0x08  # FLG bit: an 8-byte content size follows BD
_LZ4_MAX_RATIO = 255  # an LZ4 sequence emits at most 255 bytes per byte it takes
_LZ4_INDEPENDENT_BLOCKS = 0x60  # FLG: version 01, independent blocks, no optional fields
_LZ4_BLOCK_MAX = {0x40: 64 << 10, 0x50: 256 << 10, 0x60: 1 << 20, 0x70: 4 << 20}  # BD -> size
_LZ4_STORED = 0x8000_0000  # block size bit: the block is stored uncompressed
_LZ4_GUESS_RATIO = 4  # the first output step of a frame that declares no size, per input byte
_SNAPPY_MAX_RATIO = 22  # a 3-byte snappy copy emits at most 64 bytes: ~21.3x at best
_ZSTD_MAX_BLOCK = 128 * 1024  # one zstd block (from as few as 4 input bytes) emits at most this
_ZSTD_GUESS_RATIO = 8  # the one-call output buffer, per input byte (real topics: 2-6x)


def _failed(fmt: str, codec: str, detail: str) -> DecodeError:
    return DecodeError(fmt, "decompress_failed", f"{codec}: {detail}")


def _too_large(fmt: str, codec: str, max_bytes: int) -> DecodeError:
    return DecodeError(
        fmt, "decompressed_too_large", f"{codec}: output exceeds the {max_bytes}-byte bound"
    )


def _gzip(fmt: str, data, max_bytes: int) -> bytes:
    """RFC 1952, concatenated members accepted (Java's GZIPInputStream). Like Java, bytes
    after a member that do not start another member end the stream.

    zlib copies whatever input follows a member's end (`unused_data`), so each member is
    fed pieces that double from `_GZIP_PIECE`: fed the whole rest, a run of tiny members
    would cost time quadratic in the input.
    """
    data = memoryview(data)
    out: list[bytes] = []
    budget = max_bytes
    pos = 0
    while True:
        inflater = zlib.decompressobj(wbits=31)
        piece = _GZIP_PIECE
        while not inflater.eof:
            if pos >= len(data):
                raise _failed(fmt, "gzip", "stream ends inside a member")
            try:
                chunk = inflater.decompress(data[pos : pos + piece], budget + 1)
            except zlib.error as err:
                raise _failed(fmt, "gzip", str(err)) from None
            if len(chunk) > budget:
                raise _too_large(fmt, "gzip", max_bytes)
            out.append(chunk)
            budget -= len(chunk)
            pos += piece
            piece *= 2
        pos = min(pos, len(data)) - len(inflater.unused_data)
        if data[pos : pos + 2] != _GZIP_MAGIC:
            return b"".join(out)


def _snappy_block(fmt: str, block, max_bytes: int) -> bytes:
    """One raw snappy block; its declared length is checked before anything is allocated."""
    try:
        declared, _ = read_uvarint(fmt, block, 0, 5, "snappy length")
    except DecodeError as err:
        raise _failed(fmt, "snappy", err.detail) from None
    if declared > max_bytes:
        raise _too_large(fmt, "snappy", max_bytes)
    if declared > len(block) * _SNAPPY_MAX_RATIO:
        raise _failed(fmt, "snappy", f"declares {declared} bytes from a {len(block)}-byte block")
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as err:
        raise _failed(fmt, "snappy", str(err)) from None


def _snappy_xerial(fmt: str, data, max_bytes: int) -> bytes:
    """snappy-java's stream framing (what Java Kafka writes): a 16-byte header, then
    int32-length-prefixed raw blocks; another header may start a concatenated stream.
    Input without the header is one raw block (librdkafka and other producers)."""
    data = memoryview(data)
    if data[:8] != _XERIAL_MAGIC:
        return _snappy_block(fmt, data, max_bytes)
    out: list[bytes] = []
    budget = max_bytes
    pos = _XERIAL_HEADER_BYTES
    end = len(data)
    while pos < end:
        if data[pos : pos + 8] == _XERIAL_MAGIC:
            pos += _XERIAL_HEADER_BYTES
            continue
        if end - pos < 4:
            raise _failed(fmt, "snappy", f"{end - pos} stray bytes where a block length belongs")
        (size,) = UINT32.unpack_from(data, pos)
        pos += 4
        if size > end - pos:
            raise _failed(fmt, "snappy", f"block of {size} bytes runs past the end")
        block = _snappy_block(fmt, data[pos : pos + size], budget)
        budget -= len(block)
        out.append(block)
        pos += size
    if pos > end:
        raise _failed(fmt, "snappy", "stream header runs past the end")
    return b"".join(out)


def _xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of a short input (< 16 bytes: the LZ4 frame descriptor), per the xxHash spec."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    mask = 0xFFFF_FFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    h = (seed + p5 + len(data)) & mask
    i = 0
    while i + 4 <= len(data):
        h = rotl((h + int.from_bytes(data[i : i + 4], "little") * p3) & mask, 17) * p4 & mask
        i += 4
    for b in data[i:]:
        h = rotl((h + b * p5) & mask, 11) * p1 & mask
    h = ((h ^ (h >> 15)) * p2) & mask
    h = ((h ^ (h >> 13)) * p3) & mask
    return h ^ (h >> 16)


def lz4_header_checksum(descriptor: bytes) -> int:
    """The LZ4 frame header checksum byte HC of a descriptor (FLG, BD, optional fields)."""
    return (_xxh32(descriptor) >> 8) & 0xFF


def _patch_legacy_lz4(data) -> bytes:
    """Kafka 0.8/0.9 (magic 0) wrote HC over the magic number too (KAFKA-1493); Java ignores
    HC for magic 0, so replace it with the correct one before a standard frame decoder."""
    data = bytearray(data)
    if len(data) < 7 or data[:4] != _LZ4_MAGIC:
        return bytes(data)  # not a frame: let the decoder report it
    flg = data[4]
    hc_at = 6 + (8 if flg & _LZ4_CONTENT_SIZE else 0) + (4 if flg & 0x01 else 0)
    if hc_at < len(data):
        data[hc_at] = lz4_header_checksum(bytes(data[4:hc_at]))
    return bytes(data)


def _lz4_declared_size(data) -> int:
    """The content size an LZ4 frame header declares; 0 when it declares none (Java Kafka)."""
    if len(data) < 14 or data[:4] != _LZ4_MAGIC or not data[4] & _LZ4_CONTENT_SIZE:
        return 0
    return int.from_bytes(data[6:14], "little")


# Java Kafka's LZ4 frame headers (FLG, BD, HC): independent blocks, nothing optional
_LZ4_PLAIN_HEADERS = {
    bytes(
        [_LZ4_INDEPENDENT_BLOCKS, bd, lz4_header_checksum(bytes([_LZ4_INDEPENDENT_BLOCKS, bd]))]
    ): size
    for bd, size in _LZ4_BLOCK_MAX.items()
}


def _lz4_blocks(data, max_bytes: int) -> bytes | None:
    """A frame with one of `_LZ4_PLAIN_HEADERS` decompressed block by block with
    liblz4's safe block decoder, each block bounded by the frame's block size and by what
    is left of `max_bytes` (one byte more, so that crossing it is seen); None for
    any other frame, or anything liblz4's frame decoder might reject or `max_bytes` not
    hold, which `_lz4` then decompresses again to report it. It spares each batch a fresh
    `LZ4FrameDecompressor` and its output steps."""
    block_max = _LZ4_PLAIN_HEADERS.get(bytes(data[4:7]), 0) if data[:4] == _LZ4_MAGIC else 0
    if not block_max:
        return None
    out: list[bytes] = []
    size = 0
    pos = 7
    end = len(data)
    while pos + 4 <= end:
        (word,) = _LZ4_BLOCK_SIZE.unpack_from(data, pos)
        pos += 4
        if not word:  # the end mark
            return b"".join(out)
        length = word & ~_LZ4_STORED
        if not 0 < length <= block_max or length > end - pos:
            return None
        block = data[pos : pos + length]
        pos += length
        if word & _LZ4_STORED:
            out.append(bytes(block))
        else:
            bound = min(block_max, max_bytes - size + 1)
            try:
                out.append(lz4.block.decompress(block, uncompressed_size=bound))
            except lz4.block.LZ4BlockError:
                return None
        size += len(out[-1])
        if size > max_bytes:
            return None
    return None


def _lz4(fmt: str, data, max_bytes: int, legacy: bool = False) -> bytes:
    """One LZ4 frame (Kafka's Lz4BlockInputStream reads one and ignores what follows).

    Java Kafka's frames take `_lz4_blocks`; others, and any that fail there, the frame
    decoder below.

    python-lz4 allocates a call's whole `max_length` before it starts, so the output is
    taken in steps: first the declared content size (else 4x the input), then each step
    three times the output so far (few steps, even at LZ4's 255x), never past
    `max_bytes`: memory follows the real output. A declared size the input cannot hold
    fails at once; any other lie, at the end mark (liblz4 checks it).
    """
    if not legacy:
        plain = _lz4_blocks(data, max_bytes)
        if plain is not None:
            return plain
    else:
        data = _patch_legacy_lz4(data)
    declared = _lz4_declared_size(data)
    if declared > _LZ4_MAX_RATIO * len(data):
        raise _failed(fmt, "lz4", f"declares {declared} bytes from a {len(data)}-byte frame")
    inflater = lz4.frame.LZ4FrameDecompressor()
    out: list[bytes] = []
    size = 0
    step = declared or _LZ4_GUESS_RATIO * len(data)
    try:
        piece = inflater.decompress(data, max_length=min(step, max_bytes + 1))
        while piece:  # empty before the end mark: the input ran out
            out.append(piece)
            size += len(piece)
            if size > max_bytes:
                raise _too_large(fmt, "lz4", max_bytes)
            if inflater.eof:
                break
            piece = inflater.decompress(b"", max_length=min(3 * size, max_bytes + 1 - size))
    except RuntimeError as err:
        raise _failed(fmt, "lz4", str(err)) from None
    if not inflater.eof:
        raise _failed(fmt, "lz4", "frame ends before its end mark")
    return b"".join(out)


_zstd_contexts = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's zstd decompressor: making one allocates its context, which costs more
    than decompressing a small batch, and one must not be used by two threads at once."""
    try:
        return _zstd_contexts.decompressor
    except AttributeError:
        _zstd_contexts.decompressor = zstandard.ZstdDecompressor()
        return _zstd_contexts.decompressor


def _zstd(fmt: str, data, max_bytes: int) -> bytes:
    """Concatenated zstd frames without a declared content size (zstd-jni's stream).

    The usual input, one frame whose output fits `_ZSTD_GUESS_RATIO` times its size, is
    decompressed in one call into a buffer of that size. Anything else (several frames,
    a larger output, damage) takes the incremental decoder, which gives the error: it has
    no output limit, so input is fed in steps small enough that one step cannot overshoot
    the remaining budget by more than a block.
    """
    data = memoryview(data)
    if not data:
        raise _failed(fmt, "zstd", "empty input")
    dctx = _zstd_decompressor()
    guess = min(max_bytes, _ZSTD_GUESS_RATIO * len(data))
    if _fits_one_call(data, guess):
        try:
            return dctx.decompress(data, max_output_size=guess, allow_extra_data=False)
        except zstandard.ZstdError:
            pass  # the incremental decoder reads it again and says what is wrong
    out: list[bytes] = []
    budget = max_bytes
    pos = 0
    try:
        while pos < len(data):
            inflater = dctx.decompressobj()
            while not inflater.eof:
                if pos >= len(data):
                    raise _failed(fmt, "zstd", "input ends inside a frame")
                step = 4 * max(1, budget // _ZSTD_MAX_BLOCK)
                chunk = inflater.decompress(data[pos : pos + step])
                pos += step
                budget -= len(chunk)
                if budget < 0:
                    raise _too_large(fmt, "zstd", max_bytes)
                out.append(chunk)
            pos = min(pos, len(data)) - len(inflater.unused_data)
    except zstandard.ZstdError as err:
        raise _failed(fmt, "zstd", str(err)) from None
    return b"".join(out)


def _fits_one_call(data, guess: int) -> bool:
    """Whether `data` starts with a zstd frame header that declares no content size, or
    a size up to `guess` (a frame declaring 0 is left to the incremental decoder)."""
    try:
        declared = zstandard.frame_content_size(data)
    except zstandard.ZstdError:  # not a frame header: the incremental decoder says so
        return False
    return declared == -1 or 0 < declared <= guess


_CODECS: dict[str, Callable[[str, object, int], bytes]] = {
    "gzip": _gzip,
    "snappy": _snappy_block,
    "snappy_xerial": _snappy_xerial,
    "lz4": _lz4,
    "zstd": _zstd,
}
CODECS = tuple(_CODECS)


def decompress(
    codec: str, data, max_bytes: int, *, fmt: str = "compression", legacy_lz4: bool = False
) -> bytes:
    """Decompress `data` with `codec` (one of `CODECS`) into at most `max_bytes` bytes.

    `snappy` is one raw block, `snappy_xerial` snappy-java's framing or a raw block, `lz4`
    one LZ4 frame (`legacy_lz4`: Kafka magic 0's broken header checksum), `zstd` one or
    more frames. Raises `DecodeError` (`decompress_failed`, `decompressed_too_large`)
    with format `fmt`.
    """
    if codec == "lz4":
        return _lz4(fmt, data, max_bytes, legacy_lz4)
    try:
        run = _CODECS[codec]
    except KeyError:
        raise ValueError(f"unknown codec {codec!r}; known: {', '.join(CODECS)}") from None
    return run(fmt, data, max_bytes)

"""Whole-file decompression: a landed file that is one compressed unit around a stream.

Formats differ in what a damaged file means (Heka folds its accounting back onto the
compressed bytes, Hercules quarantines the file as one region), not in how it is read; the
reading is here, for every format. Two kinds of file:

* **gzip and zstd**, sniffed by their magic (`RawSource.sniff`) and inflated as a stream
  (`Inflated`): Heka's `.gz` and `.zst` objects (docs/heka.md, "Landings and the walk");
* **one LZ4 block** with no frame and no size (`lz4_block`), which cannot be streamed:
  the file is read whole up to a bound (`read_up_to`): Hercules bodies sent with
  `Content-Encoding: lz4` (docs/hercules.md, "LZ4 bodies").

A gzip or zstd file is read in raw chunks and inflated in bounded steps, so memory never
holds more than one raw chunk and one bounded piece of output: zlib's `max_length` bounds
gzip; zstd has no output bound, so it is fed in steps small enough that one step cannot
emit more than a few MiB. Damage is recorded, never raised: a corrupt member (`failure`),
a stream cut inside a member (`truncated`), and bytes after the last member that start no
other one (`trailing_bytes`). Reading stops at the damage, and the first MiB of the file
is kept until then, so that a plain stream which merely starts with a magic can still be
walked from its first byte (`RawSource.rewind`).
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable
from typing import BinaryIO

import lz4.block
import zstandard

from wirecodecs.accounting import HEAD_BYTES
from wirecodecs.errors import DecodeError

GZIP_MAGIC = b"\x1f\x8b\x08"  # ID1 ID2 and CM = deflate, the only method defined
_GZIP_FLAG_RESERVED = 0xE0  # FLG bits 5-7 must be zero
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAGIC_BYTES = 4
RAW_CHUNK = 256 << 10
# One zstd input byte yields at most 32 KiB (a 128 KiB RLE block from 4 bytes): 128 bytes
# per call bound one call's output to 4 MiB.
_ZSTD_STEP = 128
REPLAY_BYTES = 1 << 20  # how much of a file's start is kept for `RawSource.rewind`
_LZ4_MAX_RATIO = 255  # an LZ4 block expands at most ~255x
_LZ4_GUESS_RATIO = 4  # room first given to an LZ4 block, per byte, and its growth


class RawSource:
    """The file as read from `stream`, with the sniffed head replayed, bytes counted; its
    first REPLAY_BYTES are kept, so that it can be read again from its first byte."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._head = b""
        self._kept: list[bytes] | None = []  # everything read, while within REPLAY_BYTES
        self.first = b""  # the file's first HEAD_BYTES bytes
        self.raw_bytes = 0

    def sniff(self) -> str | None:
        """The whole-file codec its first bytes announce: "gzip", "zstd" or None (a plain
        stream, which is read only once: nothing is kept for `rewind`)."""
        head = b""
        while len(head) < MAGIC_BYTES and (piece := self._read(MAGIC_BYTES - len(head))):
            head += piece
        self._head = head
        codec = None
        if head.startswith(GZIP_MAGIC) and len(head) > 3 and not head[3] & _GZIP_FLAG_RESERVED:
            codec = "gzip"
        elif head.startswith(ZSTD_MAGIC):
            codec = "zstd"
        else:
            self._kept = None
        return codec

    def _read(self, n: int) -> bytes:
        piece = self._stream.read(n) or b""
        self.raw_bytes += len(piece)
        if len(self.first) < HEAD_BYTES:
            self.first += piece[: HEAD_BYTES - len(self.first)]
        if self._kept is not None:
            self._kept.append(piece)
            if self.raw_bytes > REPLAY_BYTES:
                self._kept = None
        return piece

    def read(self, n: int) -> bytes:
        """`n` bytes, fewer only at the end of the file: how the stream happens to cut its
        reads must not move the place where an inflater meets damage."""
        parts = []
        if self._head:
            piece, self._head = self._head[:n], self._head[n:]
            parts.append(piece)
            n -= len(piece)
        while n > 0 and (piece := self._read(n)):
            parts.append(piece)
            n -= len(piece)
        return b"".join(parts)

    def rewind(self) -> bool:
        """Read the file again from its first byte (what was read is replayed, not counted
        twice); possible only while no more than REPLAY_BYTES have been read."""
        if self._kept is None:
            return False
        self._head, self._kept = b"".join(self._kept), None
        return True

    def drain(self) -> None:
        while self.read(RAW_CHUNK):
            pass


def _gzip_step(inflater, data, n: int) -> tuple[bytes, bytes]:
    out = inflater.decompress(data, n)
    return out, inflater.unconsumed_tail


def _zstd_step(inflater, data, n: int) -> tuple[bytes, bytes]:
    return inflater.decompress(data[:_ZSTD_STEP]), data[_ZSTD_STEP:]


_CODECS: dict[str, tuple[bytes, Callable, Callable, tuple]] = {
    # codec: (magic, new member decoder, one bounded step, the codec's error types)
    "gzip": (GZIP_MAGIC, lambda: zlib.decompressobj(wbits=31), _gzip_step, (zlib.error,)),
    "zstd": (
        ZSTD_MAGIC,
        lambda: zstandard.ZstdDecompressor().decompressobj(),
        _zstd_step,
        (zstandard.ZstdError,),
    ),
}


class Inflated:
    """The decompressed stream of a `RawSource` whose codec was sniffed: `read(n)` returns
    decompressed bytes (about `n`; zstd steps may return up to 4 MiB), b"" at its end."""

    def __init__(self, raw: RawSource, codec: str, fmt: str) -> None:
        self.codec = codec
        self.fmt = fmt  # the format named by `failure`
        self._raw = raw
        self._magic, self._new, self._step, self._errors = _CODECS[codec]
        self._inflater = self._new()
        self._fed = False  # the current member has been given input
        self._input = memoryview(b"")
        self._done = False
        self._produced = False  # some bytes inflated
        self._trailing_offset: int | None = None  # raw offset of bytes that start no member
        self.failure: DecodeError | None = None
        self.failure_offset = 0  # raw offset from which the file could not be inflated
        self.failure_head = b""
        self.failed_bytes = 0  # raw bytes from failure_offset to the end (see `finish`)
        self.trailing_bytes = 0  # raw bytes after the last member that start no member
        self.truncated = False  # the file ends inside a member

    @property
    def clean(self) -> bool:
        """Whether the file inflated to its end: no failure, no cut, no trailing bytes."""
        return self.failure is None and not self.truncated and self._trailing_offset is None

    def finish(self) -> None:
        """Read what is left of the file (reading stopped at the damage) and count the
        failed and trailing bytes: all of them from where the damage starts to the end."""
        self._raw.drain()
        if self.failure is not None:
            self.failed_bytes = self._raw.raw_bytes - self.failure_offset
            if not self._produced:
                self.failure_head = self._raw.first
        if self._trailing_offset is not None:
            self.trailing_bytes = self._raw.raw_bytes - self._trailing_offset

    def read(self, n: int) -> bytes:
        while not self._done:
            out = self._next(max(n, 1))
            if out:
                return out
        return b""

    def _more(self) -> bool:
        piece = self._raw.read(RAW_CHUNK)
        if piece:
            self._input = memoryview(bytes(self._input) + piece if self._input else piece)
        return bool(piece)

    def _next(self, n: int) -> bytes:
        if not self._input and not self._more():
            if self._fed:  # output zlib still holds back for want of `max_length` room
                with contextlib.suppress(*self._errors):
                    out, _ = self._step(self._inflater, b"", n)
                    if out:
                        return out
            self.truncated = self._fed
            self._done = True
            return b""
        pending = len(self._input)
        try:
            out, rest = self._step(self._inflater, self._input, n)
        except self._errors as err:
            self._fail(pending, str(err))
            return b""
        self._fed = True
        self._produced = self._produced or bool(out)
        self._input = memoryview(rest)
        if self._inflater.eof:
            self._input = memoryview(self._inflater.unused_data + bytes(rest))
            self._next_member()
        return out

    def _next_member(self) -> None:
        """After a member: another one starts here, or the rest is trailing bytes."""
        while len(self._input) < len(self._magic) and self._more():
            pass
        if not self._input:
            self._done = True
        elif bytes(self._input[: len(self._magic)]) == self._magic:
            self._inflater = self._new()
            self._fed = False
        else:
            self._trailing_offset = self._raw.raw_bytes - len(self._input)
            self._done = True

    def _fail(self, pending: int, detail: str) -> None:
        """The file cannot be inflated from the input still pending, or from its first byte
        when nothing inflated (the bytes the inflater took produced nothing either)."""
        self.failure = DecodeError(self.fmt, "decompress_failed", f"{self.codec}: {detail}")
        if self._produced:  # else offset 0, and the head is the file's (see `finish`)
            self.failure_offset = self._raw.raw_bytes - pending
            while len(self._input) < HEAD_BYTES and self._more():
                pass
            self.failure_head = bytes(self._input[:HEAD_BYTES])
        self._input = memoryview(b"")
        self._done = True


def read_up_to(stream: BinaryIO, n: int) -> bytes:
    """At most `n` bytes, fewer only at the end of the stream (reads may come short)."""
    parts, have = [], 0
    while have < n and (piece := stream.read(min(n - have, RAW_CHUNK))):
        parts.append(piece)
        have += len(piece)
    return b"".join(parts)


def drain(stream: BinaryIO) -> int:
    """Read the stream to its end without keeping it; returns the bytes read."""
    count = 0
    while piece := stream.read(RAW_CHUNK):
        count += len(piece)
    return count


def lz4_block(fmt: str, data: bytes, max_bytes: int) -> bytes:
    """An LZ4 block of unknown size, at most `max_bytes` (and 255x its own size) once
    decompressed. python-lz4 allocates the room it is given before it starts, so the room
    starts at 4x the block and grows 4x each time it is too small (the block is decoded
    again): memory follows the output. A corrupt block and one that would be larger than
    the bound both fail (`decompress_failed`): LZ4 cannot tell them apart."""
    most = min(max_bytes, len(data) * _LZ4_MAX_RATIO + 16)
    room = min(most, _LZ4_GUESS_RATIO * len(data))
    while True:
        try:
            return lz4.block.decompress(data, uncompressed_size=room)
        except (lz4.block.LZ4BlockError, ValueError, MemoryError) as err:
            if isinstance(err, lz4.block.LZ4BlockError) and room < most:  # room too small?
                room = min(most, _LZ4_GUESS_RATIO * room)
                continue
            raise DecodeError(fmt, "decompress_failed", f"lz4: {err}") from None

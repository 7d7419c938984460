"""A forward-only window over a byte stream, for decoders that walk frames.

Decoders never read a whole file: they ask for the next `n` bytes, look at them through a
memoryview, and consume them. The stream is read in chunks (short reads are fine), so
memory stays bounded by the largest frame asked for plus one chunk; a frame that claims
more bytes than a decoder accepts is drained (counted, not kept).
"""

from __future__ import annotations

import re
from typing import BinaryIO

import numpy as np

from wirecodecs.accounting import HEAD_BYTES, FileAccounting, Quarantined
from wirecodecs.arrow_columns import pooled

CHUNK_BYTES = 1 << 20


class StreamWindow:
    """Buffered bytes from the current position of `stream`, with absolute offsets.

    Views returned by `peek` are read-only and stay valid after later calls (each fill
    reads into a new buffer, never resizing an old one), so a decoder may keep a frame
    while it walks on.
    """

    def __init__(self, stream: BinaryIO, chunk_bytes: int = CHUNK_BYTES) -> None:
        self._stream = stream
        self._chunk_bytes = chunk_bytes
        self._read_into = getattr(stream, "readinto", None) or self._copy_read
        self._pending = b""  # read by `_copy_read` but not yet taken
        self._view = memoryview(b"")  # read-only view of the current buffer's bytes
        self._start = 0  # index in _view of the current position
        self._eof = False
        self.offset = 0  # absolute stream offset of the current position
        self.bytes_read = 0  # everything read from the stream so far

    @property
    def available(self) -> int:
        """Bytes buffered from the current position."""
        return len(self._view) - self._start

    def _read_chunk(self) -> bytes:
        piece, self._pending = self._pending or self._stream.read(self._chunk_bytes), b""
        if not piece:
            self._eof = True
            return b""
        self.bytes_read += len(piece)
        return piece

    def _copy_read(self, into: memoryview) -> int:
        """`readinto` for streams that only have `read` (the inflating readers)."""
        piece = self._pending or memoryview(self._stream.read(len(into))).cast("B")
        taken = min(len(piece), len(into))
        into[:taken] = piece[:taken]
        self._pending = piece[taken:]  # an inflater may give more than it was asked for
        return taken

    def fill(self, n: int) -> int:
        """Buffer at least `n` bytes from the position unless the stream ends first;
        returns the bytes available (fewer than `n` only at the end of the stream).

        The stream reads straight into a fresh buffer (one copy of the data, not two),
        which starts one chunk larger than what is left and doubles while a frame needs
        more: memory follows what the stream holds, not what a length field claims. The
        old buffer is left to the views into it. Buffers come from Arrow's memory pool,
        which reuses freed pages: the system's fresh pages cost more than the copy
        (docs/performance.md, Kafka decoder).
        """
        have = self.available
        if have >= n or self._eof:
            return have
        buffer = memoryview(pooled(have + self._chunk_bytes, np.uint8))
        buffer[:have] = self._view[self._start :]
        while have < n:
            if have == len(buffer):
                bigger = memoryview(pooled(2 * have, np.uint8))
                bigger[:have] = buffer
                buffer = bigger
            got = self._read_into(buffer[have:])
            if not got:
                self._eof = True
                break
            have += got
            self.bytes_read += got
        self._view = buffer[:have].toreadonly()
        self._start = 0
        return have

    def peek(self, n: int) -> memoryview:
        """A view of the next `n` bytes (fewer at the end of the stream), not consumed."""
        self.fill(n)
        return self._view[self._start : self._start + n]

    def find(self, needle: bytes, n: int) -> int:
        """Where `needle` starts within the next `n` buffered bytes (from the position),
        or -1: a resynchronising decoder's search for its next frame marker."""
        end = min(self._start + n, len(self._view))
        found = re.compile(re.escape(needle)).search(self._view, self._start, end)
        return found.start() - self._start if found else -1

    def consume(self, n: int) -> None:
        """Move the position `n` bytes forward; they must be buffered."""
        if n > self.available:
            raise ValueError(f"cannot consume {n} bytes, {self.available} buffered")
        self._start += n
        self.offset += n

    def drain(self) -> int:
        """Consume everything left in the stream without keeping it; returns the count."""
        count = self.available
        self._view = memoryview(b"")
        self._start = 0
        while piece := self._read_chunk():
            count += len(piece)
        self.offset += count
        return count


def truncated_tail(window: StreamWindow, accounting: FileAccounting) -> None:
    """The rest of the stream is an incomplete last frame (an active segment, a cut
    upload): reported as a truncated tail, not quarantined."""
    accounting.count_truncated_tail(window.available)
    window.consume(window.available)


def quarantine_rest(
    window: StreamWindow, source: str, accounting: FileAccounting, kind: str, detail: str
) -> Quarantined:
    """Everything from the position to the end of the stream as one bad frame (drained, not
    buffered): after a length that cannot be trusted, nothing further can be framed."""
    start = window.offset
    head = bytes(window.peek(HEAD_BYTES))
    length = window.drain()
    accounting.count_bad(length)
    accounting.stop_reason = kind
    return Quarantined.from_frame(source, start, head, kind, detail, length=length)

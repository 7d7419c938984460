"""A forward-only window over a byte stream, for decoders that walk frames.

Decoders never read a whole file: they ask for the next `n` bytes, look at them through a
memoryview, and consume them. The stream is read in chunks (short reads are fine), so
memory stays bounded by the largest frame asked for plus one chunk; a frame that claims
more bytes than a decoder accepts is drained (counted, not kept).
"""

from __future__ import annotations

from typing import BinaryIO

from wirecodecs.accounting import HEAD_BYTES, FileAccounting, Quarantined

CHUNK_BYTES = 1 << 20


class StreamWindow:
    """Buffered bytes from the current position of `stream`, with absolute offsets.

    Views returned by `peek` stay valid after later calls (the buffer is immutable bytes
    that is replaced, never resized), so a decoder may keep a frame while it walks on.
    """

    def __init__(self, stream: BinaryIO, chunk_bytes: int = CHUNK_BYTES) -> None:
        self._stream = stream
        self._chunk_bytes = chunk_bytes
        self._buf = b""
        self._start = 0  # index in _buf of the current position
        self._eof = False
        self.offset = 0  # absolute stream offset of the current position
        self.bytes_read = 0  # everything read from the stream so far

    @property
    def available(self) -> int:
        """Bytes buffered from the current position."""
        return len(self._buf) - self._start

    def _read_chunk(self) -> bytes:
        piece = self._stream.read(self._chunk_bytes)
        if not piece:
            self._eof = True
            return b""
        self.bytes_read += len(piece)
        return piece

    def fill(self, n: int) -> int:
        """Buffer at least `n` bytes from the position unless the stream ends first;
        returns the bytes available (fewer than `n` only at the end of the stream)."""
        have = self.available
        if have >= n or self._eof:
            return have
        parts = [memoryview(self._buf)[self._start :]]
        while have < n:
            piece = self._read_chunk()
            if not piece:
                break
            parts.append(piece)
            have += len(piece)
        self._buf = b"".join(parts)
        self._start = 0
        return have

    def peek(self, n: int) -> memoryview:
        """A view of the next `n` bytes (fewer at the end of the stream), not consumed."""
        self.fill(n)
        return memoryview(self._buf)[self._start : self._start + n]

    def find(self, needle: bytes, n: int) -> int:
        """Where `needle` starts within the next `n` buffered bytes (from the position),
        or -1: a resynchronising decoder's search for its next frame marker."""
        at = self._buf.find(needle, self._start, self._start + n)
        return at - self._start if at >= 0 else -1

    def consume(self, n: int) -> None:
        """Move the position `n` bytes forward; they must be buffered."""
        if n > self.available:
            raise ValueError(f"cannot consume {n} bytes, {self.available} buffered")
        self._start += n
        self.offset += n

    def drain(self) -> int:
        """Consume everything left in the stream without keeping it; returns the count."""
        count = self.available
        self._buf = b""
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

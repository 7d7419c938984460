"""Bounds-checked reads over byte buffers, shared by every format's decoder.

A dump is untrusted: every length is checked against the bytes that remain before it is
used, and a short or over-long field becomes a `DecodeError` that names the format and the
position, never an `IndexError` or a silently short slice.

The Kafka v2 record walk reads its many small varint fields with `read_varint` and
`read_varlong` straight off the section's bytes (its compiled fast path has a numba copy
of the same reader); readers of fixed headers and length-prefixed fields use `Cursor`,
which also turns error positions into file offsets.
"""

from __future__ import annotations

import struct

from wirecodecs.errors import DecodeError

# Precompiled big-endian integers: decoders build their own header structs the same way
# (one `struct.Struct` per fixed header) and use these for single fields.
INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")

_MASK32 = 0xFFFF_FFFF
_MASK64 = 0xFFFF_FFFF_FFFF_FFFF


def need(fmt: str, available: int, pos: int, n: int, what: str) -> None:
    """Raise unless `n` bytes exist at `pos` of a buffer holding `available` bytes."""
    if n < 0:
        raise DecodeError(fmt, "length_out_of_range", f"{what}: negative length {n}", offset=pos)
    if n > available - pos:
        raise DecodeError(
            fmt,
            "truncated",
            f"{what}: needs {n} bytes at {pos}, only {max(available - pos, 0)} left",
            offset=pos,
        )


def read_uvarint(fmt: str, buf, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    """Unsigned base-128 varint (low groups first) of at most `max_bytes` bytes."""
    value = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise DecodeError(fmt, "truncated", f"{what}: varint runs past the end", offset=pos)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    raise DecodeError(
        fmt, "varint_too_long", f"{what}: varint longer than {max_bytes} bytes", offset=pos
    )


def zigzag(bits: int) -> int:
    """The signed value of zig-zag encoded bits: 0 -> 0, 1 -> -1, 2 -> 1, 3 -> -2."""
    return (bits >> 1) ^ -(bits & 1)


def read_varint_bits(fmt: str, buf, pos: int, what: str = "varint") -> tuple[int, int]:
    """The 32 raw bits of a varint as Java's `ByteUtils.readVarint` reads them: at most
    5 bytes, and the bits of the 5th byte past 32 are dropped (shifted out of its int)."""
    bits, pos = read_uvarint(fmt, buf, pos, 5, what)
    return bits & _MASK32, pos


def read_varlong_bits(fmt: str, buf, pos: int, what: str = "varlong") -> tuple[int, int]:
    """The 64 raw bits of a varlong as Java's `ByteUtils.readVarlong`: at most 10 bytes."""
    bits, pos = read_uvarint(fmt, buf, pos, 10, what)
    return bits & _MASK64, pos


def read_varint(fmt: str, buf, pos: int, what: str = "varint") -> tuple[int, int]:
    """A zig-zag int32 varint (Kafka v2 records); returns the value and the next position."""
    bits, pos = read_varint_bits(fmt, buf, pos, what)
    return zigzag(bits), pos


def read_varlong(fmt: str, buf, pos: int, what: str = "varlong") -> tuple[int, int]:
    """A zig-zag int64 varlong; returns the value and the next position."""
    bits, pos = read_varlong_bits(fmt, buf, pos, what)
    return zigzag(bits), pos


def wrap_int64(value: int) -> int:
    """`value` as Java's long arithmetic leaves it (two's-complement wrap to 64 bits)."""
    return ((value + (1 << 63)) & _MASK64) - (1 << 63)


class Cursor:
    """A read position over a buffer; every read is checked and advances the position.

    `base` is added to positions in errors, so that they are file offsets when the buffer
    is a frame cut from a file (keep it 0 for decompressed data).
    """

    __slots__ = ("base", "buf", "fmt", "pos")

    def __init__(self, fmt: str, buf, pos: int = 0, base: int = 0) -> None:
        self.fmt = fmt
        self.buf = buf
        self.pos = pos
        self.base = base

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def _at(self, err: DecodeError) -> DecodeError:
        err.offset = self.base + (err.offset or 0)
        return err

    def _need(self, n: int, what: str) -> None:
        try:
            need(self.fmt, len(self.buf), self.pos, n, what)
        except DecodeError as err:
            raise self._at(err) from None

    def take(self, n: int, what: str):
        """The next `n` bytes (a slice of the underlying buffer)."""
        self._need(n, what)
        start = self.pos
        self.pos = start + n
        return self.buf[start : self.pos]

    def unpack(self, st: struct.Struct, what: str) -> tuple:
        """The fields of the fixed-size struct `st` at the position."""
        self._need(st.size, what)
        fields = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return fields

    def sized_bytes(self, length: int, what: str):
        """A length-prefixed value whose length was just read: any negative length is
        null (Java's `Utils.sizeDelimited`), 0 is empty."""
        return None if length < 0 else self.take(length, what)

    def varint(self, what: str = "varint") -> int:
        return self._zigzag(read_varint, what)

    def varlong(self, what: str = "varlong") -> int:
        return self._zigzag(read_varlong, what)

    def _zigzag(self, read, what: str) -> int:
        try:
            value, self.pos = read(self.fmt, self.buf, self.pos, what)
        except DecodeError as err:
            raise self._at(err) from None
        return value

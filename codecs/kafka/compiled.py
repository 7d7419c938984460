"""The v2 record walk compiled with numba: the fast path of `record_batch`.

Same walk, over a numpy uint8 view of a records section: varints are decoded as Java reads
them (5 bytes for an int, 10 for a long, extra bits dropped). Each section's records are
appended to numpy buffers that a `Columns` keeps per flush (per-record values, and keys,
values, header keys and header values each back to back), so a batch costs one compiled
call and the Arrow columns are built once per flush, without a Python object per record.

The compiled code checks every bound itself and reports only success or failure: on
failure the decoder walks the batch again in pure Python, which raises the DecodeError
(kind and detail) that the pure path gives, so errors read the same on both paths.
Importing this module needs numba; the decoder falls back to the pure walk without it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
from numba import njit

from wirecodecs.arrow_columns import binary_column, offsets_of, pooled
from wirecodecs.kafka.schema import HEADER_TYPE
from wirecodecs.kernels import copy, enlarged, load, readonly, unowned

_FAILED = -1  # a position no walk can reach: the batch needs the pure walk's error
_GROW = -2  # a buffer may be too small for the section: grow them and walk it again
_MORE_HEADERS = -3  # the header pairs buffer is full: grow it and walk the section again
_INT_BITS = np.uint64(0xFFFF_FFFF)  # readVarint keeps the low 32 bits of up to 5 bytes
_ONE = np.uint64(1)
_SEVEN = np.uint64(7)


@njit(cache=True, nogil=True)
def _uvarint(data, pos, max_bytes):
    """Raw bits of a base-128 varint (low groups first) of at most `max_bytes` bytes and
    the next position, or `_FAILED` when it runs past the end or is longer."""
    bits = np.uint64(0)
    shift = np.uint64(0)
    for _ in range(max_bytes):
        if pos >= data.size:
            return bits, _FAILED
        b = data[pos]
        pos += 1
        bits |= np.uint64(b & 0x7F) << shift  # past 64 bits, dropped like Java's long
        if b < 0x80:
            return bits, pos
        shift += _SEVEN
    return bits, _FAILED


@njit(cache=True, nogil=True)
def _zigzag(bits):
    return np.int64(bits >> _ONE) ^ -np.int64(bits & _ONE)


@njit(cache=True, nogil=True)
def _field(data, pos, out, at):
    """A length-prefixed byte field at `pos` (zigzag varint length, negative = null),
    copied to `out[at:]`: its size (-1 for null) and the next position, or `_FAILED`."""
    bits, pos = _uvarint(data, pos, 5)
    if pos == _FAILED or bits & _ONE:
        return -1, pos
    size = np.int64((bits & _INT_BITS) >> _ONE)
    if size > data.size - pos:
        return -1, _FAILED
    copy(out, at, data, pos, size)
    return size, pos + size


@njit(cache=True, nogil=True)
def _walk(data, count, rows, headers, keys, values, header_keys, header_values, used):
    """Append `count` records (docs/kafka.md §2.7) filling `data` exactly to the buffers
    after `used` (rows, then bytes of keys, values, header keys, header values, then header
    pairs): per row (offsetDelta, timestampDelta, key size, value size, header count) in `rows`,
    per header (key size, value size) in `headers`, sizes -1 for null. Returns 0 and
    advances `used`; `_FAILED` for a section that is not `count` clean records; `_GROW`
    or `_MORE_HEADERS` when a buffer may be too small (nothing appended either way)."""
    data, rows, headers, used = unowned(data), unowned(rows), unowned(headers), unowned(used)
    keys, values = unowned(keys), unowned(values)
    header_keys, header_values = unowned(header_keys), unowned(header_values)
    n = data.size
    row = used[0]
    at = used[1:6].copy()  # next free byte per buffer, then next header pair
    if (
        row + count > rows.shape[1]
        or keys.size - at[0] < n
        or values.size - at[1] < n
        or header_keys.size - at[2] < n
        or header_values.size - at[3] < n
    ):
        return _GROW
    pos = 0
    for r in range(row, row + count):
        bits, pos = _uvarint(data, pos, 5)  # length
        if pos == _FAILED:
            return _FAILED
        end = pos + _zigzag(bits & _INT_BITS)
        bits, pos = _uvarint(data, pos + 1, 10)  # attributes (unused), timestampDelta
        if pos == _FAILED:
            return _FAILED
        rows[1, r] = _zigzag(bits)
        bits, pos = _uvarint(data, pos, 5)  # offsetDelta
        if pos == _FAILED:
            return _FAILED
        rows[0, r] = _zigzag(bits & _INT_BITS)
        size, pos = _field(data, pos, keys, at[0])
        if pos == _FAILED:
            return _FAILED
        rows[2, r] = size
        at[0] += max(size, 0)
        size, pos = _field(data, pos, values, at[1])
        if pos == _FAILED:
            return _FAILED
        rows[3, r] = size
        at[1] += max(size, 0)
        bits, pos = _uvarint(data, pos, 5)  # headersCount
        count_headers = _zigzag(bits & _INT_BITS)
        if pos == _FAILED or count_headers < 0:
            return _FAILED
        rows[4, r] = count_headers
        for _ in range(count_headers):
            h = at[4]
            if h >= headers.shape[1]:
                return _MORE_HEADERS
            size, pos = _field(data, pos, header_keys, at[2])
            if pos == _FAILED or size < 0:  # a header key is never null
                return _FAILED
            headers[0, h] = size
            at[2] += size
            size, pos = _field(data, pos, header_values, at[3])
            if pos == _FAILED:
                return _FAILED
            headers[1, h] = size
            at[3] += max(size, 0)
            at[4] = h + 1
        if pos != end:  # a negative length can declare end = _FAILED
            return _FAILED
    if pos != n:
        return _FAILED
    used[0] = row + count
    used[1:6] = at
    return 0


class Records(NamedTuple):
    """Where one section's records went: rows `start:stop` of the `Columns`, and their
    offset and timestamp deltas (views of its buffers)."""

    start: int
    stop: int
    offset_deltas: np.ndarray
    ts_deltas: np.ndarray


class Columns:
    """The records of every section walked since the last flush, in growable numpy
    buffers from which the key, value and header columns are built once (`arrays`).
    The Arrow arrays share these buffers: after a flush, start a new `Columns`."""

    def __init__(self, previous: Columns | None = None) -> None:
        """Buffers as large as the `previous` flush's ended (growing copies them all), or
        small ones for the first flush of a file; from Arrow's pool (`pooled`), which
        gives them the pages of the flushes whose batches have been let go."""
        if previous is None:
            self._rows = pooled((5, 1024), np.int64)
            self._headers = pooled((2, 256), np.int64)
            self._bytes = [pooled(1 << 16, np.uint8) for _ in range(4)]
        else:
            self._rows = pooled(previous._rows.shape, np.int64)
            self._headers = pooled(previous._headers.shape, np.int64)
            self._bytes = [pooled(buffer.size, np.uint8) for buffer in previous._bytes]
        self._used = np.zeros(6, np.int64)
        self.rows = 0

    def walk(self, data, count: int) -> Records | None:
        """Append the records of a decompressed v2 records section, or None when the
        section is not exactly `count` well-formed records (the caller's pure walk then
        says why)."""
        view = readonly(data)
        status = _walk(view, count, self._rows, self._headers, *self._bytes, self._used)
        while status < _FAILED:  # _GROW or _MORE_HEADERS
            self._grow(view.size, count, status == _MORE_HEADERS)
            status = _walk(view, count, self._rows, self._headers, *self._bytes, self._used)
        if status:
            return None
        start = self.rows
        stop = self.rows = start + count
        rows = self._rows
        return Records(start, stop, rows[0, start:stop], rows[1, start:stop])

    def deltas(self) -> tuple[np.ndarray, np.ndarray]:
        """The offset and timestamp deltas of all rows walked."""
        return self._rows[0, : self.rows], self._rows[1, : self.rows]

    def _grow(self, section_bytes: int, count: int, headers: bool) -> None:
        """Double what may be too small for one more section, or the header pairs buffer
        (earlier views stay valid)."""
        used = self._used.tolist()
        if headers:
            self._headers = enlarged(self._headers, used[5], self._headers.shape[1] + 1)
            return
        self._rows = enlarged(self._rows, used[0], used[0] + count)
        self._bytes = [
            enlarged(buffer, at, at + section_bytes)
            for buffer, at in zip(self._bytes, used[1:5], strict=True)
        ]

    def arrays(self) -> tuple[pa.Array, pa.Array, pa.Array]:
        """The key, value and headers columns of all rows walked."""
        n = self.rows
        pairs = int(self._used[5])
        keys, values, header_keys, header_values = self._bytes
        header_keys = binary_column(pa.string(), self._headers[0, :pairs], header_keys)
        try:
            header_keys.validate(full=True)
        except pa.ArrowInvalid:  # Java and the pure walk decode with replacement characters
            header_keys = pa.array(
                (
                    bytes(key).decode("utf-8", "replace")
                    for key in header_keys.cast(pa.binary()).to_pylist()
                ),
                pa.string(),
            )
        header_pairs = pa.StructArray.from_arrays(
            [header_keys, binary_column(pa.binary(), self._headers[1, :pairs], header_values)],
            fields=list(HEADER_TYPE.value_type),
        )
        return (
            binary_column(pa.binary(), self._rows[2, :n], keys),
            binary_column(pa.binary(), self._rows[3, :n], values),
            pa.Array.from_buffers(
                HEADER_TYPE,
                n,
                [None, pa.py_buffer(offsets_of(self._rows[4, :n]))],
                children=[header_pairs],
            ),
        )


def warm() -> None:
    """Load the walk for the arguments `Columns.walk` gives it (`wirecodecs.compiled.warm`)."""
    columns = Columns()
    load(_walk, readonly(b""), 0, columns._rows, columns._headers, *columns._bytes, columns._used)

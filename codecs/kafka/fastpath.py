"""The v2 record walk compiled with numba: the optional fast path of `decoder._v2_records`.

Same walk, over a numpy uint8 view of a records section: varints are decoded as Java reads
them (5 bytes for an int, 10 for a long, extra bits dropped), per-record values go into
numpy arrays, and keys and values (header ones apart) are gathered into one data buffer
per section, from which the Arrow columns are built without a Python object per record.

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

from wirecodecs.kafka.schema import HEADER_TYPE

_FAILED = -1  # a position no walk can reach: the batch needs the pure walk's error
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
def _gather(data, at, size, total):
    """Arrow buffers of two binary columns (keys, values) from the spans
    `data[at[c, i]:at[c, i] + size[c, i]]`, a negative size being null: offsets per column
    into one shared data buffer (the second column's start where the first ends), validity
    bitmaps and null counts per column. Few arrays: each one returned costs boxing time."""
    n = at.shape[1]
    offsets = np.empty((2, n + 1), np.int32)
    out = np.empty(total, np.uint8)
    validity = np.zeros((2, (n + 7) // 8), np.uint8)
    nulls = np.zeros(2, np.int64)
    end = 0
    for c in range(2):
        offsets[c, 0] = end
        for i in range(n):
            length = size[c, i]
            if length < 0:
                nulls[c] += 1
            else:
                validity[c, i >> 3] |= np.uint8(1 << (i & 7))
                out[end : end + length] = data[at[c, i] : at[c, i] + length]
                end += length
            offsets[c, i + 1] = end
    return offsets, out, validity, nulls


@njit(cache=True, nogil=True)
def _walk(data, count):
    """`count` records (§4.3) filling `data` exactly, or a `_FAILED` end position."""
    n = data.size
    deltas = np.empty((2, count), np.int64)  # offsetDelta, timestampDelta
    at = np.empty((2, count), np.int64)  # key, value
    size = np.empty((2, count), np.int64)
    header_at = np.full(count, -1, np.int64)
    total = 0
    header_total = 0
    pos = 0
    for i in range(count):
        bits, pos = _uvarint(data, pos, 5)  # length
        if pos == _FAILED:
            break
        end = pos + _zigzag(bits & _INT_BITS)
        bits, pos = _uvarint(data, pos + 1, 10)  # attributes (unused), timestampDelta
        if pos == _FAILED:
            break
        deltas[1, i] = _zigzag(bits)
        bits, pos = _uvarint(data, pos, 5)  # offsetDelta
        if pos == _FAILED:
            break
        deltas[0, i] = _zigzag(bits & _INT_BITS)
        for c in range(2):  # keyLength, valueLength: odd bits = negative = null
            bits, pos = _uvarint(data, pos, 5)
            if pos == _FAILED:
                break
            length = np.int64((bits & _INT_BITS) >> _ONE)
            at[c, i] = pos
            size[c, i] = -1 if bits & _ONE else length
            if size[c, i] >= 0:
                if length > n - pos:
                    pos = _FAILED
                    break
                pos += length
                total += length
        if pos == _FAILED:
            break
        if pos < n and data[pos] != 0:  # the pure walk reads headers only then
            header_at[i] = pos
        bits, pos = _uvarint(data, pos, 5)  # headersCount
        headers = _zigzag(bits & _INT_BITS)
        if pos == _FAILED or headers < 0:
            pos = _FAILED
            break
        header_total += headers
        for _ in range(headers):
            pos = _header(data, pos)[4]
            if pos == _FAILED:
                break
        if pos == _FAILED or pos != end:  # a negative length can declare end = _FAILED
            pos = _FAILED
            break
    if pos != n:  # gather nothing
        pos = _FAILED
        header_total = 0
        total = 0
        count = 0
    spans = _gather(data, at[:, :count], size[:, :count], total)
    header_rows, header_spans = _headers(data, header_at[:count], header_total)
    return pos, deltas, spans, header_rows, header_spans


@njit(cache=True, nogil=True)
def _header(data, pos):
    """One header (§4.3) at `pos`: key position and size (never null), value position and
    size (negative = null), then the next position, `_FAILED` if it overruns `data`."""
    n = data.size
    bits, key_at = _uvarint(data, pos, 5)
    key_size = _zigzag(bits & _INT_BITS)
    if key_at == _FAILED or key_size < 0 or key_size > n - key_at:
        return 0, 0, 0, 0, _FAILED
    bits, value_at = _uvarint(data, key_at + key_size, 5)
    value_size = _zigzag(bits & _INT_BITS)
    if value_at == _FAILED or value_size > n - value_at:
        return 0, 0, 0, 0, _FAILED
    return key_at, key_size, value_at, value_size, value_at + max(value_size, 0)


@njit(cache=True, nogil=True)
def _headers(data, header_at, total):
    """The headers of records whose header section starts at `header_at` (-1: none), in a
    walk already checked: list offsets per record, then gathered keys and values."""
    count = header_at.size
    rows = np.zeros(count + 1, np.int32)
    at = np.empty((2, total), np.int64)
    size = np.empty((2, total), np.int64)
    data_total = 0
    j = 0
    for i in range(count):
        if header_at[i] >= 0:
            bits, pos = _uvarint(data, header_at[i], 5)
            for _ in range(_zigzag(bits & _INT_BITS)):
                at[0, j], size[0, j], at[1, j], size[1, j], pos = _header(data, pos)
                data_total += size[0, j] + max(size[1, j], 0)
                j += 1
        rows[i + 1] = j
    return rows, _gather(data, at, size, data_total)


class Records(NamedTuple):
    """The per-record columns of one records section."""

    offset_deltas: np.ndarray
    ts_deltas: np.ndarray
    keys: pa.Array
    values: pa.Array
    headers: pa.Array | list  # HEADER_TYPE; [] (the pure walk's "none") if no record has any


def walk_v2(data: bytes, count: int) -> Records | None:
    """The records of a decompressed v2 records section, or None when the section is not
    exactly `count` well-formed records (the caller's pure walk then says why)."""
    end, deltas, spans, header_rows, header_spans = _walk(np.frombuffer(data, np.uint8), count)
    if end == _FAILED:
        return None
    keys, values = _binary_pair(pa.binary(), count, spans)
    headers = int(header_rows[-1])
    return Records(
        deltas[0],
        deltas[1],
        keys,
        values,
        _header_lists(header_rows, header_spans) if headers else [],
    )


def _binary_pair(key_type: pa.DataType, n: int, spans: tuple) -> tuple[pa.Array, pa.Array]:
    """The two columns that `_gather` filled, as Arrow arrays over its buffers."""
    offsets, data, validity, nulls = spans
    data = pa.py_buffer(data)
    return tuple(
        pa.Array.from_buffers(
            type_,
            n,
            [pa.py_buffer(validity[c]) if nulls[c] else None, pa.py_buffer(offsets[c]), data],
            null_count=int(nulls[c]),
        )
        for c, type_ in enumerate((key_type, pa.binary()))
    )


def _header_lists(rows: np.ndarray, spans: tuple) -> pa.Array:
    """The headers column of one section. Keys that are not UTF-8 are decoded with
    replacement characters, as Java and the pure walk do."""
    headers = int(rows[-1])
    keys, values = _binary_pair(pa.string(), headers, spans)
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid:
        keys = pa.array(
            (bytes(key).decode("utf-8", "replace") for key in keys.cast(pa.binary()).to_pylist()),
            pa.string(),
        )
    pairs = pa.StructArray.from_arrays([keys, values], fields=list(HEADER_TYPE.value_type))
    return pa.Array.from_buffers(
        HEADER_TYPE, len(rows) - 1, [None, pa.py_buffer(rows)], children=[pairs]
    )

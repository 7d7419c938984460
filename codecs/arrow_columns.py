"""Arrow columns over numpy buffers, as the compiled walks fill them: each column's values
back to back in one byte buffer, with one size per row (negative: null)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_MAX_OFFSET = 0x7FFF_FFFF  # Arrow's binary and list offsets are int32


def pooled(shape: int | tuple[int, ...], dtype: type) -> np.ndarray:
    """An uninitialised numpy array in memory from Arrow's pool, which reuses the pages of
    freed buffers: fresh buffers from the system cost a page fault per 4 KB, more than a
    decode writes into them (docs/performance.md, Kafka and InLong decoders)."""
    count = int(np.prod(shape))
    buffer = pa.allocate_buffer(count * np.dtype(dtype).itemsize)
    return np.frombuffer(buffer, dtype, count).reshape(shape)


def offsets_of(sizes: np.ndarray) -> np.ndarray:
    """Arrow int32 offsets of consecutive values of `sizes` (negative = null = empty);
    OverflowError past 2 GiB, where int32 would wrap."""
    out = np.zeros(sizes.size + 1, np.int64)
    np.cumsum(np.maximum(sizes, 0), out=out[1:])
    if out[-1] > _MAX_OFFSET:
        raise OverflowError(f"{out[-1]} bytes in one column exceed Arrow's 32-bit offsets")
    return out.astype(np.int32)


def validity(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    """Arrow's validity bitmap of the booleans `valid` (None when all are valid), and
    the null count."""
    nulls = valid.size - int(np.count_nonzero(valid))
    return (pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None), nulls


def binary_column(
    type_: pa.DataType, sizes: np.ndarray, data: np.ndarray, *, copy: bool = False
) -> pa.Array:
    """A binary-layout column (binary or string) over `data`, which holds its values back
    to back; `copy` when `data` is a buffer its owner fills again."""
    value_offsets = offsets_of(sizes)
    bitmap, nulls = validity(sizes >= 0)
    values = data[: value_offsets[-1]]
    buffers = [bitmap, pa.py_buffer(value_offsets), pa.py_buffer(values.copy() if copy else values)]
    return pa.Array.from_buffers(type_, sizes.size, buffers, null_count=nulls)

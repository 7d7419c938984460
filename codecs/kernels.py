"""Small numba kernels that more than one format's compiled walk calls. Imported only by
those walks (importing numba costs a process about half a second: `wirecodecs.compiled`)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def big_endian(data, pos, size):
    """The big-endian unsigned integer of `size` bytes at `data[pos]` (8 bytes wrap to the
    signed value); the caller has checked that they are there."""
    value = np.int64(0)
    for i in range(size):
        value = (value << 8) | np.int64(data[pos + i])
    return value

"""Small numba kernels that more than one format's compiled walk calls, the growth of the
buffers those walks fill, and what their `warm` functions share. Imported only by those
walks (importing numba costs a process about half a second: `wirecodecs.compiled`)."""

from __future__ import annotations

import numpy as np
from numba import njit, typeof
from numba.extending import intrinsic

from wirecodecs.arrow_columns import pooled


@njit(cache=True, nogil=True)
def big_endian(data, pos, size):
    """The big-endian unsigned integer of `size` bytes at `data[pos]` (8 bytes wrap to the
    signed value); the caller has checked that they are there."""
    value = np.int64(0)
    for i in range(size):
        value = (value << 8) | np.int64(data[pos + i])
    return value


@njit(cache=True, nogil=True)
def copy(out, at, src, pos, size):
    """`out[at:at + size] = src[pos:pos + size]` byte by byte, forwards (so a copy from
    fewer than `size` bytes back in the same array repeats its pattern, as snappy's copies
    need). A loop over unsigned indices, not a slice assignment: no negative-index check
    and no array views (each one's reference counted atomically); LLVM vectorises it, with
    a run-time check that the ranges do not overlap."""
    to = np.uintp(at)
    start = np.uintp(pos)
    for i in range(np.uintp(size)):
        out[to + i] = src[start + i]


@intrinsic
def unowned(typingctx, array):
    """`array` seen without its owner: the same data, shape and strides, no reference
    count. Numba counts references to an array with atomic operations each time an
    inlined reader takes it or a slice of it is made (in the Heka walk, a third of its
    time: the stream's bytes taken per token); only arrays that the caller holds for the
    whole call may be seen so, and no view of one may outlive the call."""

    def codegen(context, builder, signature, args):
        owned = context.make_array(signature.args[0])(context, builder, args[0])
        view = context.make_array(signature.return_type)(context, builder)
        context.populate_array(
            view,
            data=owned.data,
            shape=owned.shape,
            strides=owned.strides,
            itemsize=owned.itemsize,
            meminfo=None,
        )
        return view._getvalue()

    return array(array), codegen


def enlarged(
    buffer: np.ndarray, used: int, needed: int, axis: int = -1, empty=pooled
) -> np.ndarray:
    """`buffer` if its `axis` holds `needed` items, else a copy of its first `used` items
    along `axis` in one at least twice as large, made by `empty(shape, dtype)`: from
    Arrow's pool by default (`pooled`); `np.empty` for a walk whose buffers are all numpy's
    (the pool keeps what it is given back: Hercules' peak RSS 300 -> 347 MB on
    bench/hercules_decode.py's batch file)."""
    size = buffer.shape[axis]
    if needed <= size:
        return buffer
    shape = list(buffer.shape)
    shape[axis] = max(2 * size, needed)
    bigger = empty(tuple(shape), buffer.dtype)
    kept = [slice(None)] * buffer.ndim
    kept[axis] = slice(used)
    bigger[tuple(kept)] = buffer[tuple(kept)]
    return bigger


def readonly(data) -> np.ndarray:
    """A read-only uint8 view of `data` (bytes-like, or a uint8 array): the walks take
    their input as this one type, whatever the caller holds, so that numba has one
    specialization of each to compile or load (`load`)."""
    view = np.frombuffer(data, np.uint8)
    view.flags.writeable = False
    return view


def load(function, *args) -> None:
    """Load compiled `function`'s machine code for arguments of the types of `args` from
    numba's cache (compiling it into the cache first if it is not there), without
    calling it: a walk's `warm` does it for every call it makes from Python."""
    function.compile(tuple(typeof(arg) for arg in args))

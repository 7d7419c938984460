"""Small numba kernels that more than one format's compiled walk calls. Imported only by
those walks (importing numba costs a process about half a second: `wirecodecs.compiled`)."""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import intrinsic


@njit(cache=True, nogil=True)
def big_endian(data, pos, size):
    """The big-endian unsigned integer of `size` bytes at `data[pos]` (8 bytes wrap to the
    signed value); the caller has checked that they are there."""
    value = np.int64(0)
    for i in range(size):
        value = (value << 8) | np.int64(data[pos + i])
    return value


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

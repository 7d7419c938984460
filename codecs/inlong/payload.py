"""inlong messages carried as Kafka record values (`registry.PayloadCodec`).

The values are walked like the frames of a file (`decoder._frames`): runs of them by the
compiled walk into one row buffer, the values it hands over by `message.parse` (which
names the error of a value that does not read). Rows stay in columns throughout; the
buffer is neither flushed nor cut in chunks, as the rows of a run of values come back as
one batch (built in one go: as fast as building batch-sized parts and joining them).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from wirecodecs.errors import DecodeError
from wirecodecs.inlong import bounds
from wirecodecs.inlong import message as msg
from wirecodecs.inlong.decoder import ROW_SCHEMA, WALK, RowBuffer
from wirecodecs.inlong.options import InlongOptions
from wirecodecs.registry import CarriedRows

VALUE_SCHEMA = pa.schema(list(ROW_SCHEMA)[1:])  # all but the lineage pair
UNBOUNDED = 1 << 62  # no batch or chunk bound: the run's rows are one batch


def decode_values(values: pa.BinaryArray, opts: InlongOptions) -> CarriedRows:
    """Every value as one message: its rows, and the values that do not read."""
    count = len(values)
    _, offsets_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int32)[values.offset : values.offset + count + 1]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer else np.empty(0, np.uint8)
    sizes = np.diff(offsets)
    # message start and length, the row's byte_offset (here: the value's index), bytes
    frames = np.stack([offsets[:-1], sizes, np.arange(count), sizes]).astype(np.int64)
    limits = np.array([opts.max_decompressed_bytes, *[UNBOUNDED] * 4], np.int64)
    # one batch: room from the start for the bodies of uncompressed values, which the
    # values hold (compressed ones grow it once or twice), rather than doubling up to them
    rows = RowBuffer(None, limits, body_bytes=data.size)
    rows.compiled(data.size)
    errors: list[tuple[int, DecodeError]] = []
    first = 0
    while first < count:
        status, first, _ = rows.walk(data, frames, first, count)
        if status == bounds.FALLBACK:
            start = int(offsets[first])
            value = memoryview(data)[start : start + int(sizes[first])]
            try:
                message = msg.parse(value, opts.max_decompressed_bytes)
            except DecodeError as err:
                errors.append((first, err))
            else:
                for items in message.items():
                    rows.append(first, message.header, items)
            first += 1
    WALK.count(data.size)
    batch = rows.take()
    if batch is None:
        empty = pa.RecordBatch.from_pylist([], schema=VALUE_SCHEMA)
        return CarriedRows(empty, pa.array([], pa.int32()), errors)
    value_index = batch.column(0).cast(pa.int32())
    return CarriedRows(
        pa.RecordBatch.from_arrays(batch.columns[1:], schema=VALUE_SCHEMA), value_index, errors
    )

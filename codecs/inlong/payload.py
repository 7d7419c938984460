"""inlong messages carried as Kafka record values (`registry.PayloadCodec`).

The values are walked like the frames of a file (`decoder._frames`): runs of them by the
compiled walk into one row buffer, the values it hands over by `message.parse` (which
names the error of a value that does not read). Rows stay in columns throughout. The row
buffer is cut where a file's batches would end, and the parts joined at the end (one
batch for the run): columns of a batch's size build faster than one huge set (which
took 1.6 times as long), and a message is never cut in chunks.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from wirecodecs.errors import DecodeError
from wirecodecs.inlong import bounds, decoder
from wirecodecs.inlong import message as msg
from wirecodecs.inlong.decoder import ROW_SCHEMA, RowBuffer
from wirecodecs.inlong.options import InlongOptions
from wirecodecs.registry import CarriedRows

VALUE_SCHEMA = pa.schema(list(ROW_SCHEMA)[1:])  # all but the lineage pair
UNBOUNDED = 1 << 62  # no chunk bound: a message is never cut


def decode_values(
    values: pa.BinaryArray, opts: InlongOptions, *, compiled_walk: bool | None = None
) -> CarriedRows:
    """Every value as one message: its rows, and the values that do not read
    (`compiled_walk` as `decoder.decode` takes it)."""
    count = len(values)
    _, offsets_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int32)[values.offset : values.offset + count + 1]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer else np.empty(0, np.uint8)
    sizes = np.diff(offsets)
    # message start and length, the row's byte_offset (here: the value's index), bytes
    frames = np.stack([offsets[:-1], sizes, np.arange(count), sizes]).astype(np.int64)
    limits = decoder.file_limits(opts)
    limits[bounds.L_CHUNK_ROWS] = limits[bounds.L_CHUNK_BYTES] = UNBOUNDED
    rows = RowBuffer(None, limits, compiled_walk=compiled_walk)
    rows.compiled(data.size)
    errors: list[tuple[int, DecodeError]] = []
    first = 0
    while first < count:
        status, first, _ = rows.walk(data, frames, first, count)
        if status == bounds.FLUSH:
            rows.cut()
        elif status == bounds.FALLBACK:
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
    decoder.read(data.size)
    batch = rows.take()
    if batch is None:
        empty = pa.RecordBatch.from_pylist([], schema=VALUE_SCHEMA)
        return CarriedRows(empty, pa.array([], pa.int32()), errors)
    value_index = batch.column(0).cast(pa.int32())
    return CarriedRows(
        pa.RecordBatch.from_arrays(batch.columns[1:], schema=VALUE_SCHEMA), value_index, errors
    )

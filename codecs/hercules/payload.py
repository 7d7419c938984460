"""Hercules events carried as Kafka record values (`registry.PayloadCodec`): one event per
value, read by the file decoder's compiled walk into the same column buffers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from wirecodecs.errors import DecodeError
from wirecodecs.hercules.decoder import compiled_walk, read_value
from wirecodecs.hercules.options import HerculesOptions
from wirecodecs.registry import CarriedRows


def decode_values(values: pa.BinaryArray, opts: HerculesOptions) -> CarriedRows:
    """Every value as one event that fills it exactly: the rows in columns, and the values
    that do not read. The compiled walk takes what it can; a value it stops at is read by
    the pure reader (`decoder.read_value`), which raises the exact DecodeError or gives
    the row the walk leaves to it (invalid UTF-8, duplicate keys)."""
    count = len(values)
    _, offsets_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int32)[values.offset : values.offset + count + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer else np.empty(0, np.uint8)
    compiled = compiled_walk()
    columns = compiled.Columns.for_values(opts.max_depth, count, int(offsets[-1] - offsets[0]))
    errors: list[tuple[int, DecodeError]] = []
    first = 0
    while first < count:
        stopped, first = columns.walk_values(data, offsets, first, opts.max_event_bytes)
        if not stopped:
            break
        value = data[offsets[first] : offsets[first + 1]].tobytes()
        try:
            event, entries = read_value(value, opts)
        except DecodeError as err:
            errors.append((first, err))
        else:
            columns.add_pure(first, event, entries)
        first += 1
    value_index = columns.events[compiled.E_OFFSET, : columns.rows].astype(np.int32)
    return CarriedRows(columns.batch(None), pa.array(value_index), errors)

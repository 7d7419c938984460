"""hercules messages carried as Kafka record values (`registry.PayloadCodec`).

First step: each value through `decode_value`'s row dicts; to be replaced by columns.
"""

from __future__ import annotations

import pyarrow as pa

from wirecodecs.errors import DecodeError
from wirecodecs.hercules.decoder import decode_value
from wirecodecs.hercules.options import HerculesOptions
from wirecodecs.hercules.schema import HERCULES_SCHEMA
from wirecodecs.registry import CarriedRows

VALUE_SCHEMA = pa.schema(list(HERCULES_SCHEMA)[2:])  # all but the lineage pair


def decode_values(values: pa.BinaryArray, opts: HerculesOptions) -> CarriedRows:
    """Every value as one message: its rows, and the values that do not read."""
    rows: list[dict] = []
    value_index: list[int] = []
    errors: list[tuple[int, DecodeError]] = []
    for index, value in enumerate(values.to_pylist()):
        try:
            decoded = decode_value(value, opts)
        except DecodeError as err:
            errors.append((index, err))
            continue
        rows.extend(decoded)
        value_index.extend([index] * len(decoded))
    batch = pa.RecordBatch.from_pylist(rows, schema=VALUE_SCHEMA)
    return CarriedRows(batch, pa.array(value_index, pa.int32()), errors)

"""Shared by the InLong codec tests: run the decoder, read the golden sidecars."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import decoding
import pyarrow as pa

from wirecodecs.inlong import INLONG
from wirecodecs.inlong.options import InlongOptions
from wirecodecs.inlong.payload import decode_values
from wirecodecs.inlong.schema import INLONG_SCHEMA
from wirecodecs.registry import CarriedRows

DATA = Path(__file__).resolve().parents[2] / "data" / "inlong"
MAP_COLUMNS = ("attributes", "private_attributes")
CASES = sorted(path.stem for path in DATA.glob("*.bin"))


class Decoded(decoding.Decoded):
    @property
    def rows(self) -> list[dict]:
        """Rows as dicts, map columns as dicts (Arrow gives key/value pair lists)."""
        rows = super().rows
        for row in rows:
            for name in MAP_COLUMNS:
                if row[name] is not None:
                    row[name] = dict(row[name])
        return rows


def decode(data, source: str = "mem.bin", **options) -> Decoded:
    """Run the InLong file decoder over bytes (or a stream) to the end."""
    got = decoding.decode_all(data, source, "inlong", **options)
    return Decoded(got.accounting, got.items)


def checked(data: bytes, stream=None, **options) -> Decoded:
    """Decode and assert what holds for any input: only batches and quarantined items,
    balanced accounting, rows counted, quarantined regions in order with their heads."""
    got = decode(data if stream is None else stream, **options)
    acc = got.accounting
    batch_rows = options.get("batch_rows", INLONG.options().batch_rows)
    decoding.check_items(got, data, INLONG_SCHEMA, batch_rows)
    assert acc.bytes_skipped == 0
    assert acc.records_good == sum(batch.num_rows for batch in got.batches)
    decoding.check_quarantined(got, data)
    assert acc.stop_reason in ("eof", "truncated_tail", "length_out_of_range")
    return got


def carried(*values: bytes, **options) -> CarriedRows:
    """Decode record values as the Kafka carrier does (`decode_values`), map columns as
    dicts in `rows_of`."""
    return decode_values(pa.array(values, pa.binary()), InlongOptions(**options))


def rows_of(batch: pa.RecordBatch) -> list[dict]:
    rows = batch.to_pylist()
    for row in rows:
        for name in MAP_COLUMNS:
            if row[name] is not None:
                row[name] = dict(row[name])
    return rows


def sidecar(case: str) -> dict:
    return json.loads(gzip.decompress((DATA / f"{case}.json.gz").read_bytes()))


def vector(case: str) -> bytes:
    return (DATA / f"{case}.bin").read_bytes()


def b64(text: str) -> bytes:
    return base64.b64decode(text)

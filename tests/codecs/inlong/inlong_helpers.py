"""Shared by the InLong codec tests: run the decoder, read the golden sidecars."""

from __future__ import annotations

import base64
import gzip
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from wirecodecs import FileAccounting, Quarantined
from wirecodecs.accounting import HEAD_BYTES
from wirecodecs.inlong import INLONG
from wirecodecs.inlong.schema import INLONG_SCHEMA
from wirecodecs.registry import resolve_options

DATA = Path(__file__).resolve().parents[2] / "data" / "inlong"
MAP_COLUMNS = ("attributes", "private_attributes")
CASES = sorted(path.stem for path in DATA.glob("*.bin"))


@dataclass
class Decoded:
    accounting: FileAccounting
    items: list = field(default_factory=list)

    @property
    def batches(self) -> list[pa.RecordBatch]:
        return [item for item in self.items if isinstance(item, pa.RecordBatch)]

    @property
    def quarantined(self) -> list[Quarantined]:
        return [item for item in self.items if isinstance(item, Quarantined)]

    @property
    def rows(self) -> list[dict]:
        """Rows as dicts, map columns as dicts (Arrow gives key/value pair lists)."""
        rows = [row for batch in self.batches for row in batch.to_pylist()]
        for row in rows:
            for name in MAP_COLUMNS:
                if row[name] is not None:
                    row[name] = dict(row[name])
        return rows


def decode(data, source: str = "mem.bin", **options) -> Decoded:
    """Run the InLong file decoder over bytes (or a stream) to the end."""
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    got = Decoded(FileAccounting(source, "inlong"))
    got.items.extend(
        INLONG.decode(stream, source, got.accounting, resolve_options(INLONG, options))
    )
    return got


def checked(data: bytes, stream=None, **options) -> Decoded:
    """Decode and assert what holds for any input: only batches and quarantined items,
    balanced accounting, rows counted, quarantined regions in order with their heads."""
    got = decode(data if stream is None else stream, **options)
    acc = got.accounting
    batch_rows = options.get("batch_rows", INLONG.options["batch_rows"])
    for item in got.items:
        assert isinstance(item, pa.RecordBatch | Quarantined)
    for batch in got.batches:
        assert batch.schema == INLONG_SCHEMA
        assert 0 < batch.num_rows <= batch_rows
    assert acc.balanced
    assert acc.bytes_total == len(data)
    assert acc.bytes_skipped == 0
    assert acc.records_good == sum(batch.num_rows for batch in got.batches)
    assert acc.bytes_quarantined == sum(q.length for q in got.quarantined)
    end = 0
    for q in got.quarantined:
        assert end <= q.byte_offset and q.length > 0
        end = q.byte_offset + q.length
        assert q.head == data[q.byte_offset : q.byte_offset + min(q.length, HEAD_BYTES)]
    assert acc.stop_reason in ("eof", "truncated_tail", "length_out_of_range")
    return got


def sidecar(case: str) -> dict:
    return json.loads(gzip.decompress((DATA / f"{case}.json.gz").read_bytes()))


def vector(case: str) -> bytes:
    return (DATA / f"{case}.bin").read_bytes()


def b64(text: str) -> bytes:
    return base64.b64decode(text)

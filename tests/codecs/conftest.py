"""Shared codec test helper: decode a whole stream and keep everything it yields."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pyarrow as pa
import pytest

from wirecodecs import FileAccounting, Quarantined, get
from wirecodecs.registry import resolve_options


@dataclass
class Decoded:
    """Everything one decode call yielded, in order, and the file's accounting."""

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
        return [row for batch in self.batches for row in batch.to_pylist()]


def decode_all(stream_or_bytes, source: str = "mem.log", fmt: str = "kafka", **options) -> Decoded:
    """Run a registered decoder to the end, keeping every yielded item."""
    wire = get(fmt)
    stream = (
        io.BytesIO(stream_or_bytes)
        if isinstance(stream_or_bytes, bytes | bytearray)
        else stream_or_bytes
    )
    decoded = Decoded(FileAccounting(source, fmt))
    for item in wire.decode(stream, source, decoded.accounting, resolve_options(wire, options)):
        decoded.items.append(item)
    return decoded


@pytest.fixture(scope="session")
def decode():
    """`decode(bytes_or_stream, source=..., **options) -> Decoded` for the kafka format."""
    return decode_all

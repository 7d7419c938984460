"""Shared codec test helper: decode a whole stream and keep everything it yields."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pyarrow as pa
import pytest

from wirecodecs import FileAccounting, Quarantined, get
from wirecodecs.kafka import decoder as kafka_decoder
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


WALKS = {  # decoder.COMPILED_COLUMNS for each path; the compiled one is skipped without numba
    "pure": lambda: None,
    "compiled": lambda: pytest.importorskip("wirecodecs.kafka.fastpath").Columns,
}


@pytest.fixture(scope="session", params=list(WALKS))
def decode(request):
    """`decode(bytes_or_stream, source=..., **options) -> Decoded` for the kafka format,
    once with the pure-Python v2 record walk and once with the compiled one (set for the
    call only, so tests that call `decode_all` directly keep the decoder's own choice)."""
    walk = WALKS[request.param]()
    if walk is not None:  # compile (or load from cache) now, not inside a timed example
        assert walk().walk(b"\x16\x00\x00\x00\x01\x02v\x02\x02k\x02x", 1) is not None

    def decode_with_walk(*args, **options) -> Decoded:
        chosen = kafka_decoder.COMPILED_COLUMNS
        kafka_decoder.COMPILED_COLUMNS = walk
        try:
            return decode_all(*args, **options)
        finally:
            kafka_decoder.COMPILED_COLUMNS = chosen

    return decode_with_walk

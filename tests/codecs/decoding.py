"""Helpers shared by the codec tests of every format: run a registered decoder to the end
and keep what it yields, streams with short reads, and the checks that hold for any input.

Importable as `decoding` from any test under tests/codecs (pytest puts this folder on
sys.path for its conftest.py).
"""

from __future__ import annotations

import io
import tracemalloc
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from wirecodecs import FileAccounting, Quarantined, get
from wirecodecs.accounting import HEAD_BYTES
from wirecodecs.options import resolve


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
    for item in wire.decode(stream, source, decoded.accounting, resolve(wire, options)):
        decoded.items.append(item)
    return decoded


def as_declared(fmt: str, options: Mapping[str, object]) -> dict:
    """Test settings (a batch size, bounds) as format `fmt` takes them: those it declares,
    a carried format's under each part that declares them, so that one setting covers
    plain and carried formats alike."""
    declared = get(fmt).options

    def kept(kind) -> dict:
        return {name: value for name, value in options.items() if name in kind.names()}

    if isinstance(declared, Mapping):
        return {part: kept(kind) for part, kind in declared.items()}
    return kept(declared)


class ChunkedReads(io.RawIOBase):
    """A stream whose reads return at most the next of `sizes` bytes, cycling."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self._data = io.BytesIO(data)
        self._sizes = sizes
        self._next = 0

    def readable(self) -> bool:
        return True

    def readinto(self, into) -> int:
        most = self._sizes[self._next % len(self._sizes)]
        self._next += 1
        return self._data.readinto(memoryview(into)[: min(most, len(into))])


def check_items(got: Decoded, data: bytes, schema: pa.Schema, batch_rows: int) -> None:
    """Only row batches and quarantined items; every batch of `schema` with 1 to
    `batch_rows` rows; the accounting balanced over all of `data`."""
    for item in got.items:
        assert isinstance(item, pa.RecordBatch | Quarantined)
    for batch in got.batches:
        assert batch.schema == schema
        assert 0 < batch.num_rows <= batch_rows
    assert got.accounting.balanced
    assert got.accounting.bytes_total == len(data)


def check_quarantined(got: Decoded, data: bytes) -> int:
    """Quarantined regions in file order, not empty, not overlapping, each with the head
    of its bytes, adding up to the accounting's quarantined bytes; returns the last end."""
    assert got.accounting.bytes_quarantined == sum(q.length for q in got.quarantined)
    end = 0
    for q in got.quarantined:
        assert end <= q.byte_offset and q.length > 0
        end = q.byte_offset + q.length
        assert q.head == data[q.byte_offset : q.byte_offset + min(q.length, HEAD_BYTES)]
    return end


def outcome(got: Decoded) -> tuple:
    """What two decodes of the same bytes must agree on: rows, quarantine, accounting."""
    return (
        got.rows,
        [(q.byte_offset, q.length, q.kind, q.detail) for q in got.quarantined],
        got.accounting.to_dict(),
    )


def peak_bytes(decode, data: bytes, **options) -> tuple[int, Decoded]:
    """tracemalloc's peak while `decode` runs over `data` as a stream, and what it got.

    A first untraced run pays the one-off costs (lazy imports, caches), so the figure is
    the same whichever test runs first."""
    decode(io.BytesIO(data), **options)
    stream = io.BytesIO(data)
    tracemalloc.start()
    try:
        got = decode(stream, **options)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, got

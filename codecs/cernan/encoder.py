"""Encoder for cernan Avro source packets: what a client writes to port 2002.

For round-trip tests, mutation tests, sample days and the benchmark. Containers come from
fastavro's own writer (one block per `records_per_block` datums); frames are built as
pycernan 0.0.16 builds them, optionally with its unicode bug (`char_counted_kv`: KV
lengths counted in characters: docs/cernan.md, "Landings and the walk").
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fastavro import parse_schema
from fastavro.write import Writer

_LENGTH = struct.Struct(">I")
_HEADER = struct.Struct(">IIQQ")  # version, control, id, shard_by
_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")


def container(
    schema: object,
    records: Sequence,
    *,
    codec: str = "null",
    records_per_block: int | None = None,
    sync_marker: bytes = bytes(range(16)),
    metadata: Mapping[str, str] | None = None,
) -> bytes:
    """An Avro object container file of `records`; `records_per_block` datums per block
    (all in one block when None; a header-only file when there are no records)."""
    out = io.BytesIO()
    writer = Writer(
        out,
        parse_schema(schema),
        codec=codec,
        sync_interval=1 << 30,  # blocks end where this function flushes, not by size
        metadata=dict(metadata or {}),
        sync_marker=sync_marker,
    )
    per_block = records_per_block or max(1, len(records))
    for index, record in enumerate(records):
        writer.write(record)
        if (index + 1) % per_block == 0:
            writer.flush()
    writer.flush()
    return out.getvalue()


@dataclass(frozen=True)
class Packet:
    """One frame: header fields, v2 KV pairs (ignored for v1) and the Avro bytes."""

    avro: bytes
    version: int = 2
    control: int = 1  # bit 0: SYNC
    id: int = 0
    shard_by: int = 0
    kv: Sequence[tuple[bytes | str, bytes | str]] = field(default_factory=tuple)
    char_counted_kv: bool = False  # pycernan's bug: lengths are len(str), not bytes


def _kv_bytes(kv: Iterable[tuple[bytes | str, bytes | str]], char_counted: bool) -> bytes:
    pairs = list(kv)
    parts = [_U8.pack(len(pairs))]
    for key, value in pairs:
        key_bytes = key.encode("utf-8") if isinstance(key, str) else key
        value_bytes = value.encode("utf-8") if isinstance(value, str) else value
        key_len = len(key) if char_counted else len(key_bytes)
        value_len = len(value) if char_counted else len(value_bytes)
        parts += [_U8.pack(key_len), key_bytes, _U16.pack(value_len), value_bytes]
    return b"".join(parts)


def payload(packet: Packet) -> bytes:
    """The frame without its length prefix."""
    header = _HEADER.pack(packet.version, packet.control, packet.id, packet.shard_by)
    kv = _kv_bytes(packet.kv, packet.char_counted_kv) if packet.version == 2 else b""
    return header + kv + packet.avro


def frame(packet: Packet, *, length: int | None = None) -> bytes:
    """Length prefix (payload bytes, excluding itself; or `length` to forge one) + payload."""
    body = payload(packet)
    return _LENGTH.pack(len(body) if length is None else length) + body


def encode(packets: Iterable[Packet]) -> bytes:
    """A dump: frames back to back."""
    return b"".join(frame(packet) for packet in packets)

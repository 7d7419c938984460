"""One cernan packet: its length prefix, 24-byte header, v2 KV section and Avro container
(docs/cernan.md, "Byte layout"), read from a complete frame without raising for bad bytes.

The container itself is walked by `avro.py`; what becomes of a packet (rows, a packets
row, a quarantined frame) is the walk's and `rows.py`'s business.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from wirecodecs.cernan import avro
from wirecodecs.cernan.avro import NeedsPurePath, PacketError

LENGTH = struct.Struct(">I")  # payload bytes after the prefix
HEADER = struct.Struct(
    ">I"  # version: 1 or 2 (cernan reads < 2 as v1 and >= 2 as v2)
    "I"  # control: bit 0 SYNC, the rest reserved
    "Q"  # id: echoed in the ACK
    "Q"  # shard_by: cernan's order_by, the Kafka key
)
PREFIX = LENGTH.size
V1, V2 = 1, 2  # header versions: v2 puts a KV section before the container
CONTROL_SYNC = 1  # control bit 0: the client waits for an ACK; the other bits are reserved
_U16 = struct.Struct(">H")
CERNAN_MAX_PAYLOAD = 1 << 20  # cernan >= 0.9.0 closes the connection above this
MAX_DECOMPRESSED_BYTES = 64 << 20  # per Avro block (option `max_decompressed_bytes`)


@dataclass
class Packet:
    """What one complete frame held: header, KV, container facts, datums or the error."""

    offset: int
    length: int
    version: int | None = None
    control: int | None = None
    id: int | None = None
    shard_by: int | None = None
    kv: list[tuple[bytes, bytes]] | None = None
    kv_section_length: int | None = None
    avro_offset: int | None = None  # where the container starts in the file
    avro_length: int | None = None
    avro_sha256: str | None = None
    container: avro.Container | None = None
    datums: list = field(default_factory=list)  # empty when the compiled walk rendered them
    records: int = 0  # datums of an ok packet
    rendered: object = None  # the datum column's values (`read_packet`'s `render`)
    warnings: list[str] = field(default_factory=list)
    error: PacketError | None = None
    resynced: bool = False


def read_packet(
    frame: memoryview,
    offset: int,
    reader=None,
    max_decompressed: int = MAX_DECOMPRESSED_BYTES,
    render: Callable[[Packet], object] | None = None,
    compiled: bool = False,
) -> Packet:
    """Decode one complete frame (length prefix included); never raises for bad bytes:
    the packet's `error` says what was wrong (`reader`: the expected datum schema;
    `render`: turns the datums into what the records table holds, `packet.rendered`;
    `compiled`: blocks go to JSON text by the compiled walk where it can take them, the
    packet is read again without it where it cannot)."""
    length = len(frame) - PREFIX
    packet = Packet(offset, length)
    payload = frame[PREFIX:]
    try:
        _read_payload(packet, payload, offset + PREFIX, reader, max_decompressed, compiled)
        if render is not None:
            packet.rendered = _rendered(render, packet)
    except PacketError as err:
        if err.stage == "avro_block" and err.container is not None:
            packet.container = err.container
        if err.code in ("kv_truncated", "avro_bad_magic") and _char_counted_kv(payload):
            err.detail += (
                "; written by the pycernan unicode bug: KV lengths count characters, "
                "not UTF-8 bytes"
            )
        packet.error = err
        packet.datums = []
        packet.records = 0
    except NeedsPurePath:
        return read_packet(frame, offset, reader, max_decompressed, render)
    return packet


def _rendered(render: Callable[[Packet], object], packet: Packet) -> object:
    """`render(packet)`; a datum it cannot take (too deeply nested, a value outside the
    typed column's range) fails the packet, not the file."""
    try:
        return render(packet)
    except Exception as exc:  # msgspec, json, pyarrow and converters raise various types
        err = PacketError("avro_block", "avro_datum_render_failed", f"{type(exc).__name__}")
        err.container = packet.container
        err.lost = packet.records
        raise err from None


def _read_payload(
    packet: Packet, payload: memoryview, at: int, reader, max_bytes: int, compiled: bool
) -> None:
    if len(payload) < HEADER.size:
        raise PacketError("header", "payload_too_short", f"{len(payload)} < {HEADER.size}")
    packet.version, packet.control, packet.id, packet.shard_by = HEADER.unpack_from(payload)
    if packet.length > CERNAN_MAX_PAYLOAD:
        packet.warnings.append("exceeds_cernan_max_payload")
    if packet.version not in (V1, V2):
        raise PacketError("header", "unsupported_version", str(packet.version))
    if packet.control & ~CONTROL_SYNC:
        packet.warnings.append("reserved_control_bits")
    start = HEADER.size
    if packet.version == V2:
        packet.kv, end = read_kv(payload)
        packet.kv_section_length = end - start
        _kv_warnings(packet.kv, packet.warnings)
        start = end
    section = payload[start:]
    packet.avro_offset = at + start
    packet.avro_length = len(section)
    packet.avro_sha256 = hashlib.sha256(section).hexdigest()
    container = avro.read_header(section, packet.warnings)
    packet.container = container
    avro.read_blocks(container, section, max_bytes, reader, compiled)
    packet.datums = container.datums
    packet.records = sum(container.block_counts)


def read_kv(payload: memoryview) -> tuple[list[tuple[bytes, bytes]], int]:
    """The v2 KV section (#KV u8, then u8 key length, key, u16 value length, value)."""
    end = len(payload)
    pos = HEADER.size
    if pos >= end:
        raise PacketError("kv", "kv_truncated", "no #KV byte")
    count = payload[pos]
    pos += 1
    pairs = []
    for index in range(count):
        if pos >= end:
            raise PacketError("kv", "kv_truncated", f"pair {index}: key length")
        size = payload[pos]
        pos += 1
        if size > end - pos:
            raise PacketError("kv", "kv_truncated", f"pair {index}: key bytes ({size} declared)")
        key = bytes(payload[pos : pos + size])
        pos += size
        if end - pos < _U16.size:
            raise PacketError("kv", "kv_truncated", f"pair {index}: value length")
        (size,) = _U16.unpack_from(payload, pos)
        pos += _U16.size
        if size > end - pos:
            raise PacketError("kv", "kv_truncated", f"pair {index}: value bytes ({size} declared)")
        pairs.append((key, bytes(payload[pos : pos + size])))
        pos += size
    return pairs, pos


def _kv_warnings(pairs: list[tuple[bytes, bytes]], warnings: list[str]) -> None:
    keys = [key for key, _ in pairs]
    if len(set(keys)) < len(keys):
        warnings.append("duplicate_kv_key")
    if any(text_or_none(key) is None for key in keys):
        warnings.append("kv_key_not_utf8")


def text_or_none(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _char_counted_kv(payload: memoryview) -> bool:
    """True when the KV section parses with its lengths read as character counts of
    UTF-8 text (pycernan <= 0.0.16 sends `len(str)`) and the container magic follows:
    the packet came from that client's unicode bug."""
    data = bytes(payload)
    if len(data) <= HEADER.size or int.from_bytes(data[:4], "big") != V2:
        return False
    pos = HEADER.size + 1
    wide = False
    for _ in range(data[HEADER.size]):
        for width in (1, 2):
            if pos + width > len(data):
                return False
            chars = int.from_bytes(data[pos : pos + width], "big")
            pos += width
            end = _utf8_chars_end(data, pos, chars)
            if end is None:
                return False
            wide = wide or end - pos != chars
            pos = end
    return wide and data[pos : pos + len(avro.MAGIC)] == avro.MAGIC


def _utf8_chars_end(data: bytes, pos: int, chars: int) -> int | None:
    """Where `chars` UTF-8 characters starting at `pos` end, or None if they do not fit."""
    for _ in range(chars):
        if pos >= len(data):
            return None
        lead = data[pos]
        pos += 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return pos if pos <= len(data) else None

"""Hercules event writer: events, gate batches and LZ4 gate bodies (docs/hercules.md,
"Byte layout").

Writes what Hercules' Java `EventWriter` / `EventWriterUtil` write, so that sample days,
round-trip tests and the benchmark exercise what lands in production; unlike Java it
refuses what the format cannot hold (over 65 535 tags, a key over 255 bytes) instead of
wrapping. The decoder never imports this module.
"""

from __future__ import annotations

import struct
import uuid as uuidlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import lz4.block

from wirecodecs.hercules.event import TYPE_CODES

_SCALARS = {  # type name -> struct code for a plain value
    "Byte": "B",
    "Short": "h",
    "Integer": "i",
    "Long": "q",
    "Float": "f",
    "Double": "d",
}
_BITS = {"Float": "I", "Double": "Q"}  # a Float/Double given as an int is its raw bits
_EVENT_HEAD = struct.Struct(">Bq16s")  # version, timestamp ticks, uuid; then the payload
_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class Value:
    """A typed Hercules value.

    `value` by type: Byte 0..255, Short/Integer/Long int, Flag bool, Float/Double float
    (or an int: the raw IEEE bits), String str or bytes, UUID `uuid.UUID` or 16 bytes,
    Null None, Container a list of (key, Value) tags, Vector a list of elements of
    `element_type` given as that type's `value` (Vector elements: Values of type Vector).
    """

    type: str
    value: object = None
    element_type: str | None = None


Tag = tuple[str | bytes, Value]


@dataclass(frozen=True)
class Event:
    """An event as a producer builds it; `tags` in wire order (duplicates allowed)."""

    timestamp: int  # 100-ns ticks since 1970
    uuid: uuidlib.UUID
    tags: Sequence[Tag] = field(default_factory=list)
    version: int = 1


def encode_event(event: Event) -> bytes:
    """One event exactly as a Kafka record value holds it."""
    out = bytearray(_EVENT_HEAD.pack(event.version, event.timestamp, event.uuid.bytes))
    _container(out, event.tags)
    return bytes(out)


def encode_batch(events: Iterable[bytes]) -> bytes:
    """A gate batch (/stream/send body): int32 count, then the encoded events."""
    events = list(events)
    return _I32.pack(len(events)) + b"".join(events)


def lz4_body(data: bytes) -> bytes:
    """The body of a `Content-Encoding: lz4` request: one LZ4 block, no size prefix."""
    return lz4.block.compress(data, store_size=False)


def _container(out: bytearray, tags: Sequence[Tag]) -> None:
    if len(tags) > 0xFFFF:
        raise ValueError(f"{len(tags)} tags: a container holds at most 65535")
    out += _U16.pack(len(tags))
    for key, value in tags:
        raw = key.encode() if isinstance(key, str) else key
        if len(raw) > 0xFF:
            raise ValueError(f"tag key of {len(raw)} bytes: at most 255")
        out += _U8.pack(len(raw))
        out += raw
        out += _U8.pack(TYPE_CODES[value.type])
        _payload(out, value.type, value.value, value.element_type)


def _payload(out: bytearray, type_: str, value, element_type: str | None) -> None:
    """A value's bytes after its type byte (also a vector element's bytes)."""
    if type_ in _SCALARS:
        code = _BITS[type_] if type_ in _BITS and isinstance(value, int) else _SCALARS[type_]
        out += struct.pack(">" + code, value)
    elif type_ == "Flag":
        out += b"\x01" if value else b"\x00"
    elif type_ == "String":
        raw = value.encode() if isinstance(value, str) else value
        out += _I32.pack(len(raw))
        out += raw
    elif type_ == "UUID":
        out += value.bytes if isinstance(value, uuidlib.UUID) else value
    elif type_ == "Null":
        pass
    elif type_ == "Container":
        _container(out, value)
    elif type_ == "Vector":
        out += _U8.pack(TYPE_CODES[element_type])
        out += _I32.pack(len(value))
        for element in value:
            if element_type == "Vector":
                _payload(out, "Vector", element.value, element.element_type)
            else:
                _payload(out, element_type, element, None)
    else:
        raise ValueError(f"unknown Hercules type {type_!r}")

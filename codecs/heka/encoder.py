"""Heka stream encoder: Messages to protobuf bodies, framed and optionally signed.

Used by the sample writer and the round-trip tests. Bytes follow Heka's Go client
(client/encoders.go): fields in ascending number order, repeated numerics packed (or
unpacked one tag per value, as lua_sandbox writes single values), the header `08 <len>`
plus, when signing, signer, key version and HMAC (hash function written only for SHA1).
"""

from __future__ import annotations

import hmac as _hmac
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import cramjam

from wirecodecs.heka.message import HASH_FUNCTIONS, VALUE_TYPES

Text = str | bytes  # bytes: written as they are (a producer that sends invalid UTF-8)


@dataclass(frozen=True)
class Field:
    name: Text
    value_type: str | None = "STRING"  # None: field 2 left off the wire (hindsight)
    representation: Text | None = None
    value_string: Sequence[Text] = ()
    value_bytes: Sequence[bytes] = ()
    value_integer: Sequence[int] = ()
    value_double: Sequence[float] = ()
    value_bool: Sequence[bool] = ()


@dataclass(frozen=True)
class Message:
    uuid: bytes | None
    timestamp: int | None  # ns since the epoch
    type: Text | None = None
    logger: Text | None = None
    severity: int | None = None  # None: left off the wire (readers use 7)
    payload: Text | None = None
    env_version: Text | None = None
    pid: int | None = None
    hostname: Text | None = None
    fields: Sequence[Field] = ()


def _uvarint(value: int) -> bytes:
    """Base-128 varint of a non-negative value; negatives as their 64-bit two's complement."""
    value &= 0xFFFF_FFFF_FFFF_FFFF
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return _uvarint(number << 3 | wire_type)


def _len(number: int, value: Text) -> bytes:
    data = value.encode() if isinstance(value, str) else bytes(value)
    return _key(number, 2) + _uvarint(len(data)) + data


def _varint(number: int, value: int) -> bytes:
    return _key(number, 0) + _uvarint(value)


def _repeated(number: int, values: Sequence, packed: bool, wire_type: int, one) -> bytes:
    """A repeated numeric field: one packed run, or one tag per value."""
    if not values:
        return b""
    if packed:
        return _len(number, b"".join(one(value) for value in values))
    return b"".join(_key(number, wire_type) + one(value) for value in values)


def _double(value: float) -> bytes:
    return struct.pack("<d", value)


def encode_field(field: Field, *, packed: bool = True) -> bytes:
    out = [_len(1, field.name)]
    if field.value_type is not None:
        out.append(_varint(2, VALUE_TYPES.index(field.value_type)))
    if field.representation is not None:
        out.append(_len(3, field.representation))
    out += [_len(4, value) for value in field.value_string]
    out += [_len(5, value) for value in field.value_bytes]
    out.append(_repeated(6, field.value_integer, packed, 0, _uvarint))
    out.append(_repeated(7, field.value_double, packed, 1, _double))
    out.append(_repeated(8, field.value_bool, packed, 0, lambda v: _uvarint(int(v))))
    return b"".join(out)


def encode_message(message: Message, *, packed: bool = True) -> bytes:
    """The protobuf body of a Message (absent optional fields left off the wire)."""
    out = []
    if message.uuid is not None:
        out.append(_len(1, message.uuid))
    if message.timestamp is not None:
        out.append(_varint(2, message.timestamp))
    for number, value in (
        (3, message.type),
        (4, message.logger),
        (5, message.severity),
        (6, message.payload),
        (7, message.env_version),
        (8, message.pid),
        (9, message.hostname),
    ):
        if value is None:
            continue
        out.append(_varint(number, value) if isinstance(value, int) else _len(number, value))
    out += [_len(10, encode_field(field, packed=packed)) for field in message.fields]
    return b"".join(out)


def snappy_block(data: bytes) -> bytes:
    """A raw snappy block (Mozilla's per-record "snappy ugliness")."""
    return bytes(cramjam.snappy.compress_raw(data))


@dataclass(frozen=True)
class Signer:
    """Who signs: Heka looks the key up as "<name>_<key_version>"."""

    name: Text
    key_version: int
    key: bytes
    hash_function: str = "MD5"  # MD5 | SHA1


def encode_header(message_length: int, signer: Signer | None = None, digest: bytes = b"") -> bytes:
    out = [_varint(1, message_length)]
    if signer is not None:
        if signer.hash_function != "MD5":  # the Go client leaves the default out
            out.append(_varint(3, HASH_FUNCTIONS.index(signer.hash_function)))
        out += [_len(4, signer.name), _varint(5, signer.key_version), _len(6, digest)]
    return b"".join(out)


def frame(body: bytes, signer: Signer | None = None) -> bytes:
    """One record: 0x1E, header length, header, 0x1F, body; signed over the body as is."""
    digest = b""
    if signer is not None:
        digest = _hmac.digest(signer.key, body, signer.hash_function.lower())
    header = encode_header(len(body), signer, digest)
    if len(header) > 255:
        raise ValueError(f"Message header too big, requires {len(header)}")
    return b"\x1e" + bytes([len(header)]) + header + b"\x1f" + body

"""Hand-written protobuf wire reader for Heka's Header and Message (message/message.proto).

Why not the protobuf runtime (upb, with classes built from message.proto): it parses in
C far faster than Python can, but a decoder must then read every value back out of the
message objects (presence checks, repeated containers), and that read-out alone costs more
than this reader's whole parse (bench/heka_decode.py on 50 MB of web-log messages: parse
and read-out 61-73k messages/s, `protobuf-values`; this reader 100k, `wire-reader`). It
also hands over unknown fields as their wire bytes and every string as bytes, so that
the decoder can keep what is not UTF-8, and reports damage as a typed error.

Semantics follow proto2 parsing as the runtime does it: the last value of a scalar field
wins, repeated fields append, packed and unpacked encodings of repeated numerics are both
accepted (and may mix), a known field number with the wrong wire type is an unknown field,
and required fields are not enforced here (the decoder applies its own policy).
Layouts: ../shared/formats/heka.md §2 (Header) and §3 (Message, Field).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from wirecodecs.errors import DecodeError

FORMAT = "heka"

VALUE_TYPES = ("STRING", "BYTES", "INTEGER", "DOUBLE", "BOOL")  # Field.ValueType by code
HASH_FUNCTIONS = ("MD5", "SHA1")  # Header.HmacHashFunction by code
DEFAULT_SEVERITY = 7  # message.proto: optional int32 severity = 5 [default = 7]

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_MASK32 = 0xFFFF_FFFF
_SIGN64 = 1 << 63
_DOUBLE = struct.Struct("<d")


def _bad(kind: str, detail: str) -> DecodeError:
    return DecodeError(FORMAT, kind, detail)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A base-128 varint of up to 10 bytes at `pos` (callers inline the one-byte case);
    IndexError when it runs past the end."""
    value = 0
    shift = 0
    while shift < 70:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise _bad("invalid_protobuf", f"varint longer than 10 bytes at {pos}")


def _int64(bits: int) -> int:
    bits &= 0xFFFF_FFFF_FFFF_FFFF
    return bits - (1 << 64) if bits & _SIGN64 else bits


def _int32(bits: int) -> int:
    """int32 as protobuf reads it: the low 32 bits of the varint, two's complement."""
    bits &= _MASK32
    return bits - (1 << 32) if bits & 0x8000_0000 else bits


def _tokens(buf: bytes, pos: int, end: int) -> list[tuple[int, int, int, int]]:
    """(key, value, field start, field end) of every field in `buf[pos:end]`, wire order.

    `value` is the number of a varint field, and where the value starts for the others
    (a length-delimited value runs from there to the field's end, its prefix excluded).
    Raises DecodeError for damage (IndexError past the end is turned into one)."""
    out = []
    start = pos
    try:
        while pos < end:
            start = pos
            key = buf[pos]
            pos += 1
            if key >= 0x80:
                key, pos = _varint(buf, start)
            wire_type = key & 7
            if wire_type == _VARINT:
                value = buf[pos]
                if value < 0x80:
                    pos += 1
                else:
                    value, pos = _varint(buf, pos)
            elif wire_type == _LEN:
                length = buf[pos]
                if length < 0x80:
                    pos += 1
                else:
                    length, pos = _varint(buf, pos)
                value = pos
                pos += length
            elif wire_type == _FIXED64:
                value = pos
                pos += 8
            elif wire_type == _FIXED32:
                value = pos
                pos += 4
            else:
                raise _bad("invalid_protobuf", f"wire type {wire_type} at {start}")
            if key < 8:
                raise _bad("invalid_protobuf", f"field number 0 at {start}")
            out.append((key, value, start, pos))
    except IndexError:
        pos = end + 1
    if pos > end:
        raise _bad("invalid_protobuf", f"the field at {start} runs past the end at {end}")
    return out


class Header(NamedTuple):
    message_length: int | None
    hmac_hash_function: int | None  # None when absent on the wire (means MD5)
    hmac_signer: bytes | None
    hmac_key_version: int | None
    hmac: bytes | None


def parse_header(buf: bytes) -> Header:
    """The framing header; raises DecodeError when it is not a protobuf."""
    length = hash_fn = signer = version = digest = None
    for key, value, _, stop in _tokens(buf, 0, len(buf)):
        if key == 0x08:
            length = value & _MASK32
        elif key == 0x18:
            hash_fn = _int32(value)
        elif key == 0x22:
            signer = buf[value:stop]
        elif key == 0x28:
            version = value & _MASK32
        elif key == 0x32:
            digest = buf[value:stop]
    return Header(length, hash_fn, signer, version, digest)


class Field(NamedTuple):
    """One Heka Field as on the wire: strings still bytes, unknown fields kept raw."""

    name: bytes | None
    value_type: int | None  # None when absent (means STRING)
    representation: bytes | None
    value_string: tuple[bytes, ...]
    value_bytes: tuple[bytes, ...]
    value_integer: tuple[int, ...]
    value_double: tuple[float, ...]
    value_bool: tuple[bool, ...]
    unknown: bytes | None


class Message(NamedTuple):
    uuid: bytes | None
    timestamp: int | None
    type: bytes | None
    logger: bytes | None
    severity: int | None  # None when absent (means DEFAULT_SEVERITY)
    payload: bytes | None
    env_version: bytes | None
    pid: int | None
    hostname: bytes | None
    fields: tuple[Field, ...]
    unknown: bytes | None  # fields message.proto does not define, as on the wire


def _packed_varints(buf: bytes, pos: int, stop: int) -> list[int]:
    values = []
    try:
        while pos < stop:
            byte = buf[pos]
            if byte < 0x80:
                values.append(byte)
                pos += 1
            else:
                value, pos = _varint(buf, pos)
                values.append(value)
    except IndexError:
        pos = stop + 1
    if pos != stop:
        raise _bad("invalid_protobuf", "packed varints run past their length")
    return values


def _int64s(values: list[int]) -> tuple[int, ...]:
    if values and max(values) >= _SIGN64:
        return tuple(_int64(v) for v in values)
    return tuple(values)


def parse_field(buf: bytes, pos: int, end: int) -> Field:
    """The Field in `buf[pos:end]`. Values are kept in tuples: a tuple of atoms is not
    tracked by the garbage collector, which keeps flushes of many rows cheap."""
    name = value_type = representation = None
    strings: tuple[bytes, ...] = ()
    blobs: tuple[bytes, ...] = ()
    integers: tuple[int, ...] = ()
    doubles: tuple[float, ...] = ()
    bools: tuple[bool, ...] = ()
    unknown = b""
    for key, value, start, stop in _tokens(buf, pos, end):
        if key == 0x0A:
            name = buf[value:stop]
        elif key == 0x10:
            value_type = _int32(value)
        elif key == 0x22:
            strings += (buf[value:stop],)
        elif key == 0x32:
            integers += _int64s(_packed_varints(buf, value, stop))
        elif key == 0x3A:
            if (stop - value) % 8:
                raise _bad("invalid_protobuf", f"packed doubles of {stop - value} bytes")
            doubles += struct.unpack_from(f"<{(stop - value) // 8}d", buf, value)
        elif key == 0x42:
            bools += tuple(v != 0 for v in _packed_varints(buf, value, stop))
        elif key == 0x1A:
            representation = buf[value:stop]
        elif key == 0x2A:
            blobs += (buf[value:stop],)
        elif key == 0x30:
            integers += (_int64(value),)
        elif key == 0x39:
            doubles += _DOUBLE.unpack_from(buf, value)
        elif key == 0x40:
            bools += (value != 0,)
        else:
            unknown += buf[start:stop]
    return Field(
        name,
        value_type,
        representation,
        strings,
        blobs,
        integers,
        doubles,
        bools,
        unknown or None,
    )


def parse_message(buf: bytes) -> Message:
    """A Heka Message; raises DecodeError (`invalid_protobuf`) for damage."""
    uuid = timestamp = type_ = logger = severity = payload = env_version = None
    pid = hostname = None
    fields: list[Field] = []
    unknown = b""
    for key, value, start, stop in _tokens(buf, 0, len(buf)):
        if key == 0x52:
            fields.append(parse_field(buf, value, stop))
        elif key == 0x0A:
            uuid = buf[value:stop]
        elif key == 0x10:
            timestamp = _int64(value)
        elif key == 0x1A:
            type_ = buf[value:stop]
        elif key == 0x22:
            logger = buf[value:stop]
        elif key == 0x28:
            severity = _int32(value)
        elif key == 0x32:
            payload = buf[value:stop]
        elif key == 0x3A:
            env_version = buf[value:stop]
        elif key == 0x40:
            pid = _int32(value)
        elif key == 0x4A:
            hostname = buf[value:stop]
        else:
            unknown += buf[start:stop]
    return Message(
        uuid,
        timestamp,
        type_,
        logger,
        severity,
        payload,
        env_version,
        pid,
        hostname,
        tuple(fields),
        unknown or None,
    )

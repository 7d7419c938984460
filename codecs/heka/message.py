"""Hand-written protobuf wire reader for Heka's Header and Message (its message.proto).

The pure walk's reader: the decoder reads bodies with the compiled walk (`compiled.py`,
same semantics) when numba is there, and with this one on hosts without it, for small
streams and to give the exact DecodeError of a body the compiled walk rejects.

Why not the protobuf runtime (upb, with classes built from message.proto): it parses in
C far faster than Python can, but a decoder must then read every value back out of the
message objects (presence checks, repeated containers), and that read-out alone costs more
than this reader's whole parse (bench/heka_decode.py: `protobuf-values` against
`wire-reader`; figures in docs/performance.md). It
also hands over unknown fields as their wire bytes and every string as bytes, so that
the decoder can keep what is not UTF-8, and reports damage as a typed error.

Semantics follow proto2 parsing as the runtime does it: the last value of a scalar field
wins, repeated fields append, packed and unpacked encodings of repeated numerics are both
accepted (and may mix), a known field number with the wrong wire type is an unknown field,
and required fields are not enforced here (the decoder applies its own policy).
Layouts: docs/heka.md, "Header" and "Message and Field".
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from wirecodecs.errors import DecodeError

FORMAT = "heka"

VALUE_TYPES = ("STRING", "BYTES", "INTEGER", "DOUBLE", "BOOL")  # Field.ValueType by code
HASH_FUNCTIONS = ("MD5", "SHA1")  # Header.HmacHashFunction by code
# The decoder's HMAC verdicts on a signed body (the compiled walk keeps them as codes)
HMAC_STATUSES = ("valid", "invalid_digest", "unknown_signer", "unsupported_hash")
DEFAULT_SEVERITY = 7  # message.proto: optional int32 severity = 5 [default = 7]

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5  # protobuf wire types


def _key(number: int, wire_type: int) -> int:
    """A field's protobuf key: its number, then its wire type in the low 3 bits."""
    return number << 3 | wire_type


# The keys of message.proto's fields (docs/heka.md, "Header", "Message and Field"): a key
# these tables lack is an unknown field. Repeated numerics may also come packed (_LEN).
_HEADER_MESSAGE_LENGTH = _key(1, _VARINT)
_HEADER_HMAC_HASH_FUNCTION = _key(3, _VARINT)
_HEADER_HMAC_SIGNER = _key(4, _LEN)
_HEADER_HMAC_KEY_VERSION = _key(5, _VARINT)
_HEADER_HMAC = _key(6, _LEN)
_MESSAGE_UUID = _key(1, _LEN)
_MESSAGE_TIMESTAMP = _key(2, _VARINT)
_MESSAGE_TYPE = _key(3, _LEN)
_MESSAGE_LOGGER = _key(4, _LEN)
_MESSAGE_SEVERITY = _key(5, _VARINT)
_MESSAGE_PAYLOAD = _key(6, _LEN)
_MESSAGE_ENV_VERSION = _key(7, _LEN)
_MESSAGE_PID = _key(8, _VARINT)
_MESSAGE_HOSTNAME = _key(9, _LEN)
_MESSAGE_FIELDS = _key(10, _LEN)
_FIELD_NAME = _key(1, _LEN)
_FIELD_VALUE_TYPE = _key(2, _VARINT)
_FIELD_REPRESENTATION = _key(3, _LEN)
_FIELD_VALUE_STRING = _key(4, _LEN)
_FIELD_VALUE_BYTES = _key(5, _LEN)
_FIELD_VALUE_INTEGER = _key(6, _VARINT)
_FIELD_VALUE_INTEGER_PACKED = _key(6, _LEN)
_FIELD_VALUE_DOUBLE = _key(7, _FIXED64)
_FIELD_VALUE_DOUBLE_PACKED = _key(7, _LEN)
_FIELD_VALUE_BOOL = _key(8, _VARINT)
_FIELD_VALUE_BOOL_PACKED = _key(8, _LEN)
_MASK32 = 0xFFFF_FFFF
_SIGN64 = 1 << 63
_DOUBLE = struct.Struct("<d")
# How the parse loops read a field by its first byte: inline when it is a whole key of a
# length-delimited or varint field (number 1..15), else through `_token` (any encoding,
# and the errors for damage).
_FAST_LEN, _FAST_VARINT = 1, 2
_FAST = bytes(
    0 if key < 8 or key >= 0x80 else {_LEN: _FAST_LEN, _VARINT: _FAST_VARINT}.get(key & 7, 0)
    for key in range(256)
)


def _bad(kind: str, detail: str) -> DecodeError:
    return DecodeError(FORMAT, kind, detail)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A base-128 varint of up to 10 bytes at `pos` (hot loops inline the one-byte case,
    lengths of 128 bytes to 16 KiB take the second); IndexError when it runs past the end."""
    value = buf[pos]
    if value < 0x80:
        return value, pos + 1
    byte = buf[pos + 1]
    if byte < 0x80:
        return value & 0x7F | byte << 7, pos + 2
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


def _past_end(start: int, end: int) -> DecodeError:
    return _bad("invalid_protobuf", f"the field at {start} runs past the end at {end}")


def _token(buf: bytes, pos: int) -> tuple[int, int, int]:
    """The field at `pos`, in any encoding: (key, value, next position). `value` is the
    number of a varint field, and where the value starts for the others (a length-delimited
    value runs from there to the next position). The caller checks the next position
    against its end; running past the buffer raises IndexError (for `_past_end`)."""
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
            value = pos + 1
        else:
            length, value = _varint(buf, pos)
        pos = value + length
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
    return key, value, pos


class Header(NamedTuple):
    message_length: int | None
    hmac_hash_function: int | None  # None when absent on the wire (means MD5)
    hmac_signer: bytes | None
    hmac_key_version: int | None
    hmac: bytes | None


def parse_header(buf: bytes) -> Header:
    """The framing header; raises DecodeError when it is not a protobuf."""
    length = hash_fn = signer = version = digest = None
    pos = start = 0
    end = len(buf)
    try:
        while pos < end:
            start = pos
            key, value, pos = _token(buf, pos)
            if pos > end:
                raise _past_end(start, end)
            if key == _HEADER_MESSAGE_LENGTH:
                length = value & _MASK32
            elif key == _HEADER_HMAC_HASH_FUNCTION:
                hash_fn = _int32(value)
            elif key == _HEADER_HMAC_SIGNER:
                signer = buf[value:pos]
            elif key == _HEADER_HMAC_KEY_VERSION:
                version = value & _MASK32
            elif key == _HEADER_HMAC:
                digest = buf[value:pos]
    except IndexError:
        raise _past_end(start, end) from None
    return Header(length, hash_fn, signer, version, digest)


# One Heka Field as on the wire, strings still bytes, unknown members kept raw: a plain
# tuple of these members, in this order. Not a NamedTuple: the garbage collector stops
# tracking an exact tuple of atoms, and a stream's Fields live until their batch is built.
FIELD_MEMBERS = (
    "name",
    "value_type",  # None when absent (means STRING)
    "representation",
    "value_string",
    "value_bytes",
    "value_integer",
    "value_double",
    "value_bool",
    "unknown",
)
Field = tuple[
    bytes | None,
    int | None,
    bytes | None,
    tuple[bytes, ...],
    tuple[bytes, ...],
    tuple[int, ...],
    tuple[float, ...],
    tuple[bool, ...],
    bytes | None,
]


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
    """The Field in `buf[pos:end]`, in one pass. Values are kept in tuples: a tuple of atoms
    is not tracked by the garbage collector, which keeps flushes of many rows cheap.

    Damage inside a packed run is raised only once the walk has reached `end`, so that a
    damaged layout later in the Field is what gets reported, as a walk-then-read would."""
    name = value_type = representation = None
    strings: tuple[bytes, ...] = ()
    blobs: tuple[bytes, ...] = ()
    integers: tuple[int, ...] = ()
    doubles: tuple[float, ...] = ()
    bools: tuple[bool, ...] = ()
    unknown = b""
    problem = None
    fast = _FAST
    start = pos
    try:
        while pos < end:
            start = pos
            key = buf[pos]
            kind = fast[key]
            if kind == _FAST_LEN:  # the hot path, inlined
                length = buf[pos + 1]
                if length < 0x80:
                    value = pos + 2
                else:
                    length, value = _varint(buf, pos + 1)
                pos = value + length
            elif kind == _FAST_VARINT:
                value = buf[pos + 1]
                if value < 0x80:
                    pos += 2
                else:
                    value, pos = _varint(buf, pos + 1)
            else:
                key, value, pos = _token(buf, pos)
            if pos > end:
                raise _past_end(start, end)
            if key == _FIELD_NAME:
                name = buf[value:pos]
            elif key == _FIELD_VALUE_TYPE:
                value_type = value if value < 0x8000_0000 else _int32(value)
            elif key == _FIELD_VALUE_STRING:
                strings += (buf[value:pos],)
            elif key == _FIELD_VALUE_DOUBLE_PACKED:
                if (pos - value) % 8:
                    problem = problem or _bad(
                        "invalid_protobuf", f"packed doubles of {pos - value} bytes"
                    )
                else:
                    doubles += struct.unpack_from(f"<{(pos - value) // 8}d", buf, value)
            elif key in (_FIELD_VALUE_INTEGER_PACKED, _FIELD_VALUE_BOOL_PACKED):
                try:
                    values = _packed_varints(buf, value, pos)
                except DecodeError as err:
                    problem = problem or err
                else:
                    if key == _FIELD_VALUE_INTEGER_PACKED:
                        integers += _int64s(values)
                    else:
                        bools += tuple(v != 0 for v in values)
            elif key == _FIELD_REPRESENTATION:
                representation = buf[value:pos]
            elif key == _FIELD_VALUE_BYTES:
                blobs += (buf[value:pos],)
            elif key == _FIELD_VALUE_INTEGER:
                integers += (_int64(value),)
            elif key == _FIELD_VALUE_DOUBLE:
                doubles += _DOUBLE.unpack_from(buf, value)
            elif key == _FIELD_VALUE_BOOL:
                bools += (value != 0,)
            else:
                unknown += buf[start:pos]
    except IndexError:
        raise _past_end(start, end) from None
    if problem is not None:
        raise problem
    return (
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


# `fields_seen` keeps at most this many Fields of at most this many bytes (then restarts):
# a few MiB at worst, and Fields that long seldom repeat.
_SEEN_FIELDS = 2048
_SEEN_FIELD_BYTES = 1024


def parse_message(buf: bytes, fields_seen: dict[bytes, Field] | None = None) -> Message:
    """A Heka Message; raises DecodeError (`invalid_protobuf`) for damage.

    `fields_seen` (one per stream) remembers Fields by their bytes, on which alone their
    value depends: producers send the same few Fields over and over. The message's own
    members are read in one pass; Fields not seen before are parsed after it, in wire
    order, so that damage is reported as a walk of the message, then of each Field, finds
    it."""
    uuid = timestamp = type_ = logger = severity = payload = env_version = None
    pid = hostname = None
    seen = {} if fields_seen is None else fields_seen
    fields: list[Field | None] = []
    unseen: list[tuple[int, bytes | None, int, int]] = []  # (index, bytes, start, end)
    unknown = b""
    fast = _FAST
    pos = start = 0
    end = len(buf)
    try:
        while pos < end:
            start = pos
            key = buf[pos]
            kind = fast[key]
            if kind == _FAST_LEN:  # the hot path, inlined
                length = buf[pos + 1]
                if length < 0x80:
                    value = pos + 2
                else:
                    length, value = _varint(buf, pos + 1)
                pos = value + length
            elif kind == _FAST_VARINT:
                value = buf[pos + 1]
                if value < 0x80:
                    pos += 2
                else:
                    value, pos = _varint(buf, pos + 1)
            else:
                key, value, pos = _token(buf, pos)
            if pos > end:
                raise _past_end(start, end)
            if key == _MESSAGE_FIELDS:
                data = buf[value:pos] if pos - value <= _SEEN_FIELD_BYTES else None
                field = seen.get(data)
                if field is None:
                    unseen.append((len(fields), data, value, pos))
                fields.append(field)
            elif key == _MESSAGE_UUID:
                uuid = buf[value:pos]
            elif key == _MESSAGE_TIMESTAMP:
                timestamp = value if value < _SIGN64 else _int64(value)
            elif key == _MESSAGE_TYPE:
                type_ = buf[value:pos]
            elif key == _MESSAGE_LOGGER:
                logger = buf[value:pos]
            elif key == _MESSAGE_SEVERITY:
                severity = value if value < 0x8000_0000 else _int32(value)
            elif key == _MESSAGE_PAYLOAD:
                payload = buf[value:pos]
            elif key == _MESSAGE_ENV_VERSION:
                env_version = buf[value:pos]
            elif key == _MESSAGE_PID:
                pid = value if value < 0x8000_0000 else _int32(value)
            elif key == _MESSAGE_HOSTNAME:
                hostname = buf[value:pos]
            else:
                unknown += buf[start:pos]
    except IndexError:
        raise _past_end(start, end) from None
    for i, data, value, stop in unseen:
        fields[i] = field = parse_field(buf, value, stop)
        if data is not None:
            if len(seen) >= _SEEN_FIELDS:
                seen.clear()
            seen[data] = field
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

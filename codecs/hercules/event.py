"""One Hercules event off a buffer: the code the file decoder and the Kafka payload share.

Layout: docs/hercules.md, "Byte layout" (event, container and tags, types, vectors). The
reader walks an event completely (the format has no length prefix, so that is the only
way to find where the next one starts) and appends one entry per tag, container and
vector element to a flat list (`schema.TAG_TYPE` order), while building the plain JSON
view of the payload.

Limits, all checked before anything is allocated: a length that would take the event past
`limit` (the configured max event size) is `length_out_of_range`; past the buffered bytes,
`truncated` (the caller reads more, or calls it a truncated tail at the end of the file).
A vector's declared length is checked against its element type's smallest encoding, so a
length of 2**31 - 1 fails at once. Nesting deeper than `max_depth` is `too_deep`: the walk
recurses (two frames per level), and the bound keeps it far from Python's recursion limit.
What an event makes is bounded by its allowed size (`limit` - start) too, since two things
cost no bytes of their own: a tag's path repeats its ancestors' keys (a 1 MB event of
long keys nested 99 deep could make gigabytes of paths) and a Null vector's elements take
no bytes. An event's paths may total `PATHS_PER_BYTE` characters per allowed byte and its
Null vectors one element per allowed byte; more is `length_out_of_range`.
"""

from __future__ import annotations

import json
import math
import struct

from wirecodecs.errors import DecodeError
from wirecodecs.hercules.schema import TAG_FIELDS

FORMAT = "hercules"

CONTAINER, BYTE, SHORT, INTEGER, LONG, FLAG, FLOAT, DOUBLE, STRING, UUID, NULL = range(1, 12)
VECTOR = 0x80
TYPE_NAMES = {
    CONTAINER: "Container",
    BYTE: "Byte",
    SHORT: "Short",
    INTEGER: "Integer",
    LONG: "Long",
    FLAG: "Flag",
    FLOAT: "Float",
    DOUBLE: "Double",
    STRING: "String",
    UUID: "UUID",
    NULL: "Null",
    VECTOR: "Vector",
}
TYPE_CODES = {name: code for code, name in TYPE_NAMES.items()}
# The smallest encoding of one value of each type (a vector's length is checked with it).
MIN_SIZE = {
    CONTAINER: 2,  # u16 count
    BYTE: 1,
    SHORT: 2,
    INTEGER: 4,
    LONG: 8,
    FLAG: 1,
    FLOAT: 4,
    DOUBLE: 8,
    STRING: 4,  # int32 length
    UUID: 16,
    NULL: 0,
    VECTOR: 5,  # element type u8 + int32 length
}
# Integers: struct code and size (a vector of them is unpacked in one call) ...
_NUMBERS = {SHORT: ("h", 2), INTEGER: ("i", 4), LONG: ("q", 8)}
_INTS = {  # ... and for one value: unpack_from, size, type name
    code: (struct.Struct(">" + fmt).unpack_from, size, TYPE_NAMES[code])
    for code, (fmt, size) in _NUMBERS.items()
}
# Float/Double: value code, raw-bits code, size (both kept: the bits hold NaN payloads) ...
_REALS = {FLOAT: ("f", "I", 4), DOUBLE: ("d", "q", 8)}
_FLOATS = {  # ... and for one value: value and bits unpack_from, size, type name
    code: (struct.Struct(">" + fmt).unpack_from, struct.Struct(">" + bits).unpack_from, size,
           TYPE_NAMES[code])
    for code, (fmt, bits, size) in _REALS.items()
}  # fmt: skip
_KEY_CACHE = 1 << 14  # distinct tag keys a reader remembers
PATHS_PER_BYTE = 64  # path characters an event may make per byte it may take (docstring)
WIDTH = len(TAG_FIELDS)  # items per tag entry in the flat entries list

VERSION = 1  # the event version the gate writes: resync looks for an event starting so
VERSION_BYTE = bytes([VERSION])
HEADER = struct.Struct(
    ">B"  # version
    "q"  # timestamp: 100-ns ticks since 1970-01-01T00:00:00Z
    "16s"  # uuid: most significant int64 BE, then least significant (RFC 4122 order)
    "H"  # payload container: tag count (unsigned: at most 65 535 tags)
)
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_VECTOR_HEAD = struct.Struct(">Bi")  # element type, signed int32 length

# Tag names are meant to be [a-zA-Z0-9_.-] but nothing enforces it: any name is kept, and
# the characters that would make a path ambiguous are percent-encoded in `path` only.
_PATH_ESCAPES = {"%": "%25", "/": "%2F", "[": "%5B", "]": "%5D"}
_PATH_SPECIAL = frozenset(_PATH_ESCAPES)
_PATH_TABLE = str.maketrans(_PATH_ESCAPES)

_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}
# json.dumps(view, ensure_ascii=False, separators=(",", ":"), allow_nan=False), with one
# encoder for every event instead of one per call (views are trees: no cycle check)
_to_json = json.JSONEncoder(
    ensure_ascii=False, check_circular=False, allow_nan=False, separators=(",", ":")
).encode


def path_segment(key: str) -> str:
    """A key as it appears in `path`: unchanged unless it holds one of `% / [ ]`."""
    return key.translate(_PATH_TABLE) if not _PATH_SPECIAL.isdisjoint(key) else key


def _text(raw: bytes) -> tuple[str, bytes | None]:
    """UTF-8 text of `raw`, and `raw` itself when it is not valid UTF-8 (text then
    carries replacement characters, as the sidecars' plain view does)."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), raw


def uuid_text(raw: bytes) -> str:
    """Canonical lowercase text of 16 UUID bytes (what `str(uuid.UUID(bytes=raw))` gives)."""
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _json_float(value: float) -> float | str:
    if value - value == 0:  # finite
        return value
    return "NaN" if value != value else _NON_FINITE[value]


class Event:
    """The header fields of one decoded event; its tag entries went to the caller's list."""

    __slots__ = ("json", "size", "tag_count", "timestamp", "uuid", "version")

    def __init__(self, version, timestamp, uuid, size, tag_count, json_view):
        self.version = version
        self.timestamp = timestamp
        self.uuid = uuid
        self.size = size
        self.tag_count = tag_count
        self.json = json_view


class EventReader:
    """Reads events from `buf` (bytes or memoryview) up to `end`, appending tag entries to
    the flat list `entries`: each entry is `WIDTH` consecutive items in
    `schema.TAG_FIELDS` order (one list of scalars, not a tuple per entry: no container
    object per tag for the garbage collector to track, and columns are plain slices);
    entry `parent` indices count from the first entry of the event being read, and error
    offsets from its first byte."""

    __slots__ = ("base", "buf", "end", "entries", "keys", "limit", "max_depth", "nulls_left",
                 "paths_left", "start")  # fmt: skip

    def __init__(self, buf, end: int, max_depth: int, entries: list) -> None:
        self.buf = buf
        self.end = end
        self.max_depth = max_depth
        self.entries = entries
        self.limit = end
        self.base = 0  # len(entries) when the current event started
        self.start = 0  # where in `buf` the current event starts
        self.paths_left = 0  # path characters the current event may still make
        self.nulls_left = 0  # Null vector elements the current event may still have
        self.keys: dict[bytes, tuple[str, bytes | None, str]] = {}  # raw key -> key, raw, segment

    def _key(self, raw: bytes) -> tuple[str, bytes | None, str]:
        """A tag key's text, raw bytes (when not UTF-8) and path segment, cached: events
        repeat the same few hundred keys (the cache is emptied past `_KEY_CACHE` keys)."""
        if len(self.keys) >= _KEY_CACHE:
            self.keys.clear()
        key, key_raw = _text(raw)
        self.keys[raw] = found = (key, key_raw, path_segment(key))
        return found

    def _fail(self, kind: str, detail: str, pos: int) -> DecodeError:
        return DecodeError(FORMAT, kind, detail, offset=pos - self.start)

    def _need(self, pos: int, n: int, what: str) -> None:
        if pos + n > self.end:
            kind = "length_out_of_range" if pos + n > self.limit else "truncated"
            at = pos - self.start
            raise self._fail(
                kind, f"{what}: needs {n} bytes at {at}, {max(self.end - pos, 0)} left", pos
            )

    def event(self, pos: int, limit: int) -> tuple[Event, int]:
        """The event at `pos`, not allowed to extend past `limit`; returns it and its end."""
        self.limit = limit
        self.base = len(self.entries)
        self.start = start = pos
        self.paths_left = PATHS_PER_BYTE * (limit - pos)
        self.nulls_left = limit - pos
        self._need(pos, HEADER.size, "event header")
        version, ticks, raw_uuid, count = HEADER.unpack_from(self.buf, pos)
        pos, view = self._container(pos + HEADER.size, count, 1, "", -1)
        return Event(version, ticks, uuid_text(raw_uuid), pos - start, count, _to_json(view)), pos

    def _container(self, pos: int, count: int, depth: int, prefix: str, parent: int):
        """`count` tags from `pos`: entries appended, (end, plain view) returned. The hot
        loop: Strings and integers (most tags) are read inline, the rest by `_value`."""
        if depth > self.max_depth:
            raise self._fail("too_deep", f"nesting deeper than max_depth {self.max_depth}", pos)
        end = self.end
        if pos + 2 * count > end:  # key length and type: 2 bytes at least per tag
            self._need(pos, 2 * count, f"{count} tags")
        if prefix:
            self._spend_paths(count * len(prefix), pos)
        buf = self.buf
        keys = self.keys
        extend = self.entries.extend
        view = {}
        for _ in range(count):
            if pos >= end:
                self._need(pos, 2, "tag key length and type")
            at = pos + 1 + buf[pos]  # the type byte
            if at >= end:
                self._need(pos + 1, at - pos, "tag key and type")
            raw = bytes(buf[pos + 1 : at])
            key, key_raw, segment = keys.get(raw) or self._key(raw)
            code = buf[at]
            pos = at + 1
            if code == STRING:
                if pos + 4 > end:
                    self._need(pos, 4, "string length")
                (size,) = _I32.unpack_from(buf, pos)
                at = pos + 4
                pos = at + size
                if size < 0 or pos > end:
                    self._string_error(at - 4, size)
                try:
                    view[key] = text = str(buf[at:pos], "utf-8")
                    extend((prefix + segment, parent, key, key_raw, None, "String", None, None,
                            None, None, None, None, text, None))  # fmt: skip
                    continue
                except UnicodeDecodeError:
                    pos = at - 4  # read again below, keeping the raw bytes
            elif code in _INTS:
                unpack, size, name = _INTS[code]
                if pos + size > end:
                    self._need(pos, size, name)
                (value,) = unpack(buf, pos)
                pos += size
                view[key] = value
                extend((prefix + segment, parent, key, key_raw, None, name, None, None,
                        value, None, None, None, None, None))  # fmt: skip
                continue
            pos, view[key] = self._value(
                code, pos, depth, prefix + segment, parent, key, key_raw, None
            )
        return pos, view

    def _spend_paths(self, chars: int, pos: int) -> None:
        self.paths_left -= chars
        if self.paths_left < 0:
            detail = f"paths over {PATHS_PER_BYTE} characters per byte of max_event_bytes"
            raise self._fail("length_out_of_range", detail, pos)

    def _string_error(self, pos: int, size: int) -> None:
        if size < 0:
            raise self._fail("negative_length", f"negative string length {size}", pos)
        self._need(pos + 4, size, "string")

    def _value(self, code, pos, depth, path, parent, key, key_raw, index):
        """The value of type `code` at `pos`: its entry (and its children's) appended;
        returns (end, plain view)."""
        extend = self.entries.extend
        buf = self.buf
        if code == VECTOR:
            return self._vector(pos, depth, path, parent, key, key_raw, index)
        if code == CONTAINER:
            if pos + 2 > self.end:
                self._need(pos, 2, "container count")
            (count,) = _U16.unpack_from(buf, pos)
            me = (len(self.entries) - self.base) // WIDTH  # this entry's index
            extend((path, parent, key, key_raw, index, "Container", None, count,
                    None, None, None, None, None, None))  # fmt: skip
            return self._container(pos + 2, count, depth + 1, path + "/", me)
        if code == STRING:
            if pos + 4 > self.end:
                self._need(pos, 4, "string length")
            (size,) = _I32.unpack_from(buf, pos)
            at = pos + 4
            pos = at + size
            if size < 0 or pos > self.end:
                self._string_error(at - 4, size)
            text, raw = _text(bytes(buf[at:pos]))
            extend((path, parent, key, key_raw, index, "String", None, None,
                    None, None, None, None, text, raw))  # fmt: skip
            return pos, text
        if code in _INTS:
            unpack, size, name = _INTS[code]
            if pos + size > self.end:
                self._need(pos, size, name)
            (value,) = unpack(buf, pos)
            extend((path, parent, key, key_raw, index, name, None, None,
                    value, None, None, None, None, None))  # fmt: skip
            return pos + size, value
        if code in _FLOATS:
            unpack, unpack_bits, size, name = _FLOATS[code]
            if pos + size > self.end:
                self._need(pos, size, name)
            (value,) = unpack(buf, pos)
            (bits,) = unpack_bits(buf, pos)
            extend((path, parent, key, key_raw, index, name, None, None,
                    None, None, value, bits, None, None))  # fmt: skip
            return pos + size, _json_float(value)
        if code == FLAG:
            if pos >= self.end:
                self._need(pos, 1, "Flag")
            value = buf[pos] != 0  # Java: any non-zero byte is true
            extend((path, parent, key, key_raw, index, "Flag", None, None,
                    None, value, None, None, None, None))  # fmt: skip
            return pos + 1, value
        if code == BYTE:
            if pos >= self.end:
                self._need(pos, 1, "Byte")
            value = buf[pos]
            extend((path, parent, key, key_raw, index, "Byte", None, None,
                    value, None, None, None, None, None))  # fmt: skip
            return pos + 1, value
        if code == UUID:
            if pos + 16 > self.end:
                self._need(pos, 16, "UUID")
            text = uuid_text(bytes(buf[pos : pos + 16]))
            extend((path, parent, key, key_raw, index, "UUID", None, None,
                    None, None, None, None, text, None))  # fmt: skip
            return pos + 16, text
        if code == NULL:
            extend((path, parent, key, key_raw, index, "Null", None, None,
                    None, None, None, None, None, None))  # fmt: skip
            return pos, None
        raise self._type_error(code, pos - 1)

    def _type_error(self, code: int, pos: int) -> DecodeError:
        if code == 0:
            return self._fail("invalid_type", "type code 0x00 (Type.TYPE) is not a value type", pos)
        return self._fail("unknown_type", f"unknown type code 0x{code:02X}", pos)

    def _vector(self, pos, depth, path, parent, key, key_raw, index):
        """ElementType, int32 length, elements without type bytes ("Vectors"). Byte vectors keep
        their raw bytes and Null vectors their length on the vector's own entry; every
        other element gets an entry of its own (`path[i]`)."""
        if depth >= self.max_depth:
            raise self._fail("too_deep", f"nesting deeper than max_depth {self.max_depth}", pos)
        if pos + 5 > self.end:
            self._need(pos, 5, "vector header")
        code, length = _VECTOR_HEAD.unpack_from(self.buf, pos)
        pos += 5
        if code not in MIN_SIZE:
            raise self._type_error(code, pos - 5)
        if length < 0:
            raise self._fail("negative_length", f"negative vector length {length}", pos - 4)
        if pos + length * MIN_SIZE[code] > self.end:
            self._need(pos, length * MIN_SIZE[code], f"vector of {length} {TYPE_NAMES[code]}")
        if code == NULL:  # no bytes per element: bound them by the event's allowed size
            self.nulls_left -= length
            if self.nulls_left < 0:
                detail = f"Null vectors of more elements than max_event_bytes ({length} here)"
                raise self._fail("length_out_of_range", detail, pos - 4)
        elif code != BYTE:  # an entry per element, each with the vector's path and [i]
            self._spend_paths(length * (len(path) + 2), pos - 4)
        entries = self.entries
        extend = entries.extend
        raw = bytes(self.buf[pos : pos + length]) if code == BYTE else None
        me = (len(entries) - self.base) // WIDTH  # this entry's index
        extend((path, parent, key, key_raw, index, "Vector", TYPE_NAMES[code], length,
                None, None, None, None, None, raw))  # fmt: skip
        if code == BYTE:
            return pos + length, list(raw)
        if code == NULL:
            return pos, [None] * length
        if code in _NUMBERS:  # one unpack for the whole vector
            fmt, size = _NUMBERS[code]
            name = TYPE_NAMES[code]
            values = struct.unpack_from(f">{length}{fmt}", self.buf, pos)
            for i, value in enumerate(values):
                extend((f"{path}[{i}]", me, None, None, i, name, None, None,
                        value, None, None, None, None, None))  # fmt: skip
            return pos + length * size, list(values)
        if code in _REALS:  # one unpack for the values, one for their bits
            fmt, bits_fmt, size = _REALS[code]
            name = TYPE_NAMES[code]
            values = struct.unpack_from(f">{length}{fmt}", self.buf, pos)
            bits = struct.unpack_from(f">{length}{bits_fmt}", self.buf, pos)
            for i, value in enumerate(values):
                extend((f"{path}[{i}]", me, None, None, i, name, None, None,
                        None, None, value, bits[i], None, None))  # fmt: skip
            return pos + length * size, [_json_float(value) for value in values]
        if code == FLAG:  # one byte each, any non-zero byte is true
            view = [byte != 0 for byte in self.buf[pos : pos + length]]
            for i, value in enumerate(view):
                extend((f"{path}[{i}]", me, None, None, i, "Flag", None, None,
                        None, value, None, None, None, None))  # fmt: skip
            return pos + length, view
        read = self._value
        depth += 1
        view = []
        for i in range(length):
            pos, element = read(code, pos, depth, f"{path}[{i}]", me, None, None, i)
            view.append(element)
        return pos, view

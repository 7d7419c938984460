"""A block's Avro datums straight to their JSON text, compiled with numba: the fast path of
the `record_json` column (what fastavro then `render.datums_json` give, byte for byte).

A writer schema becomes a `Program` once (`program`): a flat int64 array of nodes and a
pool of pre-rendered texts (field keys, enum symbols). `render_block` walks a block's
datums with it into one byte buffer and the datums' lengths, without a Python object per
datum. Floats are left out of the walk's text and written by msgspec itself afterwards
(one call per block, then spliced in), so their text is msgspec's by construction.

Only what the walk can render exactly as today is taken: schemas of null, boolean, int,
long, float, double, string, bytes, enum, fixed, record, array, map, unions and
timestamp-millis/-micros, not recursive, at most `MAX_DEPTH` deep (`program` gives None
otherwise). Anything else in a block (a bound, a varint or a UTF-8 sequence that is not
clean, a duplicate or 65th map key, a timestamp near datetime's limits, NaN or an
infinity, a datum that `render` writes with the stdlib encoder) makes `render_block`
return None: the packet is then read again by the pure path (fastavro and `render`), which
gives the exact rows or the exact PacketError. The pure path stays for those cases and for
the typed `record` column, `event_time_field` and the other logical types.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec
import numpy as np
from numba import njit

from wirecodecs.kernels import copy, load, readonly, unowned

MAX_DEPTH = 48  # nesting levels; render's float scan assumes a float beyond 64
MAX_MAP_KEYS = 64  # map entries compared for duplicates (fastavro's dict keeps one)

(NULL, BOOLEAN, LONG, FLOAT, DOUBLE, STRING, BYTES, FIXED, ENUM, RECORD, ARRAY, MAP, UNION) = range(
    13
)
TS_MILLIS, TS_MICROS = 13, 14
_SCALARS = {
    "null": NULL,
    "boolean": BOOLEAN,
    "int": LONG,
    "long": LONG,
    "float": FLOAT,
    "double": DOUBLE,
    "string": STRING,
    "bytes": BYTES,
}
_TIMESTAMPS = {"timestamp-millis": (TS_MILLIS, "long"), "timestamp-micros": (TS_MICROS, "long")}
# datetime's range, a day in on each side (µs from the epoch): beyond, the pure path
_MIN_US = -62135596800_000000 + 86400_000000
_MAX_US = 253402300799_999999 - 86400_000000
_FAILED = -1


class Program(NamedTuple):
    nodes: np.ndarray  # int64: op, then its operands (see `_Builder.node`)
    pool: np.ndarray  # uint8: pre-rendered texts back to back
    pool_at: np.ndarray  # int64: text i is pool[pool_at[i]:pool_at[i + 1]]
    root: int  # the datum's node
    depth: int  # nesting levels of records, arrays and maps


class _Unsupported(Exception):
    pass


class _Builder:
    """Lays out nodes: scalar [op], FIXED [op, size], ENUM [op, n, text ids...], RECORD
    [op, n, (key text id, child)...], ARRAY and MAP [op, child], UNION [op, n, children...]."""

    def __init__(self) -> None:
        self.nodes: list[int] = []
        self.texts: list[bytes] = []
        self.named: dict[str, dict] = {}

    def text(self, raw: bytes) -> int:
        self.texts.append(raw)
        return len(self.texts) - 1

    def node(self, schema, stack: tuple[str, ...]) -> tuple[int, int]:
        """The node of `schema` and its nesting depth."""
        if len(stack) > MAX_DEPTH:
            raise _Unsupported
        if isinstance(schema, list):
            return self._compound(UNION, [self.node(b, stack) for b in schema])
        if isinstance(schema, str):
            if schema in _SCALARS:
                return self._emit([_SCALARS[schema]]), 0
            if schema in stack or schema not in self.named:
                raise _Unsupported  # recursive: the pure path
            return self.node(self.named[schema], stack)
        kind = schema["type"]
        logical = schema.get("logicalType")
        if logical is not None:
            if _TIMESTAMPS.get(logical, (None, None))[1] != kind:
                raise _Unsupported
            return self._emit([_TIMESTAMPS[logical][0]]), 0
        if kind in ("enum", "fixed", "record"):
            self.named[schema["name"]] = schema
        if kind == "fixed":
            return self._emit([FIXED, schema["size"]]), 0
        if kind == "enum":
            ids = [self.text(msgspec.json.encode(s)) for s in schema["symbols"]]
            return self._emit([ENUM, len(ids), *ids]), 0
        if kind in ("array", "map"):
            child, depth = self.node(schema["items" if kind == "array" else "values"], stack)
            return self._emit([ARRAY if kind == "array" else MAP, child]), depth + 1
        if kind == "record":
            inner = (*stack, schema["name"])
            fields = [self.node(item["type"], inner) for item in schema["fields"]]
            keys = [
                self.text(msgspec.json.encode(item["name"]) + b":") for item in schema["fields"]
            ]
            operands = [
                x for key, (child, _) in zip(keys, fields, strict=True) for x in (key, child)
            ]
            depth = max((d for _, d in fields), default=0) + 1
            return self._emit([RECORD, len(fields), *operands]), depth
        if kind in _SCALARS:
            return self.node(kind, stack)
        raise _Unsupported

    def _compound(self, op: int, children: list[tuple[int, int]]) -> tuple[int, int]:
        depth = max(d for _, d in children)
        return self._emit([op, len(children), *(c for c, _ in children)]), depth

    def _emit(self, words: list[int]) -> int:
        self.nodes.extend(words)
        return len(self.nodes) - len(words)


def program(parsed) -> Program | None:
    """The compiled form of a parsed writer schema, or None where only the pure path can
    render its datums exactly (module docstring)."""
    builder = _Builder()
    try:
        root, depth = builder.node(parsed, ())
    except (_Unsupported, KeyError, TypeError):
        return None
    pool_at = np.zeros(len(builder.texts) + 1, np.int64)
    np.cumsum([len(t) for t in builder.texts], out=pool_at[1:])
    pool = np.frombuffer(b"".join(builder.texts), np.uint8)
    return Program(np.array(builder.nodes, np.int64), pool, pool_at, root, depth)


_ONE = np.uint64(1)
_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8)
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
_NULL, _TRUE, _FALSE, _U00 = (
    np.frombuffer(t, np.uint8) for t in (b"null", b"true", b"false", b"u00")
)


@njit(cache=True, nogil=True)
def _put(text, out, used):
    for i in range(text.size):
        out[used + i] = text[i]
    return used + text.size


@njit(cache=True, nogil=True)
def _long(raw, pos):
    """A zig-zag varint long of at most 10 bytes (the 10th 0 or 1) and the next position,
    or `_FAILED`: longer ones, which fastavro may read otherwise, go to the pure path."""
    bits = np.uint64(0)
    for i in range(10):
        if pos >= raw.size:
            return 0, _FAILED
        byte = raw[pos]
        pos += 1
        if i == 9 and byte > 1:
            return 0, _FAILED
        bits |= np.uint64(byte & 0x7F) << np.uint64(7 * i)
        if byte < 0x80:
            return np.int64(bits >> _ONE) ^ -np.int64(bits & _ONE), pos
    return 0, _FAILED


@njit(cache=True, nogil=True)
def _grown(out, used, need):
    """A copy of `out` with room for `need` more bytes (callers check first: the call,
    and its reference counting, only when it grows)."""
    grown = np.empty(max(2 * out.size, used + need), np.uint8)
    copy(grown, 0, out, 0, used)
    return grown


@njit(cache=True, nogil=True)
def _digits(value, out, used):
    """A non-negative integer in decimal (`value` < 2**64 as uint64)."""
    width = 1
    rest = value // np.uint64(10)
    while rest:
        width += 1
        rest //= np.uint64(10)
    for i in range(used + width - 1, used - 1, -1):
        out[i] = 48 + np.uint8(value % np.uint64(10))
        value //= np.uint64(10)
    return used + width


@njit(cache=True, nogil=True)
def _write_long(value, out, used):
    if value < 0:
        out[used] = 45  # "-"
        return _digits(np.uint64(-(value + 1)) + _ONE, out, used + 1)
    return _digits(np.uint64(value), out, used)


@njit(cache=True, nogil=True)
def _padded(value, width, out, used):
    for i in range(width - 1, -1, -1):
        out[used + i] = 48 + value % 10
        value //= 10
    return used + width


@njit(cache=True, nogil=True)
def _write_timestamp(micros, out, used):
    """msgspec's text of fastavro's aware UTC datetime: "YYYY-MM-DDTHH:MM:SS[.ffffff]Z"."""
    days = micros // 86400_000000
    rest = micros - days * 86400_000000
    z = days + 719468  # civil date from days (H. Hinnant's algorithm)
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    out[used] = 34
    used = _padded(year, 4, out, used + 1)
    out[used] = 45
    used = _padded(month, 2, out, used + 1)
    out[used] = 45
    used = _padded(day, 2, out, used + 1)
    out[used] = 84  # "T"
    seconds = rest // 1000000
    used = _padded(seconds // 3600, 2, out, used + 1)
    out[used] = 58
    used = _padded(seconds // 60 % 60, 2, out, used + 1)
    out[used] = 58
    used = _padded(seconds % 60, 2, out, used + 1)
    fraction = rest % 1000000
    if fraction:
        out[used] = 46
        used = _padded(fraction, 6, out, used + 1)
    out[used] = 90  # "Z"
    out[used + 1] = 34
    return used + 2


@njit(cache=True, nogil=True)
def _write_string(raw, pos, end, out, used):
    """UTF-8 `raw[pos:end]` as a JSON string the way msgspec escapes it, or `_FAILED` for
    bytes Python's strict UTF-8 decoder refuses (fastavro's error: the pure path's)."""
    out[used] = 34
    used += 1
    while pos < end:
        byte = raw[pos]
        if byte < 0x80:
            if byte == 34 or byte == 92:
                out[used] = 92
                out[used + 1] = byte
                used += 2
            elif byte >= 0x20:
                out[used] = byte
                used += 1
            else:
                out[used] = 92
                short = (
                    98 if byte == 8 else 116 if byte == 9 else 110 if byte == 10 else
                    102 if byte == 12 else 114 if byte == 13 else 0
                )  # fmt: skip
                if short:
                    out[used + 1] = short
                    used += 2
                else:
                    _put(_U00, out, used + 1)
                    out[used + 4] = 48 + (byte >> 4)
                    out[used + 5] = _HEX[byte & 15]
                    used += 6
            pos += 1
            continue
        low, high, more = 0x80, 0xBF, 0
        if 0xC2 <= byte <= 0xDF:
            more = 1
        elif 0xE0 <= byte <= 0xEF:
            more = 2
            low = 0xA0 if byte == 0xE0 else 0x80
            high = 0x9F if byte == 0xED else 0xBF
        elif 0xF0 <= byte <= 0xF4:
            more = 3
            low = 0x90 if byte == 0xF0 else 0x80
            high = 0x8F if byte == 0xF4 else 0xBF
        else:
            return _FAILED
        if pos + more >= end:
            return _FAILED
        if not low <= raw[pos + 1] <= high:
            return _FAILED
        for k in range(2, more + 1):
            if not 0x80 <= raw[pos + k] <= 0xBF:
                return _FAILED
        copy(out, used, raw, pos, more + 1)
        used += more + 1
        pos += more + 1
    out[used] = 34
    return used + 1


@njit(cache=True, nogil=True)
def _write_base64(raw, pos, end, out, used):
    """Bytes as msgspec writes them: standard base64 with padding, quoted."""
    out[used] = 34
    used += 1
    while end - pos >= 3:
        n = (np.int64(raw[pos]) << 16) | (np.int64(raw[pos + 1]) << 8) | raw[pos + 2]
        for k in range(4):
            out[used + k] = _B64[(n >> (18 - 6 * k)) & 63]
        used += 4
        pos += 3
    left = end - pos
    if left:
        n = np.int64(raw[pos]) << 16
        if left == 2:
            n |= np.int64(raw[pos + 1]) << 8
        for k in range(4):
            out[used + k] = _B64[(n >> (18 - 6 * k)) & 63] if k <= left else 61
        used += 4
    out[used] = 34
    return used + 1


@njit(cache=True, nogil=True)
def _has_null(out, start, end):
    for i in range(start, end - 3):
        if out[i] == 110 and out[i + 1] == 117 and out[i + 2] == 108 and out[i + 3] == 108:
            return True
    return False


@njit(cache=True, nogil=True, inline="always")
def _float(raw, pos, single, scratch, as_float, as_double):
    """A float (`single`) or double at `pos` as a float64 (its bytes copied to `scratch`,
    read through its views `as_float` and `as_double`) and the next position, or
    `_FAILED` when it runs past `raw` or is not finite (NaN and infinities: the pure
    path)."""
    size = 4 if single else 8
    if raw.size - pos < size:
        return 0.0, _FAILED
    copy(scratch, 0, raw, pos, size)
    value = np.float64(as_float[0]) if single else as_double[0]
    if not np.isfinite(value):
        return 0.0, _FAILED
    return value, pos + size


@njit(cache=True, nogil=True, inline="always")
def _long_text(op, raw, pos, out, used):
    """A long at `pos` written as a number (LONG) or an ISO-8601 timestamp (TS_MILLIS,
    TS_MICROS) into `out` (room for 64 bytes at `used`): (bytes used, the next position),
    or a position of `_FAILED` (a bad varint, a timestamp near datetime's limits)."""
    value, pos = _long(raw, pos)
    if pos < 0:
        return used, _FAILED
    if op == LONG:
        return _write_long(value, out, used), pos
    scale = 1000 if op == TS_MILLIS else 1
    if not _MIN_US // scale <= value <= _MAX_US // scale:
        return used, _FAILED
    return _write_timestamp(value * scale, out, used), pos


@njit(cache=True, nogil=True, inline="always")
def _block_count(raw, pos):
    """The item count of an array or map block at `pos` (a negative count: its size
    follows, skipped) and the next position, or `_FAILED`."""
    items, pos = _long(raw, pos)
    if pos >= 0 and items < 0:
        items = -items
        _, pos = _long(raw, pos)
    if pos < 0 or items < 0:
        return 0, _FAILED
    return items, pos


@njit(cache=True, nogil=True, inline="always")
def _new_key(raw, pos, size, keys, key_ends, first, n_keys):
    """Whether the map key `raw[pos:pos + size]` may join the map's keys so far
    (`keys[first:n_keys]`, raw starts and ends): not a repeat (fastavro's dict keeps one
    of them) nor its 65th."""
    if n_keys - first == MAX_MAP_KEYS:
        return False
    for k in range(first, n_keys):
        if key_ends[k] - keys[k] == size and np.array_equal(
            raw[keys[k] : key_ends[k]], raw[pos : pos + size]
        ):
            return False
    return True


@njit(cache=True, nogil=True)
def _walk(nodes, pool, pool_at, root, depth, raw, count):
    """Render `count` datums of node `root` that must fill `raw` exactly: the text in
    `out` (grown as needed), each datum's end in `ends`, each float's place and value in
    `fpos`/`fval` (left out of the text). Returns (bytes used or `_FAILED`, floats, out,
    ends, fpos, fval); the buffers are made here, where that is cheapest."""
    nodes, pool, pool_at, raw = unowned(nodes), unowned(pool), unowned(pool_at), unowned(raw)
    owned = np.empty(2 * raw.size + 8 * count + 64, np.uint8)  # `out` sees it uncounted
    out = unowned(owned)
    ends = np.empty(count, np.int64)
    fpos = np.empty(max(count, 1), np.int64)
    fval = np.empty(max(count, 1), np.float64)
    st_node = np.empty(depth + 1, np.int64)
    st_pos = np.empty(depth + 1, np.int64)  # record: field index; array/map: items left
    st_keys = np.empty(depth + 1, np.int64)  # map: where its keys start in `keys`
    keys = np.empty((depth + 1) * MAX_MAP_KEYS + 1, np.int64)  # map keys' raw start, end
    key_ends = np.empty_like(keys)
    scratch = np.empty(8, np.uint8)
    as_double = scratch.view(np.float64)
    as_float = scratch[:4].view(np.float32)
    limit = 64 * raw.size + 16 * count + 65536  # beyond: pathological, the pure path
    pos = used = floats = 0
    for datum in range(count):
        start, floats_before, level, n_keys = used, floats, 0, 0
        node = root
        while True:
            if used + 64 > out.size:
                owned = _grown(out, used, 64)
                out = unowned(owned)
            op = nodes[node]
            descend = -1
            if op == UNION:
                branch, pos = _long(raw, pos)
                if pos < 0 or branch < 0 or branch >= nodes[node + 1]:
                    return _FAILED, 0, owned, ends, fpos, fval
                node = nodes[node + 2 + branch]
                continue
            if op == NULL:
                used = _put(_NULL, out, used)
            elif op == BOOLEAN:
                if pos >= raw.size or raw[pos] > 1:
                    return _FAILED, 0, owned, ends, fpos, fval
                used = _put(_TRUE if raw[pos] else _FALSE, out, used)
                pos += 1
            elif op in (LONG, TS_MILLIS, TS_MICROS):
                used, pos = _long_text(op, raw, pos, out, used)
                if pos < 0:
                    return _FAILED, 0, owned, ends, fpos, fval
            elif op in (FLOAT, DOUBLE):
                value, pos = _float(raw, pos, op == FLOAT, scratch, as_float, as_double)
                if pos < 0:
                    return _FAILED, 0, owned, ends, fpos, fval
                if floats == fpos.size:
                    fpos = np.concatenate((fpos, np.empty_like(fpos)))
                    fval = np.concatenate((fval, np.empty_like(fval)))
                fpos[floats] = used
                fval[floats] = value
                floats += 1
            elif op in (STRING, BYTES, FIXED):
                if op == FIXED:
                    size = nodes[node + 1]
                else:
                    size, pos = _long(raw, pos)
                    if pos < 0 or size < 0:
                        return _FAILED, 0, owned, ends, fpos, fval
                if size > raw.size - pos:
                    return _FAILED, 0, owned, ends, fpos, fval
                if used + 6 * size + 8 > out.size:
                    owned = _grown(out, used, 6 * size + 8)
                    out = unowned(owned)
                if op == STRING:
                    used = _write_string(raw, pos, pos + size, out, used)
                    if used < 0:
                        return _FAILED, 0, owned, ends, fpos, fval
                else:
                    used = _write_base64(raw, pos, pos + size, out, used)
                pos += size
            elif op == ENUM:
                index, pos = _long(raw, pos)
                if pos < 0 or index < 0 or index >= nodes[node + 1]:
                    return _FAILED, 0, owned, ends, fpos, fval
                text = nodes[node + 2 + index]
                size = pool_at[text + 1] - pool_at[text]
                if used + size > out.size:
                    owned = _grown(out, used, size)
                    out = unowned(owned)
                copy(out, used, pool, pool_at[text], size)
                used += size
            elif op == RECORD:
                out[used] = 123  # "{"
                used += 1
                if nodes[node + 1] == 0:
                    out[used] = 125
                    used += 1
                else:
                    st_node[level] = node
                    st_pos[level] = 0
                    level += 1
                    descend = -2  # the first field, below
            else:  # ARRAY or MAP: blocks of items
                out[used] = 91 if op == ARRAY else 123
                used += 1
                st_node[level] = node
                st_pos[level] = 0
                st_keys[level] = n_keys
                level += 1
                descend = -3  # the first block, below
            # then the next value: a field, an item, or up a level when one is complete
            while level and descend < 0:
                top = level - 1
                parent = nodes[st_node[top]]
                if parent == RECORD:
                    field = st_pos[top] + (0 if descend == -2 else 1)
                    descend = -1
                    if field == nodes[st_node[top] + 1]:
                        out[used] = 125
                        used += 1
                        level -= 1
                        continue
                    st_pos[top] = field
                    key = nodes[st_node[top] + 2 + 2 * field]
                    size = pool_at[key + 1] - pool_at[key]
                    if used + size + 1 > out.size:
                        owned = _grown(out, used, size + 1)
                        out = unowned(owned)
                    if field:
                        out[used] = 44
                        used += 1
                    copy(out, used, pool, pool_at[key], size)
                    used += size
                    descend = nodes[st_node[top] + 3 + 2 * field]
                    break
                first = descend == -3
                descend = -1
                if not first:
                    st_pos[top] -= 1
                if st_pos[top] == 0:  # a new block
                    items, pos = _block_count(raw, pos)
                    if pos < 0:
                        return _FAILED, 0, owned, ends, fpos, fval
                    if items == 0:
                        out[used] = 93 if parent == ARRAY else 125
                        used += 1
                        n_keys = st_keys[top]
                        level -= 1
                        continue
                    st_pos[top] = items
                if not first:
                    out[used] = 44
                    used += 1
                if parent == MAP:
                    size, pos = _long(raw, pos)
                    if pos < 0 or size < 0 or size > raw.size - pos:
                        return _FAILED, 0, owned, ends, fpos, fval
                    if not _new_key(raw, pos, size, keys, key_ends, st_keys[top], n_keys):
                        return _FAILED, 0, owned, ends, fpos, fval
                    keys[n_keys] = pos
                    key_ends[n_keys] = pos + size
                    n_keys += 1
                    if used + 6 * size + 8 > out.size:
                        owned = _grown(out, used, 6 * size + 8)
                        out = unowned(owned)
                    used = _write_string(raw, pos, pos + size, out, used)
                    if used < 0:
                        return _FAILED, 0, owned, ends, fpos, fval
                    out[used] = 58
                    used += 1
                    pos += size
                descend = nodes[st_node[top] + 1]
                break
            if used > limit:
                return _FAILED, 0, owned, ends, fpos, fval
            if not level:
                break
            node = descend
        if floats > floats_before and _has_null(out, start, used):
            return _FAILED, 0, owned, ends, fpos, fval  # `render` writes it with the stdlib encoder
        ends[datum] = used
    if pos != raw.size:
        return _FAILED, 0, owned, ends, fpos, fval
    return used, floats, owned, ends, fpos, fval


@njit(cache=True, nogil=True)
def _splice(out, used, ends, fpos, floats, texts):
    """The text with each float's text (msgspec's, comma separated in `texts`) put in its
    place; `ends` moved along."""
    total = used + texts.size - (floats - 1)
    spliced = np.empty(total, np.uint8)
    src = dst = text_at = 0
    datum = 0
    for i in range(floats):
        at = fpos[i]
        while datum < ends.size and ends[datum] <= at:
            ends[datum] += dst - src
            datum += 1
        copy(spliced, dst, out, src, at - src)
        dst += at - src
        src = at
        text_end = text_at
        while text_end < texts.size and texts[text_end] != 44:
            text_end += 1
        copy(spliced, dst, texts, text_at, text_end - text_at)
        dst += text_end - text_at
        text_at = text_end + 1
    while datum < ends.size:
        ends[datum] += dst - src
        datum += 1
    copy(spliced, dst, out, src, used - src)
    return spliced


_encode = msgspec.json.Encoder().encode


def render_block(prog: Program, raw, count: int) -> tuple[bytes, np.ndarray] | None:
    """The block's `count` datums as JSON text back to back and each one's end offset,
    exactly as fastavro and `render.datums_json` give them; None where the pure path must
    say (module docstring)."""
    data = readonly(raw)
    used, floats, out, ends, fpos, fval = _walk(
        prog.nodes, prog.pool, prog.pool_at, prog.root, prog.depth, data, count
    )
    if used < 0:
        return None
    if floats:
        texts = _encode(fval[:floats].tolist())[1:-1]
        out = _splice(out, used, ends, fpos, floats, np.frombuffer(texts, np.uint8))
        return out.tobytes(), ends
    return out[:used].tobytes(), ends


def warm() -> None:
    """Load the walk and the float splice for the arguments `render_block` gives them
    (`wirecodecs.compiled.warm`)."""
    prog = program("long")
    load(_walk, prog.nodes, prog.pool, prog.pool_at, prog.root, prog.depth, readonly(b""), 0)
    ints = np.empty(0, np.int64)
    load(_splice, np.empty(0, np.uint8), 0, ints, ints, 0, readonly(b""))

"""The Hercules event walk compiled with numba, and the column buffers it fills.

The same walk as `event.EventReader` (docs/hercules.md, "Byte layout"), iterative (a frame
stack instead of recursion) over a numpy uint8 view of the buffered bytes. A compiled call
walks a run of events (`walk_file`: the events of a file's buffer; `walk_values`: one
event per Kafka record value) and appends, per event and per tag entry, numbers to numpy
buffers and texts (paths, keys, strings, byte vectors, UUIDs, the JSON view) back to back
to byte buffers. `Columns` keeps them per flush and builds the Arrow columns once
(`batch`), without a Python object per event or tag.

The compiled walk checks every bound and limit the pure reader checks (lengths against the
buffered bytes, `max_depth`, the path and Null-vector budgets) but reports only success or
failure: on failure the caller reads the event with the pure `EventReader`, which raises
the exact DecodeError (kind, offset, detail). Events the pure reader renders in ways not
worth compiling also go to it, and their rows are appended with `Columns.add_pure`: a key
or String that is not valid UTF-8 (replacement characters, `key_raw`/`bytes_value`) and
duplicate keys in a container (the JSON view keeps the last value at the first one's
place). Finite floats in the JSON view are left as placeholders by the walk and rendered
per flush: Arrow's cast to string gives the shortest round-trip digits, which `_splice`
lays out as Python's `repr` does.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from wirecodecs.arrow_columns import binary_column, offsets_of, validity
from wirecodecs.hercules.event import (
    BYTE,
    CONTAINER,
    DOUBLE,
    FLAG,
    FLOAT,
    INTEGER,
    LONG,
    MIN_SIZE,
    NULL,
    PATHS_PER_BYTE,
    SHORT,
    STRING,
    TYPE_CODES,
    TYPE_NAMES,
    UUID,
    VECTOR,
    VERSION,
    WIDTH,
)
from wirecodecs.hercules.schema import HERCULES_SCHEMA, TAG_FIELDS, TAG_TYPE
from wirecodecs.kernels import big_endian, copy, enlarged, load, readonly, unowned
from wirecodecs.rows import EVENT_TIME_MAX_MS, EVENT_TIME_MIN_MS

_FAILED = -1  # the event does not read, or needs the pure reader: it says what to do
_GROW = -100  # _GROW - k: buffer k (`used` index) may be too small (nothing appended)
STOPPED, FULL, COUNTED = 0, 1, 2  # a walk's other outcomes (`walk_file`)

# Per tag entry rows of `Columns.tags` (int32; sizes: -1 for null; the entry's number, by
# its type the Byte..Long value, the Flag or the Float/Double bits, is in `Columns.values`) ...
(T_PARENT, T_INDEX, T_TYPE, T_ELEMENT, T_COUNT,
 T_PATH, T_KEY, T_KEY_RAW, T_STRING, T_BYTES) = range(10)  # fmt: skip
# ... per event rows of `Columns.events` (offset: in the file, or the value's index) ...
E_OFFSET, E_VERSION, E_TIMESTAMP, E_SIZE, E_TAG_COUNT, E_TAGS, E_JSON = range(7)
# ... byte buffers (texts back to back) and the `used` counters: the byte buffers', then
# events, tags and float placeholders (the key stack only grows: it holds no output)
B_PATH, B_KEY, B_KEY_RAW, B_STRING, B_BYTES, B_JSON, B_UUID = range(7)
U_EVENTS, U_TAGS, U_FLOATS, U_KEYS = range(7, 11)
# Frame stack rows: vector or container, items left, vector element type, parent entry,
# path prefix in bytes and in characters, depth, next element index, first key on the
# key stack, whether an item was written (JSON commas)
(F_VECTOR, F_LEFT, F_ELEMENT, F_PARENT, F_PLEN, F_PCHARS, F_DEPTH, F_INDEX, F_KEYS,
 F_ANY) = range(10)  # fmt: skip
_HEADER = 27  # version, timestamp, uuid, tag count
_PATH_BYTES = 1 << 12  # a longer path is left to the pure reader
_VALUE_BYTES_PER_TAG = 16  # wire bytes per tag entry in log events (`samples.log_event`)
_enlarged = partial(enlarged, empty=np.empty)  # numpy's, as all the buffers of `Columns`
_MIN_SIZE = np.full(256, -1, np.int64)
for _code, _size in MIN_SIZE.items():
    _MIN_SIZE[_code] = _size
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
_IS_INT, _IS_FLOAT, _HAS_COUNT = (np.isin(np.arange(256), kinds) for kinds in (
    (BYTE, SHORT, INTEGER, LONG), (FLOAT, DOUBLE), (CONTAINER, VECTOR)))  # fmt: skip
_HEX_UPPER = np.frombuffer(b"0123456789ABCDEF", np.uint8)
_ZERO = np.frombuffer(b"0.0", np.uint8)
_NULL = np.frombuffer(b"null", np.uint8)
_TRUE = np.frombuffer(b"true", np.uint8)
_FALSE = np.frombuffer(b"false", np.uint8)
_NAN = np.frombuffer(b'"NaN"', np.uint8)
_INF = np.frombuffer(b'"Infinity"', np.uint8)
_NEG_INF = np.frombuffer(b'"-Infinity"', np.uint8)
_U00 = np.frombuffer(b"\\u00", np.uint8)
_INT64_MIN = np.frombuffer(b"-9223372036854775808", np.uint8)
_ESCAPES = np.zeros(128, np.uint8)  # the JSON encoder's two-character escapes
for _char, _escape in zip(b'"\\\n\r\t\b\f', b'"\\nrtbf', strict=True):
    _ESCAPES[_char] = _escape


@njit(cache=True, nogil=True)
def _signed(value, size):
    bits = 8 * size
    if size < 8 and value >= np.int64(1) << (bits - 1):
        return value - (np.int64(1) << bits)
    return value


@njit(cache=True, nogil=True, inline="always")
def _utf8(data, pos, end):
    """Characters of `data[pos:end]` if it is valid UTF-8 (as Python decodes it), else -1."""
    chars = 0
    while pos < end:
        b = data[pos]
        chars += 1
        if b < 0x80:
            pos += 1
            continue
        lo, hi = 0x80, 0xBF
        if 0xC2 <= b <= 0xDF:
            n = 1
        elif 0xE0 <= b <= 0xEF:
            n = 2
            if b == 0xE0:
                lo = 0xA0
            elif b == 0xED:  # no surrogates
                hi = 0x9F
        elif 0xF0 <= b <= 0xF4:
            n = 3
            if b == 0xF0:
                lo = 0x90
            elif b == 0xF4:
                hi = 0x8F
        else:
            return -1
        if pos + n >= end or data[pos + 1] < lo or data[pos + 1] > hi:
            return -1
        for i in range(pos + 2, pos + n + 1):
            if data[i] < 0x80 or data[i] > 0xBF:
                return -1
        pos += n + 1
    return chars


@njit(cache=True, nogil=True)
def _put(out, at, literal):
    """`literal` at `out[at:]`: the next position, or -1 when `out` is too small."""
    n = literal.size
    if at < 0 or at + n > out.size:
        return -1
    copy(out, at, literal, 0, n)
    return at + n


@njit(cache=True, nogil=True)
def _put_byte(out, at, byte):
    if at < 0 or at >= out.size:
        return -1
    out[at] = byte
    return at + 1


@njit(cache=True, nogil=True, inline="always")
def _json_text(data, pos, end, out, at):
    """UTF-8 `data[pos:end]` as a JSON string at `out[at:]`, escaped as
    `json.dumps(..., ensure_ascii=False)` does; the next position or -1 (no room)."""
    if at < 0 or at + 2 + 6 * (end - pos) > out.size:
        return -1
    out[at] = 34
    at += 1
    for i in range(pos, end):
        b = data[i]
        if b >= 0x80 or (b >= 0x20 and _ESCAPES[b] == 0):
            out[at] = b
            at += 1
        elif b >= 0x20 or _ESCAPES[b] != 0:
            out[at] = 92
            out[at + 1] = _ESCAPES[b]
            at += 2
        else:
            copy(out, at, _U00, 0, 4)
            out[at + 4] = _HEX[b >> 4]
            out[at + 5] = _HEX[b & 15]
            at += 6
    out[at] = 34
    return at + 1


@njit(cache=True, nogil=True)
def _json_int(value, out, at):
    """Decimal `value` at `out[at:]`: the next position, or -1 (no room)."""
    if at < 0 or at + 20 > out.size:
        return -1
    if value == np.iinfo(np.int64).min:
        return _put(out, at, _INT64_MIN)
    if value < 0:
        out[at] = 45
        at += 1
        value = -value
    digits = 1
    rest = value
    while rest >= 10:
        rest //= 10
        digits += 1
    for i in range(at + digits - 1, at - 1, -1):
        out[i] = 48 + value % 10
        value //= 10
    return at + digits


@njit(cache=True, nogil=True)
def _uuid_text(data, pos, out, at):
    """16 bytes as canonical lowercase UUID text (36 bytes) at `out[at:]`."""
    for i in range(16):
        if i == 4 or i == 6 or i == 8 or i == 10:
            out[at] = 45
            at += 1
        out[at] = _HEX[data[pos + i] >> 4]
        out[at + 1] = _HEX[data[pos + i] & 15]
        at += 2
    return at


@njit(cache=True, nogil=True)
def _duplicates(data, keys, first, stop, slots, stamps):
    """Whether two keys of `keys[:, first:stop]` (position, length, hash) are equal: one
    pass through an open-addressing table whose slots are current when stamped with this
    call's number (kept in the last stamp), so it is never cleared."""
    n = stop - first
    if n < 2:
        return False
    stamp = stamps[-1] + 1
    stamps[-1] = stamp
    size = 2
    while size < 2 * n:
        size <<= 1
    mask = size - 1
    for k in range(first, stop):
        h = keys[2, k]
        slot = h & mask
        while stamps[slot] == stamp:
            other = slots[slot]
            if keys[2, other] == h and keys[1, other] == keys[1, k]:
                a, b, same = keys[0, other], keys[0, k], True
                for i in range(keys[1, k]):
                    if data[a + i] != data[b + i]:
                        same = False
                        break
                if same:
                    return True
            slot = (slot + 1) & mask
        stamps[slot] = stamp
        slots[slot] = k
    return False


@njit(cache=True, nogil=True)
def _event(data, start, end, exact, max_event, max_depth, cols, scratch):
    """Append the event at `start` (read within `end`): its end, `_FAILED` when it does not
    read, needs the pure reader, or is not followed by the end or, unless `exact`, by a
    version byte (the file walk then checks for a damaged length); or `_GROW - k`."""
    used, events, tags, values, floats, float_at, bufs = cols
    path_b, key_b, _, str_b, bytes_b, json_b, uuid_b = bufs
    frames, pathbuf, keys, slots, stamps, bits64, double, bits32, single = scratch
    ev, t0, nf = used[U_EVENTS], used[U_TAGS], used[U_FLOATS]
    at_path, at_key, at_str = used[B_PATH], used[B_KEY], used[B_STRING]
    at_bytes, at_json, at_uuid = used[B_BYTES], used[B_JSON], used[B_UUID]
    if start + _HEADER > end or max_depth < 1:
        return _FAILED
    if ev >= events.shape[1]:
        return _GROW - U_EVENTS
    if at_uuid + 36 > uuid_b.size:
        return _GROW - B_UUID
    count = big_endian(data, start + 25, 2)
    pos = start + _HEADER
    if pos + 2 * count > end:
        return _FAILED
    _uuid_text(data, start + 9, uuid_b, at_uuid)
    paths_left = PATHS_PER_BYTE * max_event
    nulls_left = max_event
    at_json = _put_byte(json_b, at_json, 123)
    for row in range(frames.shape[0]):
        frames[row, 0] = 0
    frames[F_LEFT, 0] = count
    frames[F_PARENT, 0] = -1
    frames[F_DEPTH, 0] = 1
    sp, kt, t = 1, 0, t0
    while sp > 0:
        f = sp - 1
        if frames[F_LEFT, f] == 0:  # the container or vector ends
            if frames[F_VECTOR, f]:
                at_json = _put_byte(json_b, at_json, 93)
            else:
                if _duplicates(data, keys, frames[F_KEYS, f], kt, slots, stamps):
                    return _FAILED
                kt = frames[F_KEYS, f]
                at_json = _put_byte(json_b, at_json, 125)
            sp -= 1
            continue
        frames[F_LEFT, f] -= 1
        if frames[F_ANY, f]:
            at_json = _put_byte(json_b, at_json, 44)
        frames[F_ANY, f] = 1
        if t >= tags.shape[1]:
            return _GROW - U_TAGS
        plen, pchars = frames[F_PLEN, f], frames[F_PCHARS, f]
        q = plen
        if frames[F_VECTOR, f] == 0:  # a tag: key, type, value
            if pos >= end:
                return _FAILED
            kpos = pos + 1
            pos = kpos + data[pos]
            if pos >= end:
                return _FAILED
            chars = _utf8(data, kpos, pos)
            if chars < 0 or plen + 3 * (pos - kpos) > pathbuf.size:
                return _FAILED
            if kt >= keys.shape[1]:
                return _GROW - U_KEYS
            h = np.int64(-3750763034362895579)  # FNV-1a
            for i in range(kpos, pos):
                b = data[i]
                h = (h ^ b) * 1099511628211
                if b == 37 or b == 47 or b == 91 or b == 93:  # % / [ ]
                    pathbuf[q] = 37
                    pathbuf[q + 1] = _HEX_UPPER[b >> 4]
                    pathbuf[q + 2] = _HEX_UPPER[b & 15]
                    q += 3
                    chars += 2
                else:
                    pathbuf[q] = b
                    q += 1
            keys[0, kt], keys[1, kt], keys[2, kt] = kpos, pos - kpos, h
            kt += 1
            if at_key + pos - kpos > key_b.size:
                return _GROW - B_KEY
            copy(key_b, at_key, data, kpos, pos - kpos)
            at_key += pos - kpos
            tags[T_KEY, t], tags[T_INDEX, t] = pos - kpos, -1
            at_json = _json_text(data, kpos, pos, json_b, at_json)
            at_json = _put_byte(json_b, at_json, 58)
            code = data[pos]
            pos += 1
            depth = frames[F_DEPTH, f]
        else:  # a vector element: path[i]
            index = frames[F_INDEX, f]
            frames[F_INDEX, f] = index + 1
            if q + 24 > pathbuf.size:
                return _FAILED
            pathbuf[q] = 91
            q = _json_int(index, pathbuf, q + 1)
            pathbuf[q] = 93
            q += 1
            chars = q - plen
            tags[T_KEY, t], tags[T_INDEX, t] = -1, index
            code = frames[F_ELEMENT, f]
            depth = frames[F_DEPTH, f] + 1
        if at_json < 0:
            return _GROW - B_JSON
        chars += pchars  # of this entry's path, pathbuf[:q]
        if at_path + q > path_b.size:
            return _GROW - B_PATH
        copy(path_b, at_path, pathbuf, 0, q)
        at_path += q
        tags[T_PATH, t], tags[T_PARENT, t], tags[T_TYPE, t] = q, frames[F_PARENT, f], code
        tags[T_ELEMENT, t], tags[T_COUNT, t] = 0, 0
        for row in range(T_KEY_RAW, T_BYTES + 1):
            tags[row, t] = -1
        values[t], floats[t] = 0, 0.0
        me = t
        t += 1
        if code == STRING:
            if pos + 4 > end:
                return _FAILED
            size = _signed(big_endian(data, pos, 4), 4)
            at = pos + 4
            pos = at + size
            if size < 0 or pos > end or _utf8(data, at, pos) < 0:
                return _FAILED
            if at_str + size > str_b.size:
                return _GROW - B_STRING
            copy(str_b, at_str, data, at, size)
            at_str += size
            tags[T_STRING, me] = size
            at_json = _json_text(data, at, pos, json_b, at_json)
        elif code in (BYTE, SHORT, INTEGER, LONG):
            size = 1 if code == BYTE else 2 if code == SHORT else 4 if code == INTEGER else 8
            if pos + size > end:
                return _FAILED
            value = big_endian(data, pos, size)
            if code != BYTE:
                value = _signed(value, size)
            pos += size
            values[me] = value
            at_json = _json_int(value, json_b, at_json)
        elif code in (FLOAT, DOUBLE):
            size = 4 if code == FLOAT else 8
            if pos + size > end:
                return _FAILED
            raw = big_endian(data, pos, size)
            pos += size
            values[me] = raw
            if code == FLOAT:
                bits32[0] = _signed(raw, 4)
                value = np.float64(single[0])
            else:
                bits64[0] = raw
                value = double[0]
            floats[me] = value
            if value != value:
                at_json = _put(json_b, at_json, _NAN)
            elif value == np.inf:
                at_json = _put(json_b, at_json, _INF)
            elif value == -np.inf:
                at_json = _put(json_b, at_json, _NEG_INF)
            else:  # rendered per flush (`_splice`)
                if nf >= float_at.shape[1]:
                    return _GROW - U_FLOATS
                float_at[0, nf], float_at[1, nf] = at_json, me
                nf += 1
        elif code == FLAG:
            if pos >= end:
                return _FAILED
            values[me] = data[pos] != 0
            at_json = _put(json_b, at_json, _TRUE if data[pos] != 0 else _FALSE)
            pos += 1
        elif code == UUID:
            if pos + 16 > end:
                return _FAILED
            if at_str + 36 > str_b.size:
                return _GROW - B_STRING
            _uuid_text(data, pos, str_b, at_str)
            at_json = _put_byte(json_b, at_json, 34)
            if at_json >= 0 and at_json + 37 <= json_b.size:
                copy(json_b, at_json, str_b, at_str, 36)
                at_json = _put_byte(json_b, at_json + 36, 34)
            else:
                at_json = -1
            at_str += 36
            tags[T_STRING, me] = 36
            pos += 16
        elif code == NULL:
            at_json = _put(json_b, at_json, _NULL)
        elif code == CONTAINER:
            if pos + 2 > end:
                return _FAILED
            size = big_endian(data, pos, 2)
            pos += 2
            tags[T_COUNT, me] = size
            paths_left -= size * (chars + 1)
            if depth + 1 > max_depth or pos + 2 * size > end or paths_left < 0:
                return _FAILED
            if sp >= frames.shape[1] or q >= pathbuf.size:
                return _FAILED
            pathbuf[q] = 47
            for row in range(frames.shape[0]):
                frames[row, sp] = 0
            frames[F_LEFT, sp], frames[F_PARENT, sp], frames[F_DEPTH, sp] = size, me - t0, depth + 1
            frames[F_PLEN, sp], frames[F_PCHARS, sp], frames[F_KEYS, sp] = q + 1, chars + 1, kt
            sp += 1
            at_json = _put_byte(json_b, at_json, 123)
        elif code == VECTOR:
            if depth >= max_depth or pos + 5 > end:
                return _FAILED
            element = data[pos]
            size = _signed(big_endian(data, pos + 1, 4), 4)
            pos += 5
            if _MIN_SIZE[element] < 0 or size < 0 or pos + size * _MIN_SIZE[element] > end:
                return _FAILED
            if element == NULL:
                nulls_left -= size
                if nulls_left < 0:
                    return _FAILED
            elif element != BYTE:
                paths_left -= size * (chars + 2)
                if paths_left < 0:
                    return _FAILED
            tags[T_ELEMENT, me], tags[T_COUNT, me] = element, size
            at_json = _put_byte(json_b, at_json, 91)
            if element in (BYTE, NULL):
                if at_bytes + size > bytes_b.size:
                    return _GROW - B_BYTES
                if at_json < 0 or at_json + 5 * size + 24 > json_b.size:  # _json_int: 20
                    return _GROW - B_JSON
                if element == BYTE:
                    copy(bytes_b, at_bytes, data, pos, size)
                    at_bytes += size
                    tags[T_BYTES, me] = size
                for i in range(size):
                    if i:
                        at_json = _put_byte(json_b, at_json, 44)
                    if element == BYTE:
                        at_json = _json_int(np.int64(data[pos + i]), json_b, at_json)
                    else:
                        at_json = _put(json_b, at_json, _NULL)
                if element == BYTE:
                    pos += size
                at_json = _put_byte(json_b, at_json, 93)
            else:
                if sp >= frames.shape[1]:
                    return _FAILED
                for row in range(frames.shape[0]):
                    frames[row, sp] = 0
                frames[F_VECTOR, sp], frames[F_LEFT, sp], frames[F_ELEMENT, sp] = 1, size, element
                frames[F_PARENT, sp], frames[F_DEPTH, sp] = me - t0, depth
                frames[F_PLEN, sp], frames[F_PCHARS, sp] = q, chars
                sp += 1
        else:
            return _FAILED
        if at_json < 0:
            return _GROW - B_JSON
    if at_json < 0:
        return _GROW - B_JSON
    if pos != end if exact else pos < end and data[pos] != VERSION:
        return _FAILED
    events[E_OFFSET, ev], events[E_VERSION, ev], events[E_TIMESTAMP, ev] = (
        start,
        data[start],
        big_endian(data, start + 1, 8),
    )
    events[E_SIZE, ev], events[E_TAG_COUNT, ev], events[E_TAGS, ev] = pos - start, count, t - t0
    events[E_JSON, ev] = at_json - used[B_JSON]
    used[U_EVENTS], used[U_TAGS], used[U_FLOATS] = ev + 1, t, nf
    used[B_PATH], used[B_KEY], used[B_STRING] = at_path, at_key, at_str
    used[B_BYTES], used[B_JSON], used[B_UUID] = at_bytes, at_json, at_uuid + 36
    return pos


@njit(cache=True, nogil=True, inline="always")
def _unowned_all(cols, scratch):
    """`cols` and `scratch` with every array seen without its owner (`kernels.unowned`:
    no atomic reference counting as `_event` unpacks them, once per event); the callers'
    caller, `Columns`, holds them for the whole call."""
    used, events, tags, values, floats, float_at, bufs = cols
    frames, pathbuf, keys, slots, stamps, bits64, double, bits32, single = scratch
    return (
        (unowned(used), unowned(events), unowned(tags), unowned(values), unowned(floats),
         unowned(float_at), (unowned(bufs[0]), unowned(bufs[1]), unowned(bufs[2]),
         unowned(bufs[3]), unowned(bufs[4]), unowned(bufs[5]), unowned(bufs[6]))),
        (unowned(frames), unowned(pathbuf), unowned(keys), unowned(slots), unowned(stamps),
         unowned(bits64), unowned(double), unowned(bits32), unowned(single)),
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _walk_file(data, pos, end, ahead, max_events, max_rows, max_tags, max_event, max_depth,
               cols, scratch):  # fmt: skip
    """Events from `pos` while at least `ahead` bytes are buffered from each one's start
    (the file decoder buffers more before an event with fewer), at most `max_events`,
    until `max_rows` rows or `max_tags` entries are held: (outcome, position). Outcomes:
    `STOPPED` (too few bytes ahead), `FULL`, `COUNTED`, or the event at the position's
    `_FAILED` or `_GROW - k`."""
    data = unowned(data)
    cols, scratch = _unowned_all(cols, scratch)
    used = cols[0]
    for _ in range(max_events):
        if end - pos < ahead or pos >= end:
            return STOPPED, pos
        got = _event(data, pos, end, False, max_event, max_depth, cols, scratch)
        if got < 0:
            return got, pos
        pos = got
        if used[U_EVENTS] >= max_rows or used[U_TAGS] >= max_tags:
            return FULL, pos
    return COUNTED, pos


@njit(cache=True, nogil=True)
def _walk_values(data, offsets, first, max_event, max_depth, cols, scratch):
    """Values `first`... as one event each (offset: the value's index): (outcome, the
    value where the walk stopped). Outcomes: 0 (all done), `_FAILED`, `_GROW - k`."""
    data, offsets = unowned(data), unowned(offsets)
    cols, scratch = _unowned_all(cols, scratch)
    events = cols[1]
    used = cols[0]
    for i in range(first, offsets.size - 1):
        got = _event(data, offsets[i], offsets[i + 1], True, max_event, max_depth, cols, scratch)
        if got < 0:
            return got, i
        events[E_OFFSET, used[U_EVENTS] - 1] = i
    return 0, offsets.size - 1


@njit(cache=True, nogil=True, inline="always")
def _float_repr(text, start, stop, digits, out, at):
    """Arrow's shortest round-trip text of a finite double (`text[start:stop]`, e.g.
    `1e+15`, `0.00001`, `-0`) laid out as Python's `repr` at `out[at:]`."""
    if text[start] == 45:
        out[at] = 45
        at += 1
        start += 1
    n = 0
    whole = -1  # digits before the point
    exponent = 0
    i = start
    while i < stop:
        c = text[i]
        if c == 46:
            whole = n
        elif c == 101:  # e
            sign = -1 if text[i + 1] == 45 else 1
            for j in range(i + 1 + (text[i + 1] == 45 or text[i + 1] == 43), stop):
                exponent = 10 * exponent + text[j] - 48
            exponent *= sign
            break
        else:
            digits[n] = c
            n += 1
        i += 1
    point = (n if whole < 0 else whole) + exponent  # value = 0.DIGITS * 10**point
    lead = 0
    while lead < n and digits[lead] == 48:
        lead += 1
    while n > lead and digits[n - 1] == 48:
        n -= 1
    if lead == n:
        return _put(out, at, _ZERO)
    point -= lead
    n -= lead  # the significant digits: digits[lead : lead + n]
    if -4 < point <= 16:
        if point <= 0:  # 0.000DIGITS
            out[at], out[at + 1] = 48, 46
            for i in range(at + 2, at + 2 - point):
                out[i] = 48
            at += 2 - point
            copy(out, at, digits, lead, n)
            return at + n
        if point >= n:  # DIGITS000.0
            copy(out, at, digits, lead, n)
            for i in range(at + n, at + point):
                out[i] = 48
            out[at + point], out[at + point + 1] = 46, 48
            return at + point + 2
        copy(out, at, digits, lead, point)
        out[at + point] = 46
        copy(out, at + point + 1, digits, lead + point, n - point)
        return at + n + 1
    out[at] = digits[lead]
    at += 1
    if n > 1:
        out[at] = 46
        copy(out, at + 1, digits, lead + 1, n - 1)
        at += n
    out[at] = 101
    out[at + 1] = 45 if point - 1 < 0 else 43
    at += 2
    exponent = abs(point - 1)
    if exponent < 10:
        out[at] = 48
        at += 1
    return _json_int(np.int64(exponent), out, at)


@njit(cache=True, nogil=True)
def _splice(json, sizes, float_at, offsets, text, out, new_sizes):
    """The JSON views `json` (events of `sizes` bytes) with each float placeholder (at
    `float_at`) replaced by the float's text (`offsets` into `text`), into `out`."""
    digits = np.empty(32, np.uint8)
    src = dst = k = end = 0
    for e in range(sizes.size):
        first = dst
        end += sizes[e]
        while k < float_at.size and float_at[k] < end:
            n = float_at[k] - src
            copy(out, dst, json, src, n)
            src = float_at[k]
            dst = _float_repr(text, offsets[k], offsets[k + 1], digits, out, dst + n)
            k += 1
        copy(out, dst, json, src, end - src)
        dst += end - src
        src = end
        new_sizes[e] = dst - first
    return dst


_TYPE_NAMES = pa.array([TYPE_NAMES.get(code) for code in range(256)], pa.string())


def _type_names(codes: np.ndarray) -> pa.Array:
    """The type name of each code as a string column (null for code 0)."""
    return _TYPE_NAMES.take(pa.array(codes))


_LINEAGE = 2  # source_file, byte_offset: the first two columns of HERCULES_SCHEMA


class Columns:
    """The events walked since the last flush, in growable numpy buffers from which the
    Arrow columns are built once (`batch`). The arrays share these buffers: after a
    flush, go on with `fresh()`."""

    def __init__(self, max_depth: int, sizes: tuple | None = None, scratch=None) -> None:
        events, tags, floats, keys, byte_sizes = sizes or (64, 512, 256, 64, None)
        self.used = np.zeros(11, np.int64)
        self.events = np.empty((7, events), np.int64)
        self.tags = np.empty((10, tags), np.int32)
        self.values = np.empty(tags, np.int64)
        self.floats = np.empty(tags, np.float64)
        self.float_at = np.empty((2, floats), np.int64)
        self.bufs = tuple(np.empty(n, np.uint8) for n in byte_sizes or [1 << 12] * 7)
        self.max_depth = max_depth
        if scratch is not None:
            self.scratch = scratch
            self.keys = scratch[2]
            return
        bits64, bits32 = np.empty(1, np.int64), np.empty(1, np.int32)
        self.scratch = (
            np.empty((10, max_depth + 3), np.int64),  # frames
            np.empty(_PATH_BYTES, np.uint8),  # the current path
            *_key_stack(keys),
            bits64, bits64.view(np.float64), bits32, bits32.view(np.float32),
        )  # fmt: skip
        self.keys = self.scratch[2]

    @classmethod
    def for_values(cls, max_depth: int, count: int, size: int) -> Columns:
        """Buffers about as large as what `count` values of `size` bytes in all make (one
        event each; a tag entry per `_VALUE_BYTES_PER_TAG` bytes; paths, keys, strings and
        the JSON view each at most about the values' bytes), so that a large Kafka batch
        is walked without a dozen doublings, each copying what was walked."""
        tags = size // _VALUE_BYTES_PER_TAG + 512
        byte_sizes = [size + 4096] * 7
        byte_sizes[B_KEY_RAW] = byte_sizes[B_BYTES] = 1 << 12  # rare: grown when needed
        byte_sizes[B_UUID] = 36 * count
        return cls(max_depth, (count + 1, tags, tags // 8, 64, byte_sizes))

    def fresh(self) -> Columns:
        """Empty buffers as large as these (and the same scratch space)."""
        sizes = (self.events.shape[1], self.tags.shape[1], self.float_at.shape[1],
                 self.keys.shape[1], [buf.size for buf in self.bufs])  # fmt: skip
        return Columns(self.max_depth, sizes, self.scratch)

    @property
    def rows(self) -> int:
        return int(self.used[U_EVENTS])

    @property
    def entries(self) -> int:
        return int(self.used[U_TAGS])

    def _cols(self) -> tuple:
        return (self.used, self.events, self.tags, self.values, self.floats, self.float_at,
                self.bufs)  # fmt: skip

    def walk_file(
        self,
        data: np.ndarray,
        pos: int,
        end: int,
        ahead: int,
        max_events: int,
        max_rows: int,
        max_tags: int,
        max_event: int,
    ) -> tuple[int, int]:
        """The compiled file walk (`_walk_file`), growing buffers as it asks."""  # fmt: skip
        data = readonly(data)
        while True:
            limits = (max_events, max_rows, max_tags, max_event, self.max_depth)
            outcome, pos = _walk_file(data, pos, end, ahead, *limits, self._cols(), self.scratch)
            if outcome > _GROW:
                return outcome, pos
            self._grow(_GROW - outcome, end - pos)

    def walk_values(self, data: np.ndarray, offsets: np.ndarray, first: int, max_event: int):
        """The compiled value walk (`_walk_values`), growing buffers as it asks."""
        data = readonly(data)
        while True:
            outcome, at = _walk_values(data, offsets, first, max_event, self.max_depth,
                                       self._cols(), self.scratch)  # fmt: skip
            if outcome > _GROW:
                return outcome, at
            first = at
            self._grow(_GROW - outcome, int(offsets[at + 1] - offsets[at]))

    def _grow(self, which: int, event_bytes: int) -> None:
        """Double buffer `which` (a `used` index), or the key stack."""
        used = self.used
        if which < U_EVENTS:
            bufs = list(self.bufs)
            needed = max(used[which] + event_bytes, bufs[which].size + 1)
            bufs[which] = _enlarged(bufs[which], used[which], needed)
            self.bufs = tuple(bufs)
        elif which == U_EVENTS:
            self.events = _enlarged(self.events, used[U_EVENTS], self.events.shape[1] + 1)
        elif which == U_TAGS:
            self.tags = _enlarged(self.tags, used[U_TAGS], self.tags.shape[1] + 1)
            self.values = _enlarged(self.values, used[U_TAGS], self.tags.shape[1])
            self.floats = _enlarged(self.floats, used[U_TAGS], self.tags.shape[1])
        elif which == U_FLOATS:
            self.float_at = _enlarged(self.float_at, used[U_FLOATS], self.float_at.shape[1] + 1)
        else:
            self.scratch = (*self.scratch[:2], *_key_stack(2 * self.keys.shape[1]),
                            *self.scratch[5:])  # fmt: skip
            self.keys = self.scratch[2]

    def add_pure(self, offset: int, event, entries: list) -> None:
        """An event read by the pure `EventReader` (its `Event` and flat `entries`)."""
        n = len(entries) // WIDTH
        used = self.used
        while self.events.shape[1] <= used[U_EVENTS]:
            self._grow(U_EVENTS, 0)
        while self.tags.shape[1] < used[U_TAGS] + n:
            self._grow(U_TAGS, 0)
        field = {name: entries[i::WIDTH] for i, name in enumerate(TAG_FIELDS)}
        t = int(used[U_TAGS])
        tags = self.tags[:, t : t + n]
        tags[T_PARENT] = field["parent"]
        tags[T_INDEX] = [-1 if i is None else i for i in field["index"]]
        tags[T_TYPE] = [TYPE_CODES[name] for name in field["type"]]
        tags[T_ELEMENT] = [TYPE_CODES.get(name, 0) for name in field["element_type"]]
        tags[T_COUNT] = [0 if v is None else v for v in field["count"]]
        numbers = zip(field["int_value"], field["bool_value"], field["float_bits"], strict=True)
        self.values[t : t + n] = [next((v for v in vs if v is not None), 0) for vs in numbers]
        self.floats[t : t + n] = [0.0 if v is None else v for v in field["float_value"]]
        texts = {
            T_PATH: (B_PATH, field["path"]),
            T_KEY: (B_KEY, field["key"]),
            T_KEY_RAW: (B_KEY_RAW, field["key_raw"]),
            T_STRING: (B_STRING, field["string_value"]),
            T_BYTES: (B_BYTES, field["bytes_value"]),
        }
        for row, (buf, values) in texts.items():
            raw = [v.encode() if isinstance(v, str) else v for v in values]
            tags[row] = [-1 if v is None else len(v) for v in raw]
            self._append(buf, b"".join(filter(None, raw)))
        json = event.json.encode()
        self._append(B_JSON, json)
        self._append(B_UUID, event.uuid.encode())
        e = int(used[U_EVENTS])
        self.events[:, e] = (offset, event.version, event.timestamp, event.size,
                             event.tag_count, n, len(json))  # fmt: skip
        used[U_EVENTS] += 1
        used[U_TAGS] += n

    def _append(self, which: int, data: bytes) -> None:
        at = int(self.used[which])
        while self.bufs[which].size < at + len(data):
            self._grow(which, len(data))
        self.bufs[which][at : at + len(data)] = np.frombuffer(data, np.uint8)
        self.used[which] = at + len(data)

    def batch(self, source: str | None) -> pa.RecordBatch:
        """The rows as a record batch of HERCULES_SCHEMA (`source` the lineage's file), or
        of it less the lineage pair when `source` is None (offsets are value indices)."""
        n, m = self.rows, self.entries
        events, tags, values = self.events[:, :n], self.tags[:, :m], self.values[:m]
        kind = tags[T_TYPE]
        is_float = _IS_FLOAT[kind]
        children = {
            "path": binary_column(pa.string(), tags[T_PATH], self.bufs[B_PATH]),
            "parent": pa.array(tags[T_PARENT]),
            "key": binary_column(pa.string(), tags[T_KEY], self.bufs[B_KEY]),
            "key_raw": binary_column(pa.binary(), tags[T_KEY_RAW], self.bufs[B_KEY_RAW]),
            "index": _masked(tags[T_INDEX], tags[T_INDEX] >= 0),
            "type": _type_names(kind),
            "element_type": _type_names(tags[T_ELEMENT]),
            "count": _masked(tags[T_COUNT], _HAS_COUNT[kind]),
            "int_value": _masked(values, _IS_INT[kind]),
            "bool_value": _masked(values.astype(bool), kind == FLAG),
            "float_value": _masked(self.floats[:m], is_float),
            "float_bits": _masked(values, is_float),
            "string_value": binary_column(pa.string(), tags[T_STRING], self.bufs[B_STRING]),
            "bytes_value": binary_column(pa.binary(), tags[T_BYTES], self.bufs[B_BYTES]),
        }
        entries = pa.StructArray.from_arrays(list(children.values()), fields=list(TAG_TYPE))
        ticks = events[E_TIMESTAMP]
        millis = ticks // 10_000
        uuid_offsets = pa.py_buffer(np.arange(0, 36 * n + 1, 36, dtype=np.int32))
        uuid = pa.Array.from_buffers(
            pa.string(), n, [None, uuid_offsets, pa.py_buffer(self.bufs[B_UUID])]
        )
        columns = {
            "source_file": pa.repeat(pa.scalar(source, pa.string()), n),
            "byte_offset": pa.array(events[E_OFFSET]),
            "event_time": _masked(
                ticks // 10, (millis >= EVENT_TIME_MIN_MS) & (millis <= EVENT_TIME_MAX_MS)
            ),
            "version": pa.array(events[E_VERSION].astype(np.int16)),
            "timestamp": pa.array(ticks),
            "uuid": uuid,
            "size": pa.array(events[E_SIZE].astype(np.int32)),
            "tag_count": pa.array(events[E_TAG_COUNT].astype(np.int32)),
            "tags": pa.ListArray.from_arrays(
                pa.array(offsets_of(events[E_TAGS])),
                entries,
                type=HERCULES_SCHEMA.field("tags").type,
            ),
            "tags_json": self._json(events[E_JSON]),
        }
        fields = list(HERCULES_SCHEMA)[_LINEAGE if source is None else 0 :]
        return pa.RecordBatch.from_arrays(
            [columns[field.name].cast(field.type) for field in fields], schema=pa.schema(fields)
        )

    def _json(self, sizes: np.ndarray) -> pa.Array:
        """The JSON views, their float placeholders filled in (`_splice`)."""
        placed = int(self.used[U_FLOATS])
        json = self.bufs[B_JSON][: int(self.used[B_JSON])]
        if placed:
            where = self.float_at[:, :placed]
            text = pc.cast(pa.array(self.floats[where[1]]), pa.string())
            _, offsets, chars = text.buffers()
            offsets = np.frombuffer(offsets, np.int32, placed + 1)
            out = np.empty(json.size + 32 * placed + 32, np.uint8)  # repr: 24 at most
            new_sizes = np.empty_like(sizes)
            json = out[: _splice(json, sizes, where[0], offsets,
                                 np.frombuffer(chars, np.uint8), out, new_sizes)]  # fmt: skip
            sizes = new_sizes
        return binary_column(pa.string(), sizes, json)


def _key_stack(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The duplicate-key check's stack of `size` keys and its table (`_duplicates`): 4x
    the slots, so that a container of every key stacked fits at most half full."""
    return (
        np.empty((3, size), np.int64),
        np.empty(4 * size, np.int64),
        np.zeros(4 * size + 1, np.int64),
    )


def _masked(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    """`values` (contiguous) as an Arrow column, null where not `valid`; booleans packed."""
    bitmap, nulls = validity(valid)
    if values.dtype == np.bool_:
        data, type_ = np.packbits(values, bitorder="little"), pa.bool_()
    else:
        data, type_ = values, pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(type_, values.size, [bitmap, pa.py_buffer(data)], nulls)


def warm() -> None:
    """Load the file walk, the value walk and the float splice for the arguments
    `Columns` gives them (`wirecodecs.compiled.warm`)."""
    columns, data, ints = Columns(1), readonly(b""), np.empty(0, np.int64)
    load(_walk_file, data, *[0] * 8, columns._cols(), columns.scratch)
    load(_walk_values, data, ints, 0, 0, 0, columns._cols(), columns.scratch)
    text = np.empty(0, np.uint8)
    load(_splice, text, ints, ints, np.empty(0, np.int32), text, text, ints)

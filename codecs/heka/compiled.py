"""The Heka walk compiled with numba: framing, header and message reading in batches.

`frames` walks a buffered view of the stream as the pure walk does (docs/heka.md, "Record
framing": separator, header length, unit separator, a header that parses, a
`message_length` in range; else skip and resync) and lists its frames in a table.
`messages` reads the bodies of listed frames (the snappy trial's inflated bodies given
beside the stream) and appends each row to the column buffers of a `Buffers`: numbers in
int64 tables, strings copied back to back per column with their lengths (-1 for null),
so a flush builds every Arrow column from buffers, without a Python object per message.

One protobuf walk (`_token`) serves the header, the message and its Fields, with proto2
semantics as `message.py` reads them: last scalar wins, repeated values append, packed and
unpacked numerics both accepted, a known number with another wire type unknown; varints of
up to 10 bytes keep their low 64 bits and say whether bits past them were set (such a key
matches no field; such a bool is true). The compiled code checks every bound and reports
only success or failure: on failure the decoder reads the body again with the pure reader,
which raises the exact DecodeError (kind and detail).

A flush of `Buffers` builds every Arrow column from its numpy buffers at once (offsets
from the lengths, validity from the nulls), strings checked for UTF-8 per column in Arrow;
the values are those of the pure walk's flush (`decoder._Rows`), column by column.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from numba import njit

from wirecodecs.arrow_columns import binary_column, offsets_of, pooled
from wirecodecs.heka.message import DEFAULT_SEVERITY, HASH_FUNCTIONS, HMAC_STATUSES, VALUE_TYPES
from wirecodecs.heka.schema import FIELD_TYPE, HEKA_SCHEMA
from wirecodecs.heka.texts import VALUE_TYPE_NAMES, arrow_text_lists, arrow_texts
from wirecodecs.kernels import load, readonly, unowned
from wirecodecs.rows import EVENT_TIME_MAX_MS, EVENT_TIME_MIN_MS, FLUSH_BYTES

RS, US = 0x1E, 0x1F
NONE = -(1 << 63)  # an absent int32/uint32 scalar (no such value fits those types)
_FAILED = -1

# The frame table (`frames`): one column per frame, these rows.
(
    F_START,  # the 0x1E, from the start of the view
    F_SIZE,  # 3 + header + body
    F_BODY,  # where the body starts
    F_BODY_LEN,
    F_HASH,  # hmac_hash_function (int32) or NONE
    F_SIGNER,  # hmac_signer: start, length (-1: absent)
    F_SIGNER_LEN,
    F_VERSION,  # hmac_key_version (uint32) or NONE
    F_HMAC,  # hmac: start, length (-1: absent)
    F_HMAC_LEN,
    F_MAYBE_SNAPPY,  # its leading varint allows a snappy block this long
    F_INFLATED,  # set by the decoder: the inflated body in `spare`, length (-1: none)
    F_INFLATED_LEN,
    F_STATUS,  # set by the decoder: the HMAC verdict's code (STATUSES), -1 unsigned
) = range(14)
FRAME_ROWS = 14

# The row table: one column per row, these rows.
(
    R_OFFSET,
    R_LENGTH,
    R_TIMESTAMP,
    R_SEVERITY,  # int32 or NONE
    R_PID,  # int32 or NONE
    R_FIELDS,  # how many Fields
    R_SNAPPY,  # 1 when read from the inflated body
    R_UUID_VALID,
    R_HASH,
    R_VERSION,
    R_STATUS,
) = range(11)
ROW_ROWS = 11

# Byte columns: values back to back, each column in its region of one byte buffer (the
# arena; one array, not one per column, keeps the compiled calls cheap). The row's are
# sized in `lengths`, a Field's name, representation and unknown members in its table,
# list elements in theirs.
(
    T_UUID,
    T_TYPE,
    T_LOGGER,
    T_PAYLOAD,
    T_ENV_VERSION,
    T_HOSTNAME,
    T_UNKNOWN,
    T_SIGNER,
    T_HMAC,
    T_NAME,
    T_REPRESENTATION,
    T_FIELD_UNKNOWN,
    T_STRING,
    T_BYTES,
) = range(14)
TEXTS = 14
ROW_TEXTS = 9  # T_UUID..T_HMAC: per row

# The Field table: one column per Field.
FD_NAME, FD_REPRESENTATION, FD_UNKNOWN, FD_TYPE = 0, 1, 2, 3  # lengths (-1: null), code
FD_COUNTS = 4  # then the element counts, one row per kind (E_*)
FIELD_ROWS = 9
# List elements: one row per kind (value lengths for strings and bytes; int64 values;
# the bits of doubles; 0/1 for bools).
E_STRING, E_BYTES, E_INTEGER, E_DOUBLE, E_BOOL = range(5)
ELEMENT_ROWS = 5

# `used`: rows, Fields, elements per kind, bytes per text column, frame bytes, then where
# each text column's region of the arena starts (and where the last one ends).
U_ROWS, U_FIELDS, U_ELEMENTS = 0, 1, 2
U_TEXTS = U_ELEMENTS + ELEMENT_ROWS
U_FRAME_BYTES = U_TEXTS + TEXTS
U_REGIONS = U_FRAME_BYTES + 1
USED = U_REGIONS + TEXTS + 1

# What `messages` stopped for.
DONE, FULL, GROW, BAD = 0, 1, 2, 3

_U7F = np.uint64(0x7F)
_U1 = np.uint64(1)
_U63 = np.uint64(63)
_MASK32 = np.uint64(0xFFFF_FFFF)
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
# Message string members by field number: uuid 1, type 3, logger 4, payload 6,
# env_version 7, hostname 9 to their text columns.
_STRING_MEMBERS = np.array(
    [-1, T_UUID, -1, T_TYPE, T_LOGGER, -1, T_PAYLOAD, T_ENV_VERSION, -1, T_HOSTNAME]
)
_HAS_TIMESTAMP, _STRICT = 1, 2  # a reading's flags (lua_sandbox's checks passed: _STRICT)
_HEADER_ROOM = 256  # a frame's header strings (hmac_signer, hmac) take less


@njit(cache=True, nogil=True)
def room(body_bytes):
    """Free space messages of `body_bytes` in all (each counted 256 bytes longer: its
    header's strings) may need: (Fields, elements per kind, bytes per text column, where a
    canonical uuid is longer than its 16 bytes)."""
    return body_bytes // 2 + 1, body_bytes + 1, 2 * body_bytes + 1


@njit(cache=True, nogil=True, inline="always")
def _varint(data, pos, end):
    """A varint of at most 10 bytes in `data[pos:end]`: its low 64 bits, whether bits past
    them were set, and the next position (`_FAILED` when it runs past `end` or is longer)."""
    if pos < end and data[pos] < 0x80:  # the common one-byte varint
        return np.uint64(data[pos]), False, pos + 1
    bits = np.uint64(0)
    over = False
    for i in range(10):
        if pos >= end:
            return bits, over, _FAILED
        b = data[pos]
        pos += 1
        if i < 9:
            bits |= (np.uint64(b) & _U7F) << np.uint64(7 * i)
        else:
            bits |= (np.uint64(b) & _U1) << _U63
            over = (b & 0x7E) != 0
        if b < 0x80:
            return bits, over, pos
    return bits, over, _FAILED


@njit(cache=True, nogil=True, inline="always")
def _token(data, pos, end):
    """The field at `pos`: (key, varint value, its bits past 64, where the value starts,
    next position), next `_FAILED` for damage. The key is 0 for one past 64 bits (it
    matches no field); a length-delimited value runs from its start to the next position."""
    bits, over, at = _varint(data, pos, end)
    value = np.uint64(0)
    if at < 0 or (not over and bits < np.uint64(8)):
        return 0, value, False, at, _FAILED
    wire_type = np.int64(bits & np.uint64(7))
    key = 0 if over else np.int64(bits)  # past 63 bits: negative, matches no field either
    if wire_type == 0:
        value, over, nxt = _varint(data, at, end)
        return key, value, over, at, nxt
    if wire_type == 2:
        length, over, start = _varint(data, at, end)
        if start < 0 or over or length > np.uint64(end - start):
            return key, value, False, start, _FAILED
        return key, value, False, start, start + np.int64(length)
    size = 8 if wire_type == 1 else 4 if wire_type == 5 else end + 1
    if size > end - at:
        return key, value, False, at, _FAILED
    return key, value, False, at, at + size


@njit(cache=True, nogil=True, inline="always")
def _int32(bits):
    return np.int64(np.int32(np.uint32(bits & _MASK32)))


@njit(cache=True, nogil=True)
def _header(data, pos, end, frames, f):
    """The Header in `data[pos:end]` into frame `f`'s columns; returns its message_length
    (0 when absent), or -1 when it is not a protobuf."""
    length = np.int64(0)
    frames[F_HASH, f] = NONE
    frames[F_SIGNER_LEN, f] = -1
    frames[F_VERSION, f] = NONE
    frames[F_HMAC_LEN, f] = -1
    while pos < end:
        key, value, _, start, pos = _token(data, pos, end)
        if pos < 0:
            return -1
        if key == 8:  # message_length
            length = np.int64(value & _MASK32)
        elif key == 24:  # hmac_hash_function
            frames[F_HASH, f] = _int32(value)
        elif key == 34:  # hmac_signer
            frames[F_SIGNER, f] = start
            frames[F_SIGNER_LEN, f] = pos - start
        elif key == 40:  # hmac_key_version
            frames[F_VERSION, f] = np.int64(value & _MASK32)
        elif key == 50:  # hmac
            frames[F_HMAC, f] = start
            frames[F_HMAC_LEN, f] = pos - start
    return length


@njit(cache=True, nogil=True)
def _maybe_snappy(data, pos, end, max_len):
    """Whether `data[pos:end]` can be a raw snappy block: its leading varint (at most 5
    bytes) must allow a block this long (snappy's MaxCompressedLength: 32 + n + n/6)."""
    declared = np.int64(0)
    for i in range(5):
        if pos + i >= end:
            return False
        b = data[pos + i]
        declared |= np.int64(b & 0x7F) << (7 * i)
        if b < 0x80:
            return 0 < declared <= max_len and end - pos <= 32 + declared + declared // 6
    return False


@njit(cache=True, nogil=True)
def frames(data, max_len, table, after_garbage):
    """Frames from the start of `data` into `table` until the table is full, the data ends
    or a frame candidate needs bytes past it. Returns (where it stopped, bytes that candidate
    needs from there or 0, frames listed, bytes skipped, whether bytes were skipped since
    the last frame)."""
    data, table = unowned(data), unowned(table)
    n = data.size
    pos = count = skipped = 0
    while pos < n and count < table.shape[1]:
        if data[pos] != RS:
            start = pos
            while pos < n and data[pos] != RS:
                pos += 1
            skipped += pos - start
            after_garbage = True
            continue
        have = n - pos
        if have < 2:
            return pos, 2, count, skipped, after_garbage
        hlen = np.int64(data[pos + 1])
        if have < hlen + 3:
            return pos, hlen + 3, count, skipped, after_garbage
        length = -1
        if data[pos + 2 + hlen] == US:
            length = _header(data, pos + 2, pos + 2 + hlen, table, count)
        if length <= 0 or length > max_len:
            pos += 1
            skipped += 1
            after_garbage = True
            continue
        size = hlen + 3 + length
        if have < size:
            return pos, size, count, skipped, after_garbage
        body = pos + 3 + hlen
        table[F_START, count] = pos
        table[F_SIZE, count] = size
        table[F_BODY, count] = body
        table[F_BODY_LEN, count] = length
        table[F_MAYBE_SNAPPY, count] = _maybe_snappy(data, body, body + length, max_len)
        table[F_INFLATED_LEN, count] = -1
        table[F_STATUS, count] = -1
        count += 1
        pos += size
        after_garbage = False
    return pos, 0, count, skipped, after_garbage


@njit(cache=True, nogil=True, inline="always")
def _put(arena, column, cur, data, start, length):
    """Append `data[start:start + length]` to a text column; its length. The copy is
    `kernels.copy`'s loop written out here, so that it inlines with `_put`: a call to
    `kernels.copy` per string made the plain Heka decode slower (docs/performance.md,
    Heka decoder)."""
    to = np.uint64(cur[U_REGIONS + column] + cur[U_TEXTS + column])
    at = np.uint64(start)
    for i in range(np.uint64(length)):
        arena[to + i] = data[at + i]
    cur[U_TEXTS + column] += length
    return length


@njit(cache=True, nogil=True, inline="always")
def _elements(data, pos, end, kind, elements, cur):
    """A packed run of varints (`kind` E_INTEGER or E_BOOL) appended; False when a varint
    runs past the run or is longer than 10 bytes."""
    at = cur[U_ELEMENTS + kind]
    while pos < end:
        bits, over, pos = _varint(data, pos, end)
        if pos < 0:
            return False
        if kind == E_INTEGER:
            elements[kind, at] = np.int64(bits)
        else:
            elements[kind, at] = bits != np.uint64(0) or over
        at += 1
    cur[U_ELEMENTS + kind] = at
    return True


@njit(cache=True, nogil=True, inline="always")
def _doubles(data, pos, end, elements, cur):
    """Little-endian doubles in `data[pos:end]` appended as their bits."""
    at = cur[U_ELEMENTS + E_DOUBLE]
    while pos < end:
        bits = np.uint64(0)
        for i in range(8):
            bits |= np.uint64(data[pos + i]) << np.uint64(8 * i)
        elements[E_DOUBLE, at] = np.int64(bits)
        at += 1
        pos += 8
    cur[U_ELEMENTS + E_DOUBLE] = at


@njit(cache=True, nogil=True, inline="always")
def _field(data, pos, end, fields, elements, arena, cur):
    """The Field in `data[pos:end]` appended; False for damage."""
    f = cur[U_FIELDS]
    name = representation = -1
    name_len = representation_len = 0
    code = np.int64(0)  # absent: STRING
    for kind in range(ELEMENT_ROWS):  # where its elements start, until they are counted
        fields[FD_COUNTS + kind, f] = cur[U_ELEMENTS + kind]
    unknown = 0
    while pos < end:
        first = pos
        key, value, over, start, pos = _token(data, pos, end)
        if pos < 0:
            return False
        if key == 10:
            name, name_len = start, pos - start
        elif key == 16:
            code = _int32(value)
        elif key == 34:
            elements[E_STRING, cur[U_ELEMENTS + E_STRING]] = pos - start
            cur[U_ELEMENTS + E_STRING] += 1
            _put(arena, T_STRING, cur, data, start, pos - start)
        elif key == 58:
            if (pos - start) % 8:
                return False
            _doubles(data, start, pos, elements, cur)
        elif key == 50 or key == 66:
            if not _elements(data, start, pos, E_INTEGER if key == 50 else E_BOOL, elements, cur):
                return False
        elif key == 26:
            representation, representation_len = start, pos - start
        elif key == 42:
            elements[E_BYTES, cur[U_ELEMENTS + E_BYTES]] = pos - start
            cur[U_ELEMENTS + E_BYTES] += 1
            _put(arena, T_BYTES, cur, data, start, pos - start)
        elif key == 48:
            elements[E_INTEGER, cur[U_ELEMENTS + E_INTEGER]] = np.int64(value)
            cur[U_ELEMENTS + E_INTEGER] += 1
        elif key == 57:
            _doubles(data, start, pos, elements, cur)
        elif key == 64:
            elements[E_BOOL, cur[U_ELEMENTS + E_BOOL]] = value != np.uint64(0) or over
            cur[U_ELEMENTS + E_BOOL] += 1
        else:
            unknown += _put(arena, T_FIELD_UNKNOWN, cur, data, first, pos - first)
    fields[FD_NAME, f] = -1 if name < 0 else _put(arena, T_NAME, cur, data, name, name_len)
    fields[FD_REPRESENTATION, f] = (
        -1
        if representation < 0
        else _put(arena, T_REPRESENTATION, cur, data, representation, representation_len)
    )
    fields[FD_UNKNOWN, f] = unknown if unknown else -1
    fields[FD_TYPE, f] = code
    for kind in range(ELEMENT_ROWS):
        fields[FD_COUNTS + kind, f] = cur[U_ELEMENTS + kind] - fields[FD_COUNTS + kind, f]
    cur[U_FIELDS] = f + 1
    return True


@njit(cache=True, nogil=True, inline="always")
def _uuid_text(arena, cur, data, start):
    """A 16-byte uuid appended as its canonical 8-4-4-4-12 text."""
    out = arena
    at = cur[U_REGIONS + T_UUID] + cur[U_TEXTS + T_UUID]
    for i in range(16):
        if i == 4 or i == 6 or i == 8 or i == 10:
            out[at] = 0x2D  # "-"
            at += 1
        b = data[start + i]
        out[at] = _HEX[b >> 4]
        out[at + 1] = _HEX[b & 15]
        at += 2
    cur[U_TEXTS + T_UUID] += 36
    return 36


@njit(cache=True, nogil=True, inline="always")
def _message(data, pos, end, r, buffers, starts, ends, cur):
    """The Message in `data[pos:end]` as row `r`, appended at `cur`: its flags
    (_HAS_TIMESTAMP, _STRICT), or `_FAILED` for damage. `starts` and `ends` are scratch
    space: where the last value of each string member (T_UUID..T_HOSTNAME) lies."""
    rows, lengths, fields, elements, arena = buffers
    starts[:] = -1
    timestamp = np.int64(0)
    flags = 0
    severity = pid = NONE
    unknown = 0
    first_field = cur[U_FIELDS]
    while pos < end:
        first = pos
        key, value, _, start, pos = _token(data, pos, end)
        if pos < 0:
            return _FAILED
        if key == 82:
            if not _field(data, start, pos, fields, elements, arena, cur):
                return _FAILED
        elif key == 16:
            timestamp = np.int64(value)
            flags |= _HAS_TIMESTAMP
        elif key == 40:
            severity = _int32(value)
        elif key == 64:
            pid = _int32(value)
        elif key == 10 or key == 26 or key == 34 or key == 50 or key == 58 or key == 74:
            slot = _STRING_MEMBERS[key >> 3]
            starts[slot] = start
            ends[slot] = pos
        else:
            unknown += _put(arena, T_UNKNOWN, cur, data, first, pos - first)
    if starts[0] >= 0 and ends[0] - starts[0] == 16 and flags:
        flags |= _STRICT
        lengths[T_UUID, r] = _uuid_text(arena, cur, data, starts[0])
    for slot in range(6):
        if slot == 0 and flags & _STRICT:
            continue
        lengths[slot, r] = (
            -1
            if starts[slot] < 0
            else _put(arena, slot, cur, data, starts[slot], ends[slot] - starts[slot])
        )
    lengths[T_UNKNOWN, r] = unknown if unknown else -1
    rows[R_TIMESTAMP, r] = timestamp
    rows[R_SEVERITY, r] = severity
    rows[R_PID, r] = pid
    rows[R_FIELDS, r] = cur[U_FIELDS] - first_field
    return flags


@njit(cache=True, nogil=True)
def fits(body_bytes, count, buffers, used):
    """Whether the buffers have `count` rows and `room(body_bytes)` free."""
    rows, _, fields, elements, _ = buffers
    field_room, element_room, text_room = room(body_bytes)
    if used[U_ROWS] + count > rows.shape[1] or used[U_FIELDS] + field_room > fields.shape[1]:
        return False
    for kind in range(ELEMENT_ROWS):
        if used[U_ELEMENTS + kind] + element_room > elements.shape[1]:
            return False
    for column in range(TEXTS):
        if (
            used[U_TEXTS + column] + text_room
            > used[U_REGIONS + column + 1] - used[U_REGIONS + column]
        ):
            return False
    return True


# which body of a frame `messages` reads a row from, in the order it tries them
_INFLATED, _AS_IS, _INFLATED_AGAIN = 0, 1, 2


@njit(cache=True, nogil=True)
def messages(data, spare, table, first, last, base, max_rows, flush_bytes, buffers, used):
    """Rows for frames `first:last` of `table` (bodies in `data`, inflated ones in
    `spare`), appended to `buffers` after `used`, with the snappy trial's choice as
    `_body_message` makes it. Returns (the frame it stopped at, why, bytes): why is DONE,
    FULL (after a row that filled the batch), GROW (the buffers lack `room(bytes)` for this
    frame) or BAD (no reading gives a row: the decoder asks the pure reader why)."""
    data, spare, table, used = unowned(data), unowned(spare), unowned(table), unowned(used)
    buffers = (
        unowned(buffers[0]),
        unowned(buffers[1]),
        unowned(buffers[2]),
        unowned(buffers[3]),
        unowned(buffers[4]),
    )
    rows, lengths, _, _, arena = buffers
    starts = np.empty(6, np.int64)
    ends = np.empty(6, np.int64)
    cur = used.copy()
    # Room for all the frames at once spares a check per frame.
    at_most = np.maximum(table[F_BODY_LEN, first:last], table[F_INFLATED_LEN, first:last])
    roomy = fits(at_most.sum() + _HEADER_ROOM * (last - first), last - first, buffers, used)
    for i in range(first, last):
        body = table[F_BODY, i]
        end = body + table[F_BODY_LEN, i]
        inflated = table[F_INFLATED, i]
        inflated_end = inflated + table[F_INFLATED_LEN, i]
        need = max(end - body, inflated_end - inflated) + _HEADER_ROOM
        if not roomy and not fits(need, 1, buffers, used):
            return i, GROW, need
        r = used[U_ROWS]
        cur[:U_REGIONS] = used[:U_REGIONS]
        snappy = plain = _FAILED
        reading = _INFLATED if table[F_INFLATED_LEN, i] >= 0 else _AS_IS
        while True:  # one call site, so that numba inlines `_message` once, not three times
            as_is = reading == _AS_IS
            flags = _message(
                data if as_is else spare,
                body if as_is else inflated,
                end if as_is else inflated_end,
                r, buffers, starts, ends, cur,
            )  # fmt: skip
            if reading == _INFLATED:
                snappy = flags
                if snappy >= 0 and snappy & _STRICT:
                    chosen = 1
                    break
                reading = _AS_IS
            elif reading == _AS_IS:
                plain = flags
                if plain >= 0 and plain & _STRICT:
                    chosen = 0
                    break
                if snappy >= 0 and snappy & _HAS_TIMESTAMP:
                    reading = _INFLATED_AGAIN  # the row again, from the inflated body
                elif plain >= 0 and plain & _HAS_TIMESTAMP:
                    chosen = 0
                    break
                else:
                    return i, BAD, 0
            else:
                chosen = 1
                break
            cur[:U_REGIONS] = used[:U_REGIONS]
        size = table[F_SIZE, i]
        rows[R_OFFSET, r] = base + table[F_START, i]
        rows[R_LENGTH, r] = size
        rows[R_SNAPPY, r] = chosen
        rows[R_UUID_VALID, r] = ((snappy if chosen else plain) & _STRICT) != 0
        rows[R_HASH, r] = table[F_HASH, i]
        rows[R_VERSION, r] = table[F_VERSION, i]
        rows[R_STATUS, r] = table[F_STATUS, i]
        length = table[F_SIGNER_LEN, i]
        lengths[T_SIGNER, r] = (
            -1 if length < 0 else _put(arena, T_SIGNER, cur, data, table[F_SIGNER, i], length)
        )
        length = table[F_HMAC_LEN, i]
        lengths[T_HMAC, r] = (
            -1 if length < 0 else _put(arena, T_HMAC, cur, data, table[F_HMAC, i], length)
        )
        cur[U_ROWS] = r + 1
        cur[U_FRAME_BYTES] += size
        used[:U_REGIONS] = cur[:U_REGIONS]
        if r + 1 >= max_rows or used[U_FRAME_BYTES] >= flush_bytes:
            return i + 1, FULL, 0
    return last, DONE, 0


# ---- the column buffers `messages` fills, and the Arrow batch of a flush ----------------

_NS_PER_US = 1000
_EVENT_NS_MIN = EVENT_TIME_MIN_MS * 1_000_000
_EVENT_NS_MAX = EVENT_TIME_MAX_MS * 1_000_000 + 999_999
_TWINNED = (  # text columns with a `*_raw` twin, by their buffer
    ("uuid", T_UUID),
    ("type", T_TYPE),
    ("logger", T_LOGGER),
    ("payload", T_PAYLOAD),
    ("env_version", T_ENV_VERSION),
    ("hostname", T_HOSTNAME),
)
_START_ROWS, _START_FIELDS, _START_ELEMENTS, _START_BYTES = 256, 1024, 4096, 1 << 16


def _names(names: tuple[str, ...]) -> pa.Array:
    """A few strings, to `take` a column's values from by code."""
    return pa.array(names, pa.string())


def _binary(lengths: np.ndarray, data: np.ndarray) -> pa.Array:
    """A binary column of values back to back in `data`."""
    return binary_column(pa.binary(), lengths, data)


def _lists(counts: np.ndarray, values: pa.Array) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(offsets_of(counts)), values)


def _masked(values: np.ndarray, absent: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.array(values, type_, mask=absent if absent.any() else None)


class Buffers:
    """One flush's rows as the compiled walk appends them (layout: above), grown on
    demand: memory stays bounded by the flush (`batch_rows` rows or FLUSH_BYTES of
    frames) and the largest body. A flush hands its buffers to the batch, whose columns
    are views of them, and the next flush's are fresh ones of the same sizes (from Arrow's
    pool, which reuses the pages of batches let go): only the first flush grows them."""

    def __init__(self, source: str, batch_rows: int) -> None:
        self.source = source
        self.batch_rows = batch_rows
        rows = min(batch_rows, _START_ROWS)
        self.buffers = (
            pooled((ROW_ROWS, rows), np.int64),
            pooled((ROW_TEXTS, rows), np.int64),
            pooled((FIELD_ROWS, _START_FIELDS), np.int64),
            pooled((ELEMENT_ROWS, _START_ELEMENTS), np.int64),
            pooled(TEXTS * _START_BYTES, np.uint8),
        )
        self.used = np.zeros(USED, np.int64)
        self.used[U_REGIONS:] = np.arange(TEXTS + 1) * _START_BYTES

    @property
    def rows(self) -> int:
        return int(self.used[U_ROWS])

    def grow(self, body_bytes: int) -> None:
        """Room for one more message of `body_bytes` (`room`), and for the rest
        of a flush that goes on as it began: each buffer at least as large as the rows so
        far, scaled to a whole flush, would fill."""
        rows, lengths, fields, elements, arena = self.buffers
        used = self.used
        field_room, element_room, text_room = room(body_bytes)
        rows_used = int(used[U_ROWS])
        scale = self._flush_scale()

        def wider(table: np.ndarray, filled: int, room: int, most: int = 0) -> np.ndarray:
            size = table.shape[-1]
            if filled + room <= size:
                return table
            size = max(int(filled * scale) + room, min(2 * size, most or 2 * size))
            out = pooled((*table.shape[:-1], size), table.dtype)
            out[..., : table.shape[-1]] = table
            return out

        self.buffers = (
            wider(rows, rows_used, 1, self.batch_rows),
            wider(lengths, rows_used, 1, self.batch_rows),
            wider(fields, used[U_FIELDS], field_room),
            wider(elements, max(used[U_ELEMENTS:U_TEXTS]), element_room),
            self._wider_arena(arena, text_room, scale),
        )

    def _flush_scale(self) -> float:
        """How many times the rows so far a whole flush holds, by the frames' bytes."""
        rows, frame_bytes = self.rows, int(self.used[U_FRAME_BYTES])
        if not rows:
            return 1.0
        return min(self.batch_rows, rows * FLUSH_BYTES / frame_bytes) / rows

    def _wider_arena(self, arena: np.ndarray, text_room: int, scale: float) -> np.ndarray:
        """The arena with `text_room` free in every column's region, each at least as
        large as its bytes so far `scale`d (those short at least doubled)."""
        used = self.used
        filled = used[U_TEXTS : U_TEXTS + TEXTS]
        regions = used[U_REGIONS:]
        sizes = np.diff(regions)
        short = filled + text_room > sizes
        if not short.any():
            return arena
        sizes = np.maximum(
            np.where(short, 2 * sizes, sizes), (filled * scale).astype(np.int64) + text_room
        )
        bounds = np.zeros(TEXTS + 1, np.int64)
        np.cumsum(sizes, out=bounds[1:])
        wider = pooled(int(bounds[-1]), np.uint8)
        for column in range(TEXTS):
            at, new, size = regions[column], bounds[column], filled[column]
            wider[new : new + size] = arena[at : at + size]
        regions[:] = bounds
        return wider

    def _text(self, column: int) -> np.ndarray:
        """The bytes of a text column so far (a view of the arena)."""
        at = self.used[U_REGIONS + column]
        return self.buffers[4][at : at + self.used[U_TEXTS + column]]

    def flush(self) -> pa.RecordBatch:
        """The rows so far as a batch over the buffers, which fresh ones then replace; a
        batch that fills less than half of them (a stream's last) takes copies instead, so
        that it holds no more memory than its values."""
        used = self.used
        n, nf = int(used[U_ROWS]), int(used[U_FIELDS])
        rows_, lengths_, fields_, elements_, _ = self.buffers
        small = 2 * n < rows_.shape[1]
        taken = np.copy if small else np.asarray
        texts = [taken(self._text(column)) for column in range(TEXTS)]
        rows, lengths, fields = taken(rows_[:, :n]), lengths_[:, :n], taken(fields_[:, :nf])
        elements = [
            taken(elements_[kind, : used[U_ELEMENTS + kind]]) for kind in range(ELEMENT_ROWS)
        ]
        columns = {
            "source_file": pa.repeat(pa.scalar(self.source, pa.string()), n),
            "byte_offset": pa.array(rows[R_OFFSET]),
            "frame_length": pa.array(rows[R_LENGTH].astype(np.int32)),
            "fields": self._fields(fields, elements, texts, rows[R_FIELDS]),
        }
        status = rows[R_STATUS]
        unsigned = status < 0
        columns["hmac_valid"] = _masked(status == 0, unsigned, pa.bool_())
        columns["hmac_status"] = _names(HMAC_STATUSES).take(pa.array(status, mask=unsigned))
        timestamp = rows[R_TIMESTAMP]
        columns["timestamp"] = pa.array(timestamp)
        columns["event_time"] = _masked(
            timestamp // _NS_PER_US,
            (timestamp < _EVENT_NS_MIN) | (timestamp > _EVENT_NS_MAX),
            HEKA_SCHEMA.field("event_time").type,
        )
        for name, column in _TWINNED:
            columns[name], columns[f"{name}_raw"] = arrow_texts(
                _binary(lengths[column], texts[column])
            )
        columns["uuid_valid"] = pa.array(rows[R_UUID_VALID].astype(bool))
        severity = rows[R_SEVERITY]
        absent = severity == NONE
        columns["severity"] = pa.array(
            np.where(absent, DEFAULT_SEVERITY, severity).astype(np.int32)
        )
        columns["severity_present"] = pa.array(~absent)
        pid = rows[R_PID]
        columns["pid"] = _masked(pid.astype(np.int32), pid == NONE, pa.int32())
        columns["unknown_fields"] = _binary(lengths[T_UNKNOWN], texts[T_UNKNOWN])
        columns["hmac_hash_function"] = _hash_names(rows[R_HASH])
        columns["hmac_signer"] = arrow_texts(_binary(lengths[T_SIGNER], texts[T_SIGNER]))[0]
        version = rows[R_VERSION]
        columns["hmac_key_version"] = _masked(version, version == NONE, pa.int64())
        columns["hmac"] = _binary(lengths[T_HMAC], texts[T_HMAC])
        columns["body_encoding"] = _names(("protobuf", "snappy")).take(rows[R_SNAPPY])
        used[:U_REGIONS] = 0
        if not small:
            self.buffers = tuple(pooled(buffer.shape, buffer.dtype) for buffer in self.buffers)
        return pa.RecordBatch.from_arrays(
            [columns[name] for name in HEKA_SCHEMA.names], schema=HEKA_SCHEMA
        )

    @staticmethod
    def _fields(fields, elements, texts, counts) -> pa.Array:
        """The list<struct> `fields` column; row i has `counts[i]` Fields."""
        strings = _lists(
            fields[FD_COUNTS + E_STRING],
            _binary(elements[E_STRING], texts[T_STRING]),
        )
        children = [
            *arrow_texts(_binary(fields[FD_NAME], texts[T_NAME])),
            _type_names(fields[FD_TYPE]),
            *arrow_texts(_binary(fields[FD_REPRESENTATION], texts[T_REPRESENTATION])),
            *arrow_text_lists(strings),
            _lists(
                fields[FD_COUNTS + E_BYTES],
                _binary(elements[E_BYTES], texts[T_BYTES]),
            ),
            _lists(fields[FD_COUNTS + E_INTEGER], pa.array(elements[E_INTEGER])),
            _lists(
                fields[FD_COUNTS + E_DOUBLE],
                pa.array(elements[E_DOUBLE].view(np.float64)),
            ),
            _lists(fields[FD_COUNTS + E_BOOL], pa.array(elements[E_BOOL].astype(bool))),
            _binary(fields[FD_UNKNOWN], texts[T_FIELD_UNKNOWN]),
        ]
        structs = pa.StructArray.from_arrays(children, fields=list(FIELD_TYPE))
        return pa.ListArray.from_arrays(
            pa.array(offsets_of(counts)), structs, type=HEKA_SCHEMA.field("fields").type
        )


def _type_names(codes: np.ndarray) -> pa.Array:
    """Field.value_type codes (absent: 0) as their names, another code as its number."""
    if ((codes >= 0) & (codes < len(VALUE_TYPES))).all():
        return _names(VALUE_TYPES).take(codes)
    return pa.array([VALUE_TYPE_NAMES[code] for code in codes.tolist()], pa.string())


def _hash_names(codes: np.ndarray) -> pa.Array:
    """hmac_hash_function: MD5 or SHA1, another code as its number, null when absent."""
    absent = codes == NONE
    known = absent | (codes == 0) | (codes == 1)
    if known.all():
        return _names(HASH_FUNCTIONS).take(pa.array(np.where(absent, 0, codes), mask=absent))
    return pa.array(
        [
            None if code == NONE else HASH_FUNCTIONS[code] if code in (0, 1) else str(code)
            for code in codes.tolist()
        ],
        pa.string(),
    )


def warm() -> None:
    """Load the framing, the message walk and `room` for the arguments the decoder and
    `Buffers` give them (`wirecodecs.compiled.warm`)."""
    data, table, buffers = readonly(b""), np.empty((FRAME_ROWS, 1), np.int64), Buffers("", 1)
    load(frames, data, 0, table, False)
    load(messages, data, data, table, 0, 0, 0, 0, 0, buffers.buffers, buffers.used)
    load(room, 0)

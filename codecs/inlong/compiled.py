"""The InLongMsg message walk compiled with numba: the fast path of the file decoder and
of `decode_values`.

One call walks a run of messages (length-prefixed frames of a file window, or Kafka
record values) over a numpy uint8 view, decompressing snappy blocks itself, and appends
their items to the numpy buffers of a `Columns`: an int64 row per block with everything
its items share (byte offset, header fields, block index, its attr string, the entries of
its merged map, event time, group and stream id), and per item only its body (size, bytes
back to back). Arrow columns are built once per flush, each block's values once and then
taken for its items; an item costs no Python object.

The compiled walk takes the messages every landing is made of: V0-V2 and V4 without
private attributes, attribute strings in ASCII with at most MAX_ENTRIES entries and no
`t` attribute, and messages whose items form one chunk (`message.py`, "Memory"). Any
other message, and any message with an error, is left to the pure walk of `message.py`
(it stops the call there, `FALLBACK`), which raises the DecodeError with its exact kind,
offset and detail, or yields the rows. That walk stays the reference: the rarer forms
(V3 and V4 private attributes, modified UTF-8, Sort's `t` layouts, a message of millions
of items streamed in chunks) have one implementation only, and the two paths are tested
for identical output on the same vectors and mutations (tests/codecs/inlong).

Snappy is decompressed here rather than by cramjam so that a run of messages is one
call: the decoder accepts only what the format allows (every tag in bounds, an offset
inside the output, the declared length reached exactly) and anything else goes to the
pure walk, whose cramjam call decides; the output of a valid block is fixed by the
format.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from wirecodecs.arrow_columns import offsets_of, pooled
from wirecodecs.compression import _SNAPPY_MAX_RATIO
from wirecodecs.inlong.bounds import (
    DONE,
    FALLBACK,
    FLUSH,
    L_BATCH_BYTES,
    L_BATCH_ROWS,
    L_CHUNK_BYTES,
    L_CHUNK_ROWS,
    L_DECOMPRESSED,
    Walked,
)
from wirecodecs.inlong.schema import ATTRIBUTES_TYPE, INLONG_SCHEMA
from wirecodecs.kernels import big_endian, copy, enlarged, load, readonly
from wirecodecs.rows import EVENT_TIME_MAX_MS, EVENT_TIME_MIN_MS

MAX_ENTRIES = 64  # attribute entries per block the compiled split takes (duplicate search is n^2)
_SNAPPY_KEPT = 16 << 20  # a larger decompression buffer is dropped after its walk
_SNAPPY_ROOM = 16  # bytes of a decompression buffer past the output: `_copy16` writes them
_ATTR_SCRATCH = (1 << 16) + 128  # an attr (u16 length) and the V4 fields written as text

_GROW = 3  # a walk's status (bounds.DONE ...): `used[U_WHICH]` needs `used[U_NEED]` bytes

# block rows (int64 per block): the fields its items share; an item has only its body
(T_OFFSET, T_VERSION, T_CREATE, T_COUNT, T_TYPE, T_GNUM, T_SNUM, T_EXT, T_DTIME, T_UID,
 T_BLOCK, T_BLOCK_COUNT, T_COMPRESSED, T_FIRST_ITEM, T_ITEMS, T_ATTR, T_ENTRIES, T_TIME,
 T_TIME_OK, T_GROUP, T_STREAM) = range(21)  # fmt: skip
_TABLE_FIELDS = 21
_HEADER_FIELDS = 9  # T_VERSION .. T_UID, as `message.Header`
# buffers a GROW names
B_ROWS, B_BODY, B_TABLE, B_ATTR, B_ENTRIES, B_KEYS, B_VALUES, B_SNAPPY = range(8)
# `used`: fill of each buffer (B_ROWS .. B_VALUES), then the walk's state
(U_BUFFERED_ROWS, U_BUFFERED_BYTES, U_FRAMES, U_RECORDS, U_FRAME_BYTES, U_NEXT, U_WHICH,
 U_NEED) = range(7, 15)  # fmt: skip
_USED = 15

_KEY_T = np.frombuffer(b"t", np.uint8)
_KEY_DT = np.frombuffer(b"dt", np.uint8)
_KEY_GROUP = np.frombuffer(b"groupId", np.uint8)
_KEY_BID = np.frombuffer(b"bid", np.uint8)
_KEY_STREAM = np.frombuffer(b"streamId", np.uint8)
_KEY_TID = np.frombuffer(b"tid", np.uint8)
_KEY_CNT = np.frombuffer(b"cnt", np.uint8)


@njit(cache=True, nogil=True)
def _i32(buf, pos):
    value = big_endian(buf, pos, 4)
    return value - (1 << 32) if value >= 1 << 31 else value


@intrinsic
def _load8(typingctx, array, index):
    """The 8 bytes of a uint8 array at `index` (unchecked, any alignment) as a uint64."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        at = context.cast(builder, args[1], signature.args[1], types.intp)
        wide = builder.bitcast(builder.gep(data, [at]), ir.IntType(64).as_pointer())
        return builder.load(wide, align=1)

    return types.uint64(array, index), codegen


@intrinsic
def _store8(typingctx, array, index, value):
    """Store the uint64 `value` as the 8 bytes of a uint8 array at `index` (unchecked)."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        at = context.cast(builder, args[1], signature.args[1], types.intp)
        wide = builder.bitcast(builder.gep(data, [at]), ir.IntType(64).as_pointer())
        builder.store(args[2], wide, align=1)
        return context.get_dummy_value()

    return types.none(array, index, types.uint64), codegen


@njit(cache=True, nogil=True)
def _copy_wide(out, at, src, pos, size):
    """`kernels.copy` 8 bytes at a time, when the steps stay inside both arrays and, within
    one array, read only bytes written before (`at - pos` >= 8): up to 7 bytes past the
    copy are overwritten, which snappy's next copies rewrite. Kept for snappy's short
    runs, which `kernels.copy`'s general loop serves worse (docs/performance.md, InLong
    decoder)."""
    if pos + size + 8 > src.size or at + size + 8 > out.size:
        copy(out, at, src, pos, size)
        return
    to = np.uintp(at)
    start = np.uintp(pos)
    for i in range(0, np.uintp(size), 8):
        _store8(out, to + i, _load8(src, start + i))


@njit(cache=True, nogil=True)
def _copy16(out, at, src, pos):
    """`out[at:at + 16] = src[pos:pos + 16]` as two 8-byte moves, the second read after the
    first is written: a copy of up to 16 bytes from 8 or more bytes back (snappy's short
    copies) repeats its pattern, as a byte-by-byte copy would (`_copy_wide`: why not
    `kernels.copy`)."""
    _store8(out, at, _load8(src, pos))
    _store8(out, at + 8, _load8(src, pos + 8))


@njit(cache=True, nogil=True)
def snappy(src, start, end, out, max_out):
    """Decompress the raw snappy block `src[start:end]` into `out`: its length, -1 when the
    block is not clean snappy or declares more than `max_out` (or 22 bytes per input byte:
    `compression._snappy_block`), or -2 - length when `out` is too small.

    Text compresses mostly into copies of 4-11 bytes with a one-byte offset and literals of
    up to 16 bytes: away from the end of `src`, these two tags are read from one 8-byte
    load and written 16 bytes at a time (`out` has 16 bytes of room past the output), the
    others take the general path below them."""
    declared = np.int64(0)
    pos = start
    for shift in range(0, 35, 7):
        if pos >= end:
            return -1
        b = np.int64(src[pos])
        pos += 1
        declared |= (b & 0x7F) << shift
        if b < 0x80:
            break
        if shift == 28:
            return -1
    if declared > max_out or declared > (end - start) * _SNAPPY_MAX_RATIO:
        return -1
    if declared + _SNAPPY_ROOM > out.size:
        return -2 - declared - _SNAPPY_ROOM
    op = np.int64(0)
    quick_end = min(end, src.size - 16)  # a tag before it: 8 bytes, or 16 after it, readable
    while pos < end:
        if pos < quick_end:
            word = np.int64(_load8(src, pos))  # the tag and the 7 bytes after it
            tag = word & 0xFF
            if tag & 3 == 1:  # copy, 4-11 bytes from up to 2047 bytes back
                size = ((tag >> 2) & 7) + 4
                offset = ((tag >> 5) << 8) | ((word >> 8) & 0xFF)
                pos += 2
                if pos > end or offset == 0 or offset > op or size > declared - op:
                    return -1
                if offset >= 8:
                    _copy16(out, op, out, op - offset)
                else:  # overlapping: byte by byte repeats the last `offset` bytes
                    copy(out, op, out, op - offset, size)
                op += size
                continue
            if tag & 3 == 0 and tag < 64:  # literal of 1-16 bytes
                size = (tag >> 2) + 1
                pos += 1
                if size > end - pos or size > declared - op:
                    return -1
                _copy16(out, op, src, pos)
                op += size
                pos += size
                continue
        tag = np.int64(src[pos])
        pos += 1
        kind = tag & 3
        if kind == 0:  # literal
            size = tag >> 2
            if size >= 60:
                extra = size - 59
                if extra > end - pos:
                    return -1
                size = 0
                for i in range(extra):
                    size |= np.int64(src[pos + i]) << (8 * i)
                pos += extra
            size += 1
            if size > end - pos or size > declared - op:
                return -1
            _copy_wide(out, op, src, pos, size)
            op += size
            pos += size
            continue
        if kind == 1:
            if pos >= end:
                return -1
            size = ((tag >> 2) & 7) + 4
            offset = ((tag >> 5) << 8) | np.int64(src[pos])
            pos += 1
        else:
            width = 2 if kind == 2 else 4
            if width > end - pos:
                return -1
            size = (tag >> 2) + 1
            offset = np.int64(0)
            for i in range(width):
                offset |= np.int64(src[pos + i]) << (8 * i)
            pos += width
        if offset == 0 or offset > op or size > declared - op:
            return -1
        if offset < 8:  # overlapping: byte by byte repeats the last `offset` bytes
            copy(out, op, out, op - offset, size)
        else:
            _copy_wide(out, op, out, op - offset, size)
        op += size
    return op if op == declared else -1


@njit(cache=True, nogil=True)
def _same(text, start, size, key):
    if size != key.size:
        return False
    i = 0
    while i < size and text[start + i] == key[i]:
        i += 1
    return i == size


@njit(cache=True, nogil=True)
def _find(text, entries, count, key):
    """Index of the entry whose key is `key`, or -1."""
    for e in range(count):
        if _same(text, entries[0, e], entries[1, e], key):
            return e
    return -1


@njit(cache=True, nogil=True)
def _find_entry(text, entries, count, start, size):
    """Index of the entry whose key is `text[start:start + size]`, or -1."""
    for e in range(count):
        if entries[1, e] == size and _same(text, entries[0, e], size, text[start : start + size]):
            return e
    return -1


@njit(cache=True, nogil=True)
def _split(text, size, strict, entries):
    """Split the attr `text[:size]` into `entries` (key start, key size, value start, value
    size): Sort's lenient `splitKv` (a repeated key keeps its place and takes the last
    value), or with `strict` Guava's splitter as `attributes.split_strict` (entries trimmed
    of ASCII whitespace; no `=`, a second `=` or a repeated key fail). The entry count, or
    -1 (fails, or more than MAX_ENTRIES entries)."""
    count = 0
    start = 0
    while start <= size:
        stop = start
        while stop < size and text[stop] != 38:  # '&'
            stop += 1
        first, last = start, stop
        if strict:
            while first < last and (text[first] == 32 or 9 <= text[first] <= 13):
                first += 1
            while last > first and (text[last - 1] == 32 or 9 <= text[last - 1] <= 13):
                last -= 1
        equals = first
        while equals < last and text[equals] != 61:  # '='
            equals += 1
        value_start = min(equals + 1, last)
        if strict:
            if equals == last:
                return -1
            for i in range(value_start, last):
                if text[i] == 61:
                    return -1
        if equals > first or last > value_start or strict:
            e = _find_entry(text, entries, count, first, equals - first)
            if e >= 0 and strict:
                return -1
            if e < 0:
                if count == MAX_ENTRIES:
                    return -1
                e = count
                count += 1
                entries[0, e] = first
                entries[1, e] = equals - first
            entries[2, e] = value_start
            entries[3, e] = last - value_start
        start = stop + 1
    return count


@njit(cache=True, nogil=True)
def _set(text, at, entries, count, key, value):
    """Put `key` = the decimal text of `value` (>= 0) in the entries, the text written at
    `text[at:]`; returns (entry count, next free text position), count -1 when full."""
    digits = 1
    while value >= 10**digits and digits < 19:
        digits += 1
    copy(text, at, key, 0, key.size)
    for i in range(digits):
        text[at + key.size + digits - 1 - i] = 48 + (value // 10**i) % 10
    e = _find(text, entries, count, key)
    if e < 0:
        if count == MAX_ENTRIES:
            return -1, at
        e = count
        count += 1
        entries[0, e] = at
        entries[1, e] = key.size
    entries[2, e] = at + key.size
    entries[3, e] = digits
    return count, at + key.size + digits


@njit(cache=True, nogil=True)
def _dt_ms(text, start, size):
    """`dt` as `attributes.event_time_ms` reads it, when within the event-time range:
    (ms, True), else (0, False)."""
    pos = start
    end = start + size
    negative = False
    if pos < end and (text[pos] == 43 or text[pos] == 45):  # '+', '-'
        negative = text[pos] == 45
        pos += 1
    if pos == end:
        return 0, False
    value = np.int64(0)
    huge = False
    for i in range(pos, end):
        digit = np.int64(text[i]) - 48
        if digit < 0 or digit > 9:
            return 0, False
        if value < 10**17:
            value = value * 10 + digit
        else:
            huge = True
    if negative:
        value = -value
    if huge or value < EVENT_TIME_MIN_MS or value > EVENT_TIME_MAX_MS:
        return 0, False
    return value, True


@njit(cache=True, nogil=True)
def _block_row(text, size, v4, table, entries_out, keys, values, used, scratch):
    """The row of a block whose attr is `text[:size]`, appended after `used` with its
    attribute fields (`_block` sets the others once its items are walked): V0-V2 split
    leniently, V4 (`v4`: its header fields) strictly and merged with DataTime, the
    numeric ids and MsgCnt as `message._parse_v4` does. Returns its index, -1 for the
    pure walk, -2 to grow a buffer (named in `used`)."""
    count = 0
    if size or v4 is None:
        count = _split(text, size, v4 is not None, scratch)
        if count < 0:
            return -1
    at = size
    if v4 is not None:  # DataTime * 1000, the ids unless ExtField bit 2, MsgCnt
        string_ids = v4[6] & 0x04
        data_time, group_num, stream_num, msg_count = v4[7], v4[4], v4[5], v4[2]
        count, at = _set(text, at, scratch, count, _KEY_DT, data_time * 1000)
        if count >= 0 and not string_ids:
            count, at = _set(text, at, scratch, count, _KEY_GROUP, group_num)
            if count >= 0:
                count, at = _set(text, at, scratch, count, _KEY_STREAM, stream_num)
        if count >= 0:
            count, at = _set(text, at, scratch, count, _KEY_CNT, msg_count)
        if count < 0:
            return -1
    if _find(text, scratch, count, _KEY_T) >= 0:  # Sort's t layouts: the pure walk
        return -1
    row = used[B_TABLE]
    entry = used[B_ENTRIES]
    if row >= table.shape[0]:
        return _need(used, B_TABLE, row + 1)
    if entry + count > entries_out.shape[0]:
        return _need(used, B_ENTRIES, entry + count)
    if used[B_ATTR] + size > keys[0].size:
        return _need(used, B_ATTR, used[B_ATTR] + size)
    key_bytes = used[B_KEYS]
    value_bytes = used[B_VALUES]
    for e in range(count):
        key_bytes += scratch[1, e]
        value_bytes += scratch[3, e]
    if key_bytes > keys[1].size:
        return _need(used, B_KEYS, key_bytes)
    if value_bytes > values.size:
        return _need(used, B_VALUES, value_bytes)
    attr_at = used[B_ATTR]
    copy(keys[0], attr_at, text, 0, size)
    key_at = used[B_KEYS]
    value_at = used[B_VALUES]
    for e in range(count):
        k0, k, v0, v = scratch[0, e], scratch[1, e], scratch[2, e], scratch[3, e]
        copy(keys[1], key_at, text, k0, k)
        copy(values, value_at, text, v0, v)
        entries_out[entry + e, 0] = k
        entries_out[entry + e, 1] = v
        key_at += k
        value_at += v
    table[row, T_ATTR] = size
    table[row, T_ENTRIES] = count
    time = _find(text, scratch, count, _KEY_DT)
    table[row, T_TIME_OK] = 0
    if time >= 0:
        ms, ok = _dt_ms(text, scratch[2, time], scratch[3, time])
        table[row, T_TIME] = ms * 1000
        table[row, T_TIME_OK] = ok
    group = _find(text, scratch, count, _KEY_GROUP)
    if group < 0:
        group = _find(text, scratch, count, _KEY_BID)
    stream = _find(text, scratch, count, _KEY_STREAM)
    if stream < 0:
        stream = _find(text, scratch, count, _KEY_TID)
    table[row, T_GROUP] = entry + group if group >= 0 else -1
    table[row, T_STREAM] = entry + stream if stream >= 0 else -1
    used[B_TABLE] = row + 1
    used[B_ENTRIES] = entry + count
    used[B_ATTR] = attr_at + size
    used[B_KEYS] = key_at
    used[B_VALUES] = value_at
    return row


@njit(cache=True, nogil=True)
def _need(used, which, size):
    used[U_WHICH] = which
    used[U_NEED] = size
    return -2


@njit(cache=True, nogil=True)
def _items(data, start, end, limit, span, sizes, body, used):
    """Append the items `(ItemLen, ItemData)*` filling `data[start:end]` exactly (their
    sizes and bodies) after `used`, if they make one chunk as `message._item_chunks` cuts
    them (at most `limit`, no item after the first `span` bytes): (items, bytes of
    bodies), or items -1 (not clean items, or more than one chunk: found before the rest
    is walked) or -2 (a buffer to grow, set in `used`)."""
    row = used[B_ROWS]
    at = used[B_BODY]
    pos = start
    count = 0
    while pos < end:
        if count == limit or (count and pos - start >= span) or end - pos < 4:
            return -1, 0
        size = _i32(data, pos)
        pos += 4
        if size < 0 or size > end - pos:
            return -1, 0
        if row + count >= sizes.size:
            return _need(used, B_ROWS, row + count + 1), 0
        if at + size + 8 > body.size:  # 8 bytes of room for `_copy_wide`
            return _need(used, B_BODY, at + size + 8), 0
        sizes[row + count] = size
        _copy_wide(body, at, data, pos, size)
        at += size
        pos += size
        count += 1
    bodies = at - used[B_BODY]
    used[B_ROWS] = row + count
    used[B_BODY] = at
    return count, bodies


@njit(cache=True, nogil=True)
def _block(buf, at, size, attr_at, attr_len, v4, header, block, block_count, compressed,
           first, limits, sizes, body, table, entries, keys, values, used, text, scratch,
           snappy_out):  # fmt: skip
    """One block (V4, `v4` its header: the body) appended, its row then its items:
    (items, data bytes of its chunk), items -1 for the pure walk (an error, or more than
    one chunk), -2 to grow a buffer."""
    if attr_len > 0:
        copy(text, 0, buf, attr_at, attr_len)
        for i in range(attr_len):
            if text[i] >= 0x80:  # modified UTF-8 / UTF-8 beyond ASCII: the pure walk
                return -1, 0
    row = _block_row(text, attr_len, v4, table, entries, keys, values, used, scratch)
    if row < 0:
        return row, 0
    # one chunk, as `message._Block.chunks` cuts it (ITEM_LIST: weight 1), and no more
    # items than the message's chunk has room for
    span = limits[L_CHUNK_BYTES]
    limit = min(max(1, min(limits[L_CHUNK_ROWS], span // (attr_len + 1))),
                limits[L_CHUNK_ROWS] - first)  # fmt: skip
    if compressed:
        got = snappy(buf, at, at + size, snappy_out, limits[L_DECOMPRESSED])
        if got == -1:
            return -1, 0
        if got < -1:
            return _need(used, B_SNAPPY, -2 - got), 0
        count, bodies = _items(snappy_out, 0, got, limit, span, sizes, body, used)
    else:
        count, bodies = _items(buf, at, at + size, limit, span, sizes, body, used)
    if count < 0:
        return count, 0
    table[row, T_VERSION : T_VERSION + _HEADER_FIELDS] = header
    table[row, T_BLOCK] = block
    table[row, T_BLOCK_COUNT] = block_count
    table[row, T_COMPRESSED] = compressed
    table[row, T_FIRST_ITEM] = first
    table[row, T_ITEMS] = count
    return count, bodies + count * attr_len


@njit(cache=True, nogil=True)
def _message(buf, start, length, limits, sizes, body, table, entries, keys, values, used,
             text, scratch, snappy_out):  # fmt: skip
    """Append one message's block rows and items after `used` (not committed):
    (items, data bytes), items -1 for the pure walk, -2 to grow a buffer."""
    end = start + length - 2  # the blocks end before the back magic
    if length < 4 or buf[start] != 0x0F or buf[start + 1] > 4:
        return -1, 0
    if buf[end] != 0x0F or buf[end + 1] != buf[start + 1]:
        return -1, 0
    version = np.int64(buf[start + 1])
    header = np.zeros(_HEADER_FIELDS, np.int64)
    header[0] = version
    pos = start + 2
    if version == 4:
        if end - pos < 25:
            return -1, 0
        header[1] = big_endian(buf, pos + 11, 4) * 1000  # create_time_ms = DataTime * 1000
        header[2] = big_endian(buf, pos + 15, 2)  # MsgCnt
        header[3] = big_endian(buf, pos + 4, 1)  # MsgType
        header[4] = big_endian(buf, pos + 5, 2)
        header[5] = big_endian(buf, pos + 7, 2)
        ext = big_endian(buf, pos + 9, 2)
        header[6] = ext
        header[7] = big_endian(buf, pos + 11, 4)
        header[8] = big_endian(buf, pos + 17, 4)
        body_len = _i32(buf, pos + 21)
        pos += 25
        if body_len < 0 or body_len > end - pos or ext & 0x01:  # private attrs: pure walk
            return -1, 0
        body_at = pos
        pos += body_len
        if end - pos < 2:
            return -1, 0
        attr_len = big_endian(buf, pos, 2)
        if attr_len + 2 > end - pos - 2:  # the Attr, then the inner magic
            return -1, 0
        return _block(buf, body_at, body_len, pos + 2, attr_len, header, header, -1, -1,
                      header[3] >> 5 == 1, 0, limits, sizes, body, table, entries, keys, values,
                      used, text, scratch, snappy_out)  # fmt: skip
    if version == 3:  # record lists with private attributes: the pure walk
        return -1, 0
    head = 4 + (8 if version else 0) + (4 if version == 2 else 0)
    if end - pos < head:
        return -1, 0
    if version:
        header[1] = big_endian(buf, pos, 8)
    if version == 2:
        header[2] = _i32(buf, pos + 8)
    attr_count = _i32(buf, pos + head - 4)
    pos += head
    if attr_count < 0:
        return -1, 0
    items = 0
    data_bytes = 0
    block_head = 9 if version == 2 else 5
    for index in range(attr_count):
        if end - pos < 2:
            return -1, 0
        attr_len = big_endian(buf, pos, 2)
        attr_at = pos + 2
        pos = attr_at + attr_len
        if end - pos < block_head or attr_len > end - attr_at:
            return -1, 0
        block_count = _i32(buf, pos) if version == 2 else -1
        pos += block_head - 5
        items_len = _i32(buf, pos)
        flag = buf[pos + 4]
        pos += 5
        if items_len < 1 or items_len - 1 > end - pos:
            return -1, 0
        count, size = _block(buf, pos, items_len - 1, attr_at, attr_len, None, header,
                             index, block_count, flag == 1, items, limits, sizes, body, table,
                             entries, keys, values, used, text, scratch, snappy_out)  # fmt: skip
        if count < 0:
            return count, 0
        items += count
        data_bytes += size
        pos += items_len - 1
    return items, data_bytes


@njit(cache=True, nogil=True)
def walk(buf, frames, first, count, limits, sizes, body, table, entries, keys, values, used,
         text, scratch, snappy_out):  # fmt: skip
    """Append the messages of frames `first` .. `count` - 1 (`frames`: message start and
    length in `buf`, byte offset, frame bytes) until one needs the pure walk (FALLBACK),
    the buffered rows a flush first (FLUSH), or a buffer more room (`_GROW`); the frame it
    stopped at goes in `used[U_NEXT]`. Committed messages count in `used` (frames, items,
    frame bytes) and in its buffered rows and bytes, which it takes for the batch bounds."""
    for f in range(first, count):
        used[U_NEXT] = f
        mark = used[:U_BUFFERED_ROWS].copy()
        items, data_bytes = _message(buf, frames[0, f], frames[1, f], limits, sizes, body, table,
                                     entries, keys, values, used, text, scratch,
                                     snappy_out)  # fmt: skip
        if items < 0:
            used[:U_BUFFERED_ROWS] = mark
            return FALLBACK if items == -1 else _GROW
        if items > limits[L_CHUNK_ROWS] or data_bytes > limits[L_CHUNK_BYTES]:
            used[:U_BUFFERED_ROWS] = mark  # more than one chunk: streamed by the pure walk
            return FALLBACK
        if (
            items
            and used[U_BUFFERED_ROWS]
            and (
                used[U_BUFFERED_ROWS] + items > limits[L_BATCH_ROWS]
                or used[U_BUFFERED_BYTES] + data_bytes > limits[L_BATCH_BYTES]
            )
        ):
            used[:U_BUFFERED_ROWS] = mark
            return FLUSH
        table[mark[B_TABLE] : used[B_TABLE], T_OFFSET] = frames[2, f]
        used[U_BUFFERED_ROWS] += items
        used[U_BUFFERED_BYTES] += data_bytes
        used[U_FRAMES] += 1
        used[U_RECORDS] += items
        used[U_FRAME_BYTES] += frames[3, f]
    used[U_NEXT] = count
    return DONE


@njit(cache=True, nogil=True)
def scan_prefixed(buf, base, limit, frames):
    """The complete frames (u32 length, message) at the start of `buf` whose length is at
    most `limit`, as `walk` takes them (byte offsets from `base`), at most as many as
    `frames` holds: (count, bytes they span)."""
    pos = 0
    n = 0
    while n < frames.shape[1] and buf.size - pos >= 4:
        length = big_endian(buf, pos, 4)
        if length > limit or length > buf.size - pos - 4:
            break
        frames[0, n] = pos + 4
        frames[1, n] = length
        frames[2, n] = base + pos
        frames[3, n] = length + 4
        pos += length + 4
        n += 1
    return n, pos


class Columns:
    """Messages walked since the last flush, in growable numpy buffers from which the
    columns are built once (`arrays`). The body column shares its buffer: after a flush,
    start a new `Columns` (`sizes` carries the last one's, to grow less; `body_bytes`:
    room for that many bytes of bodies from the start)."""

    # items, bodies, block rows, attr bytes, entries, key and value bytes: small, so that
    # a small input holds little (a file's later batches start at the last one's)
    SIZES = (1024, 1 << 16, 64, 1 << 12, 512, 1 << 12, 1 << 12)

    def __init__(self, sizes: tuple[int, ...] = SIZES, *, body_bytes: int = 0):
        items, body, table, attr, entries, key_bytes, value_bytes = sizes
        self._sizes = pooled(items, np.int64)  # each item's body size
        self._body = pooled(max(body, body_bytes), np.uint8)
        self._table = pooled((table, _TABLE_FIELDS), np.int64)
        self._entries = pooled((entries, 2), np.int64)
        self._keys = (pooled(attr, np.uint8), pooled(key_bytes, np.uint8))  # attrs, keys
        self._values = pooled(value_bytes, np.uint8)
        self._used = np.zeros(_USED, np.int64)
        self._text = np.empty(_ATTR_SCRATCH, np.uint8)
        self._scratch = np.empty((4, MAX_ENTRIES), np.int64)
        self._snappy = np.empty(1 << 16, np.uint8)

    @property
    def rows(self) -> int:
        return int(self._used[B_ROWS])

    def sizes(self) -> tuple[int, ...]:
        return (self._sizes.size, self._body.size, self._table.shape[0], self._keys[0].size,
                self._entries.shape[0], self._keys[1].size, self._values.size)  # fmt: skip

    def walk(
        self,
        buf: np.ndarray,
        frames: np.ndarray,
        first: int,
        count: int,
        limits: np.ndarray,
        buffered_rows: int,
        buffered_bytes: int,
    ) -> tuple[int, int]:
        """Walk frames `first` .. `count` - 1 (compiled `walk`): (status, frame it stopped
        at). `counts()` then gives what the committed messages add."""
        buf = readonly(buf)
        used = self._used
        used[U_BUFFERED_ROWS] = buffered_rows
        used[U_BUFFERED_BYTES] = buffered_bytes
        used[U_FRAMES : U_FRAME_BYTES + 1] = 0
        try:
            while True:
                status = walk(buf, frames, first, count, limits, self._sizes, self._body,
                              self._table, self._entries, self._keys, self._values, used,
                              self._text, self._scratch, self._snappy)  # fmt: skip
                if status != _GROW:
                    return status, int(used[U_NEXT])
                first = int(used[U_NEXT])
                self._grow(int(used[U_WHICH]), int(used[U_NEED]))
        finally:
            if self._snappy.size > _SNAPPY_KEPT:  # a bomb-sized block is not kept
                self._snappy = np.empty(_SNAPPY_KEPT, np.uint8)

    def counts(self) -> Walked:
        """What the messages committed by the last `walk` add."""
        used = self._used.tolist()
        return Walked(*used[U_BUFFERED_ROWS : U_FRAME_BYTES + 1])

    def _grow(self, which: int, need: int) -> None:
        used = self._used
        if which == B_ROWS:
            self._sizes = enlarged(self._sizes, used[B_ROWS], need, axis=0)
        elif which == B_BODY:
            self._body = enlarged(self._body, used[B_BODY], need, axis=0)
        elif which == B_TABLE:
            self._table = enlarged(self._table, used[B_TABLE], need, axis=0)
        elif which == B_ENTRIES:
            self._entries = enlarged(self._entries, used[B_ENTRIES], need, axis=0)
        elif which == B_ATTR:
            self._keys = (enlarged(self._keys[0], used[B_ATTR], need, axis=0), self._keys[1])
        elif which == B_KEYS:
            self._keys = (self._keys[0], enlarged(self._keys[1], used[B_KEYS], need, axis=0))
        elif which == B_VALUES:
            self._values = enlarged(self._values, used[B_VALUES], need, axis=0)
        else:
            self._snappy = np.empty(max(2 * self._snappy.size, need), np.uint8)

    def arrays(self) -> list[pa.Array]:
        """The byte_offset column and the value columns (`INLONG_SCHEMA` without
        source_file) of every row walked: the fields of each block built once, then taken
        for its items."""
        blocks = np.ascontiguousarray(self._table[: int(self._used[B_TABLE])].T)
        items = blocks[T_ITEMS]
        item_blocks = pa.array(np.repeat(np.arange(items.size, dtype=np.int32), items))
        shared = self._block_columns(blocks)
        taken = pa.RecordBatch.from_arrays(list(shared.values()), list(shared)).take(item_blocks)
        sizes = self._sizes[: int(self._used[B_ROWS])]
        first_rows = np.cumsum(items) - items  # each block's first row in the batch
        columns = {
            **dict(zip(shared, taken.columns, strict=True)),
            "item_index": pa.array(
                np.arange(sizes.size, dtype=np.int32)
                + np.repeat((blocks[T_FIRST_ITEM] - first_rows).astype(np.int32), items)
            ),
            "attributes": self._attributes(blocks),
            "private_attr": pa.nulls(sizes.size, pa.string()),
            "private_attributes": pa.nulls(sizes.size, ATTRIBUTES_TYPE),
            "body": _binary(pa.binary(), offsets_of(sizes), self._body),
        }
        return [columns[field.name] for field in list(INLONG_SCHEMA)[1:]]

    def _block_columns(self, blocks: np.ndarray) -> dict[str, pa.Array]:
        """The columns whose value an item takes from its block, one row per block
        (`blocks`: the block rows' fields)."""
        version = blocks[T_VERSION]
        v4 = version == 4
        entries = self._entries[: int(self._used[B_ENTRIES])].T
        entry_values = _binary(pa.string(), offsets_of(entries[1]), self._values)
        group, stream = blocks[T_GROUP], blocks[T_STREAM]
        no_nulls = np.zeros(version.size, bool)
        nullable = {  # values, and where they are null
            "byte_offset": (blocks[T_OFFSET], no_nulls),
            "event_time": (blocks[T_TIME], blocks[T_TIME_OK] == 0),
            "version": (version, no_nulls),
            "create_time_ms": (blocks[T_CREATE], version == 0),
            "msg_count": (blocks[T_COUNT], version < 2),
            "msg_type": (blocks[T_TYPE], ~v4),
            "group_id_num": (blocks[T_GNUM], ~v4),
            "stream_id_num": (blocks[T_SNUM], ~v4),
            "ext_field": (blocks[T_EXT], ~v4),
            "data_time": (blocks[T_DTIME], ~v4),
            "unique_id": (blocks[T_UID], ~v4),
            "block_index": (blocks[T_BLOCK], v4),
            "block_item_count": (blocks[T_BLOCK_COUNT], version != 2),
            "compressed": (blocks[T_COMPRESSED] != 0, no_nulls),
        }
        columns = {
            name: pa.array(values, INLONG_SCHEMA.field(name).type, mask=nulls)
            for name, (values, nulls) in nullable.items()
        }
        columns["group_id"] = entry_values.take(pa.array(group, mask=group < 0))
        columns["stream_id"] = entry_values.take(pa.array(stream, mask=stream < 0))
        columns["attr"] = _binary(pa.string(), offsets_of(blocks[T_ATTR]), self._keys[0])
        return columns

    def _attributes(self, blocks: np.ndarray) -> pa.MapArray:
        """The attributes column: each block's entries repeated for its items."""
        entries = self._entries[: int(self._used[B_ENTRIES])].T
        count, items = blocks[T_ENTRIES], blocks[T_ITEMS]
        first = np.cumsum(count) - count
        return pa.MapArray.from_arrays(
            pa.array(offsets_of(np.repeat(count, items))),
            _repeated(first, first + count, items, offsets_of(entries[0]), self._keys[1]),
            _repeated(first, first + count, items, offsets_of(entries[1]), self._values),
            type=ATTRIBUTES_TYPE,
        )


def _repeated(
    firsts: np.ndarray, stops: np.ndarray, repeats: np.ndarray, offsets: np.ndarray, data
) -> pa.Array:
    """The string column of values `firsts[b]` .. `stops[b]` - 1 of a binary column
    (`offsets`, `data`), each run repeated `repeats[b]` times, for every b, back to back."""
    values = int(((stops - firsts) * repeats).sum())
    size = int(((offsets[stops] - offsets[firsts]).astype(np.int64) * repeats).sum())
    if size > 0x7FFF_FFFF:
        raise OverflowError(f"{size} bytes in one column exceed Arrow's 32-bit offsets")
    out_offsets, out = pooled(values + 1, np.int32), pooled(size, np.uint8)
    _repeat_runs(firsts, stops, repeats, offsets, data, out_offsets, out)
    return _binary(pa.string(), out_offsets, out)


@njit(cache=True, nogil=True)
def _repeat_runs(firsts, stops, repeats, offsets, data, out_offsets, out):
    """Fill `_repeated`'s offsets and bytes. A run is copied once, then its copies double
    (a memcpy each, offsets shifted), so the attributes of a block cost its items a few
    large copies, not one small one each."""
    out_offsets[0] = 0
    v = 0  # values written
    at = 0  # bytes written
    for b in range(firsts.size):
        first, count, repeat = firsts[b], stops[b] - firsts[b], repeats[b]
        if repeat == 0:
            continue
        base = offsets[first]
        length = offsets[first + count] - base
        copy(out, at, data, base, length)
        for k in range(count):
            out_offsets[v + 1 + k] = offsets[first + 1 + k] - base + at
        done = 1  # copies of the run written
        while done < repeat:
            more = min(done, repeat - done)
            copy(out, at + done * length, out, at, more * length)
            shift = done * length
            run = out_offsets[v + 1 : v + 1 + more * count]
            shifted = out_offsets[v + 1 + done * count : v + 1 + (done + more) * count]
            for k in range(more * count):
                shifted[k] = run[k] + shift
            done += more
        v += count * repeat
        at += length * repeat


def _binary(type_: pa.DataType, offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    """A binary-layout column without nulls: values at int32 `offsets` into `data`."""
    return pa.Array.from_buffers(
        type_, offsets.size - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data[: offsets[-1]])]
    )


def warm() -> None:
    """Load the message walk, the prefix scan and the run copy for the arguments the
    decoder and `Columns` give them (`wirecodecs.compiled.warm`)."""
    columns, data = Columns(), readonly(b"")
    frames, ints, int32s, bytes_ = (np.empty((4, 1), np.int64), np.empty(0, np.int64),
                                    np.empty(0, np.int32), np.empty(0, np.uint8))  # fmt: skip
    load(walk, data, frames, 0, 0, ints, columns._sizes, columns._body, columns._table,
         columns._entries, columns._keys, columns._values, columns._used, columns._text,
         columns._scratch, columns._snappy)  # fmt: skip
    load(scan_prefixed, data, 0, 0, frames)
    load(_repeat_runs, ints, ints, ints, int32s, bytes_, int32s, bytes_)

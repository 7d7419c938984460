"""One InLongMsg message (V0-V4): its header fields, and its data items in chunks.

Byte layouts: docs/inlong.md, "Byte layout" (names in parentheses below are its parts,
"Errors and divergences from Java's `InLongMsg`" what Java does with them). A message
is a whole buffer: front magic 0F0V, a version-specific payload, the same magic last. The
parse is strict where Java's `InLongMsg` is lazy or lenient; every place where Java
throws, returns null, stops silently or pads with zeros is a `DecodeError` here:

* fewer than 4 bytes, unknown magic, front and back magic differ (a lost tail too):
  Java's `parseFrom` returns null -> `message_too_short`, `bad_magic`, `magic_mismatch`;
* a header, block, item or length that runs past the payload, a negative count or
  length: Java throws (AIOOBE, IllegalArgumentException, NegativeArraySize) -> `truncated`,
  `length_out_of_range`;
* an item longer than its block: Java returns it zero-padded -> `truncated`;
  1-3 stray bytes after the last item: Java's `next()` returns null -> `truncated`;
* invalid modified UTF-8 in an attribute: Java returns the blocks so far, then fails on the
  next accessor -> `invalid_attribute`; malformed UTF-8 in a V3/V4 attribute, which Java
  replaces with U+FFFD, is `invalid_attribute` too;
* a corrupt snappy block or body: Java's iterator is null (V1-V3) or `getAttrs` throws a
  NullPointerException (V4) -> `decompress_failed` / `decompressed_too_large`;
* V3 (and V4 with private attributes) item or private-attribute length <= 0, and a
  negative V3 RecordLen: Java stops the parse and drops what it read (an empty or NPE
  result), or skips the record -> `invalid_item`;
* V4 attribute entry without `=`, value containing `=`, repeated key: Java throws from
  `getAttrs` -> `invalid_attribute`.

Where Java parses normally this parser does too, including bytes between the last block
(V4: the inner magic) and the trailing magic, a wrong V4 TotalLen and a wrong inner magic
(the Java parser ignores all three), and a V3 RecordLen of 0 (what `addMsg` writes for an
empty buffer: Java skips the record). Where the Java result is lossy this parser keeps
everything: two blocks with the same attribute string both yield their items (Java keeps
the last), and V4 numeric fields are read unsigned (Java reads them signed: "Errors and
divergences").

Memory: a message can hold millions of items (a 787 KB snappy block inflates to 4 M empty
ones). `parse` walks the whole message once to check it, keeping its items only when they
make one chunk (most messages); `Message.items` yields them, or walks the message again,
in chunks of at most `rows` items whose rows hold about CHUNK_BYTES (bodies, attribute
strings, maps of an item's own weighted by MAP_WEIGHT). A caller that turns chunks into
row batches holds one chunk, one decompressed block and the message, whatever it holds.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from typing import NamedTuple

from wirecodecs.binary import INT32, Cursor
from wirecodecs.compression import decompress
from wirecodecs.errors import DecodeError
from wirecodecs.inlong.attributes import FORMAT, mutf8, split_lenient, split_strict, utf8
from wirecodecs.rows import FLUSH_BYTES

MAGIC_LEAD = 0x0F  # a message starts and ends with the magic 0F 0v (v: its version)
MAGIC_BYTES = 2
MIN_MESSAGE = 2 * MAGIC_BYTES
VERSIONS = (0, 1, 2, 3, 4)
CHUNK_ROWS = 65536  # items per chunk unless the caller chooses (the decoder: batch_rows)
CHUNK_BYTES = FLUSH_BYTES  # a chunk also ends once its rows hold about this much data
# What a byte of attribute text costs in a map of an item's own (V3, V4 form B: Python's
# dict entries and strings; measured 12-15 bytes), where other items share one map
MAP_WEIGHT = 16

# ---- V0-V3 headers ("V0-V3 headers"), after the front magic ---------------------------------
_HEADERS = {
    0: struct.Struct(">i"),  # AttrDataCnt
    1: struct.Struct(">qi"),  # CreateTime ms, AttrDataCnt
    2: struct.Struct(">qii"),  # CreateTime ms, MsgCnt, AttrDataCnt
    3: struct.Struct(">qii"),  # as V2; blocks hold record lists ("V3 records")
}
_UINT16 = struct.Struct(">H")  # AttrLen of a block (writeUTF's length)
_ITEMS_HEAD = struct.Struct(">iB")  # ItemsLen (incl. the Compress byte), Compress
_V2_ITEMS_HEAD = struct.Struct(">iiB")  # ItemCnt, ItemsLen, Compress

# ---- V4 inner binary message ("V4 message"), after the front magic -----------------------------
V4_HEADER = struct.Struct(
    ">i"  # TotalLen: 25 + BodyLen + AttrLen (ignored by the parser, as in Java)
    "B"  # MsgType: low 5 bits type (7), bits 5-7 flags (0x20 snappy, 0x40 encrypted)
    "H"  # GroupIdNum
    "H"  # StreamIdNum
    "H"  # ExtField: bit 0 private attrs, 2 string ids, 5 LF-joined events
    "I"  # DataTime, epoch seconds
    "H"  # MsgCnt
    "I"  # UniqueId (4 bytes, not 8)
    "i"  # BodyLen
)
INNER_MAGIC = 0xEE01
EXT_PRIVATE_ATTRS = 0x01
EXT_STRING_IDS = 0x04
ZIP_SHIFT = 5  # MsgType bits 5-7 say how the body is compressed:
ZIP_SNAPPY = 1  # snappy; any other value: the body is used as stored

# How a block's (V4: the body's) data is laid out once decompressed
ITEM_LIST = "items"  # (ItemLen, ItemData)*: V0-V2, V4 form A
RECORD_LIST = "records"  # RecordLen-framed (item, private attr) pairs: V3
PAIR_LIST = "pairs"  # (item, private attr) pairs: V4 form B


@dataclass(slots=True)
class Items:
    """Consecutive items of a message, with what consumers see for each: a list entry
    per item in every field but the first's position."""

    first: int  # position of the first item in the message, wire order
    blocks: list[int | None]  # attribute block (V0-V3)
    block_item_counts: list[int | None]  # V2: the block's ItemCnt
    compressed: list[bool]  # the block (V1-V3) or body (V4) was snappy
    bodies: list[bytes]
    attrs: list[str]  # V0-V3: the block's string (V3: common + "&" + private); V4: common Attr
    attributes: list[dict[str, str]]  # merged map (V0-V3: Sort's split; V4: as InLongMsg builds it)
    private_attrs: list[str | None]  # V3 / V4 form B: the item's own attribute string
    private_attributes: list[dict[str, str] | None]
    # what the rows hold: bodies and attribute text, MAP_WEIGHT times where maps are per item
    data_bytes: int

    def extend(self, other: Items) -> None:
        """Append the items that follow these (`other`'s lists are not kept)."""
        for name in _ITEM_LISTS:
            getattr(self, name).extend(getattr(other, name))
        self.data_bytes += other.data_bytes


_ITEM_LISTS = tuple(field.name for field in fields(Items))[1:-1]  # an entry per item


class _At:
    """Gives a DecodeError raised without a position the position `offset`."""

    __slots__ = ("offset",)

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def __enter__(self) -> None:
        pass

    def __exit__(self, kind, err, tb) -> None:
        if isinstance(err, DecodeError) and err.offset is None:
            err.offset = self.offset


@dataclass(slots=True)
class _Block:
    """One attribute block (V0-V3) or V4 body as stored, and what its items share."""

    index: int | None  # block_index (V4: None)
    item_count: int | None  # V2 ItemCnt
    attr: str  # V0-V3 block attribute string, V4 common Attr
    attributes: dict[str, str] | None  # V0-V2 split attr, V4 common map (V3: per item)
    layout: str  # ITEM_LIST, RECORD_LIST or PAIR_LIST
    data: memoryview  # as stored
    at: int  # where `data` starts in the message
    compressed: bool

    def chunks(self, first: int, rows: int, max_decompressed: int) -> Iterator[Items]:
        """The block's items, the first being item `first` of the message, in chunks;
        DecodeError for bad data (at the block's data, when the walk knows no better)."""
        with _At(self.at):
            data = _snappy_block(self.data, max_decompressed) if self.compressed else self.data
            where = "V4 body" if self.index is None else f"block {self.index}"
            # chunk bounds: a row holds the block's attr and the data its item spans,
            # MAP_WEIGHT times over where each item gets maps of its own
            weight = 1 if self.layout == ITEM_LIST else MAP_WEIGHT
            limit = max(1, min(rows, CHUNK_BYTES // (weight * len(self.attr) + 1)))
            span = CHUNK_BYTES // weight
            if self.layout == ITEM_LIST:
                for bodies in _item_chunks(data, limit, span, where):
                    count = len(bodies)
                    size = sum(map(len, bodies)) + count * len(self.attr)
                    yield Items(first, *self._shared(count), bodies, [self.attr] * count,
                                [self.attributes] * count, [None] * count, [None] * count,
                                size)  # fmt: skip
                    first += count
                return
            records = self.layout == RECORD_LIST
            # A private attribute that is not k=v is raised once every pair is read: an
            # unreadable pair is the error then, however the pairs are chunked.
            failed = None
            for bodies, privates in _pair_chunks(data, limit, span, where, records):
                if failed is None:
                    try:
                        chunk = self._with_private(first, bodies, privates)
                    except DecodeError as err:
                        failed = err
                    else:
                        yield chunk
                first += len(bodies)
            if failed is not None:
                raise failed

    def _shared(self, count: int) -> tuple[list, list, list]:
        """The block's own fields, for `count` items."""
        return [self.index] * count, [self.item_count] * count, [self.compressed] * count

    def _with_private(self, first: int, bodies: list[bytes], privates: list[str]) -> Items:
        count = len(bodies)
        text = count * len(self.attr) + sum(map(len, privates))
        size = sum(map(len, bodies)) + MAP_WEIGHT * text
        if self.layout == RECORD_LIST:  # Sort splits Java's group key, common & private
            keys = [f"{self.attr}&{private}" for private in privates]
            by_key: dict[str, dict[str, str]] = {}
            for key in keys:
                if key not in by_key:
                    by_key[key] = split_lenient(key)
            return Items(first, *self._shared(count), bodies, keys,
                         [by_key[key] for key in keys], privates,
                         [split_lenient(private) for private in privates], size)  # fmt: skip
        own = [
            split_strict(private, f"item {first + i} private attr")
            for i, private in enumerate(privates)
        ]
        common = self.attributes
        return Items(first, *self._shared(count), bodies, [self.attr] * count,
                     [{**mine, **common} for mine in own], privates, own, size)  # fmt: skip


class Header(NamedTuple):
    """A message's header fields: the same columns on each of its rows."""

    version: int
    create_time_ms: int | None  # V1-V3 CreateTime; V4 DataTime * 1000; None for V0
    msg_count: int | None  # V2/V3 MsgCnt (int32), V4 MsgCnt (uint16); None for V0/V1
    msg_type: int | None = None  # V4 only, like the fields below
    group_id_num: int | None = None
    stream_id_num: int | None = None
    ext_field: int | None = None
    data_time: int | None = None  # epoch seconds
    unique_id: int | None = None


@dataclass(frozen=True, slots=True)
class Message:
    header: Header
    item_count: int
    buf: memoryview  # the whole message
    kept: tuple[Items, ...] | None  # its items, when they make at most one chunk
    rows: int  # items per chunk at most
    max_decompressed: int

    def items(self) -> Iterator[Items]:
        """The items in wire order, in chunks: the kept ones, else the message walked
        again (`parse` checked it all, so this walk cannot fail)."""
        if self.kept is not None:
            yield from self.kept
            return
        yield from _chunks(_layout(self.buf)[1], self.rows, self.max_decompressed)


def parse(buf, max_decompressed: int, rows: int = CHUNK_ROWS) -> Message:
    """Parse and check one whole message (bytes or memoryview) whose items come in chunks
    of at most `rows`; raises DecodeError with offsets relative to the start of `buf`."""
    buf = memoryview(buf)
    try:
        header, blocks = _layout(buf)
        count, kept = _checked(blocks, rows, max_decompressed)
    except DecodeError:
        raise
    except (IndexError, ValueError, struct.error) as err:  # a check missed: still typed
        raise DecodeError(FORMAT, "invalid_message", str(err)) from None
    return Message(header, count, buf, kept, rows, max_decompressed)


def version_of(buf) -> int:
    """The version both magics agree on ("Message frame"), or DecodeError."""
    size = len(buf)
    if size < MIN_MESSAGE:
        raise DecodeError(
            FORMAT, "message_too_short", f"{size} bytes: a message has at least 4", offset=0
        )
    if buf[0] != MAGIC_LEAD or buf[1] not in VERSIONS:
        raise DecodeError(
            FORMAT, "bad_magic", f"front magic {bytes(buf[:2]).hex()} is not 0f00..0f04", offset=0
        )
    if buf[size - 2] != buf[0] or buf[size - 1] != buf[1]:
        raise DecodeError(
            FORMAT,
            "magic_mismatch",
            f"back magic {bytes(buf[-2:]).hex()} differs from front magic "
            f"{bytes(buf[:2]).hex()} (message cut or damaged)",
            offset=size - 2,
        )
    return buf[1]


def declared_items(buf) -> int:
    """Items a damaged message declares (V2/V3 MsgCnt, V4 MsgCnt), 0 when unknown."""
    try:
        version = version_of(buf)
        if version in (2, 3):
            return max(INT32.unpack_from(buf, 10)[0], 0)
        if version == 4:
            return _UINT16.unpack_from(buf, 17)[0]
    except (DecodeError, struct.error):
        pass
    return 0


def _layout(buf: memoryview) -> tuple[Header, Iterable[_Block]]:
    """The header fields, and the blocks (V4: the body), read lazily
    so that errors come in wire order."""
    version = version_of(buf)
    cursor = Cursor(FORMAT, buf[: len(buf) - MAGIC_BYTES], MAGIC_BYTES)
    if version == 4:
        return _parse_v4(cursor)
    fields = cursor.unpack(_HEADERS[version], "header")
    attr_count = fields[-1]
    if attr_count < 0:
        raise DecodeError(
            FORMAT, "length_out_of_range", f"AttrDataCnt {attr_count} is negative", offset=2
        )
    create_time = fields[0] if version else None
    msg_count = fields[1] if version >= 2 else None
    return Header(version, create_time, msg_count), _read_blocks(cursor, version, attr_count)


def _checked(blocks, rows: int, max_decompressed: int) -> tuple[int, tuple[Items, ...] | None]:
    """Walk every block before any item is used: the item count, and the items when they
    make at most one chunk (most messages: then there is no second walk)."""
    count = 0
    chunks: list[Items] = []
    for chunk in _chunks(blocks, rows, max_decompressed):
        count += len(chunk.bodies)
        if len(chunks) < 2:
            chunks.append(chunk)
    return count, tuple(chunks) if len(chunks) < 2 else None


def _chunks(blocks: Iterable[_Block], rows: int, max_decompressed: int) -> Iterator[Items]:
    """The blocks' items in chunks, those of small blocks joined up to a chunk's bounds."""
    pending = None
    first = 0
    for block in blocks:
        for chunk in block.chunks(first, rows, max_decompressed):
            first += len(chunk.bodies)
            if pending is None:
                pending = chunk
            elif (
                len(pending.bodies) + len(chunk.bodies) > rows
                or pending.data_bytes + chunk.data_bytes > CHUNK_BYTES
            ):
                yield pending
                pending = chunk
            else:
                pending.extend(chunk)
    if pending is not None:
        yield pending


def _read_blocks(cursor: Cursor, version: int, attr_count: int) -> Iterator[_Block]:
    """The attribute blocks ("V0-V3 blocks"): attr, [ItemCnt], ItemsLen, Compress, Data."""
    for index in range(attr_count):
        at = cursor.pos
        (attr_len,) = cursor.unpack(_UINT16, "AttrLen")
        with _At(at):
            attr = mutf8(bytes(cursor.take(attr_len, "Attr")), f"block {index} attr")
        item_count = None
        if version == 2:
            item_count, items_len, flag = cursor.unpack(_V2_ITEMS_HEAD, "block head")
        else:
            items_len, flag = cursor.unpack(_ITEMS_HEAD, "block head")
        if items_len < 1:
            raise DecodeError(
                FORMAT,
                "length_out_of_range",
                f"block {index}: ItemsLen {items_len} (it counts the Compress byte)",
                offset=cursor.base + cursor.pos,
            )
        data_at = cursor.pos
        data = cursor.take(items_len - 1, f"block {index} data")
        if version == 3:
            layout, attributes = RECORD_LIST, None
        else:
            layout, attributes = ITEM_LIST, split_lenient(attr)
        # Java: any Compress value but 1 means raw
        yield _Block(index, item_count, attr, attributes, layout, data, data_at, flag == 1)


def _snappy_block(data, max_decompressed: int) -> bytes:
    return decompress("snappy", data, max_decompressed, fmt=FORMAT)


def _item_chunks(data, rows: int, span: int, where: str) -> Iterator[list[bytes]]:
    """`(ItemLen int32, ItemData)*` filling `data` exactly ("V0-V3 blocks"), as lists of item
    bodies: at most `rows`, ending once they span `span` bytes."""
    out: list[bytes] = []
    done = pos = mark = 0
    end = len(data)
    unpack = INT32.unpack_from
    while pos < end:
        if end - pos < 4:
            raise DecodeError(
                FORMAT,
                "truncated",
                f"{where}: {end - pos} stray bytes after item {done + len(out)}",
            )
        (size,) = unpack(data, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise DecodeError(
                FORMAT,
                "truncated" if size > 0 else "length_out_of_range",
                f"{where}: item {done + len(out)} length {size}, {end - pos} bytes left",
            )
        out.append(bytes(data[pos : pos + size]))
        pos += size
        if len(out) == rows or pos - mark >= span:
            yield out
            done += len(out)
            out = []
            mark = pos
    if out:
        yield out


def _pair_chunks(
    data, rows: int, span: int, where: str, records: bool
) -> Iterator[tuple[list[bytes], list[str]]]:
    """`(ItemLen, ItemData, IAttrLen, IAttr)*` to the end of `data` (V4 form B), or V3's
    record list ("V3 records"): RecordLen int32, then pairs that fill exactly RecordLen bytes.
    As (bodies, private attrs) lists, chunked like `_item_chunks`."""
    bodies: list[bytes] = []
    privates: list[str] = []
    done = pos = mark = 0
    end = len(data)
    while pos < end:
        stop, label, start = end, where, done + len(bodies)
        if records:
            stop = _record_end(data, pos, where)
            label = f"{where} record at {pos}"
            pos += 4
        while pos < stop:
            n = done + len(bodies) - start  # pairs are counted per record
            body, pos = _sized(data, pos, stop, f"item {n}", label)
            raw, pos = _sized(data, pos, stop, f"item {n} private attr", label)
            bodies.append(body)
            privates.append(utf8(raw, f"{label} item {n} private attr"))
            if len(bodies) == rows or pos - mark >= span:
                yield bodies, privates
                done += len(bodies)
                bodies, privates = [], []
                mark = pos
    if bodies:
        yield bodies, privates


def _record_end(data, pos: int, where: str) -> int:
    """Where the V3 record whose RecordLen is at `pos` ends. RecordLen 0 is an empty
    record (`addMsg` of an empty buffer), which Java skips; a negative one is an error."""
    end = len(data)
    if end - pos < 4:
        raise DecodeError(FORMAT, "truncated", f"{where}: {end - pos} stray bytes")
    (size,) = INT32.unpack_from(data, pos)
    if size < 0 or size > end - pos - 4:
        raise DecodeError(
            FORMAT,
            "truncated" if size > 0 else "invalid_item",
            f"{where}: RecordLen {size}, {end - pos - 4} bytes left",
        )
    return pos + 4 + size


def _sized(data, pos: int, end: int, what: str, where: str) -> tuple[bytes, int]:
    """A positive int32 length and that many bytes before `end` (V3 and V4 form B: Java
    stops its parse at a length <= 0 and drops what it read, so that is an error here)."""
    if end - pos < 4:
        raise DecodeError(FORMAT, "truncated", f"{where}: {what} length runs past the end")
    (size,) = INT32.unpack_from(data, pos)
    pos += 4
    if size <= 0:
        raise DecodeError(FORMAT, "invalid_item", f"{where}: {what} length {size} (Java stops)")
    if size > end - pos:
        raise DecodeError(
            FORMAT, "truncated", f"{where}: {what} length {size}, {end - pos} bytes left"
        )
    return bytes(data[pos : pos + size]), pos + size


def _parse_v4(cursor: Cursor) -> tuple[Header, list[_Block]]:
    """V4 ("V4 message"): the DataProxy binary message between the magics; its header
    fields, and its body as the one block."""
    (
        _total_len,
        msg_type,
        group_num,
        stream_num,
        ext,
        data_time,
        msg_count,
        unique_id,
        body_len,
    ) = cursor.unpack(V4_HEADER, "V4 header")
    if body_len < 0:
        raise DecodeError(
            FORMAT, "length_out_of_range", f"BodyLen {body_len} is negative", offset=23
        )
    body_at = cursor.base + cursor.pos
    body = cursor.take(body_len, "V4 body")
    (attr_len,) = cursor.unpack(_UINT16, "V4 AttrLen")
    raw_attr = bytes(cursor.take(attr_len, "V4 Attr"))
    cursor.take(2, "V4 inner magic")  # not checked, as in Java
    with _At(body_at + body_len + 2):
        attr = utf8(raw_attr, "common attr")
        common = split_strict(attr, "common attr") if attr else {}
    common["dt"] = str(data_time * 1000)
    if not ext & EXT_STRING_IDS:
        common["groupId"] = str(group_num)
        common["streamId"] = str(stream_num)
    common["cnt"] = str(msg_count)
    layout = PAIR_LIST if ext & EXT_PRIVATE_ATTRS else ITEM_LIST
    compressed = msg_type >> ZIP_SHIFT == ZIP_SNAPPY  # a u8: nothing above bit 7
    header = Header(4, data_time * 1000, msg_count, msg_type, group_num, stream_num, ext,
                    data_time, unique_id)  # fmt: skip
    return header, [_Block(None, None, attr, common, layout, body, body_at, compressed)]

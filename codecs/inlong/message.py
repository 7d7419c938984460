"""One InLongMsg message (V0-V4) parsed into its header fields and data items.

Byte layouts: ../shared/formats/inlong.md (section numbers below refer to it). A message
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
* V3 (and V4 with private attributes) item or private-attribute length <= 0: Java stops
  the parse and drops what it read (an empty or NPE result) -> `invalid_item`;
* V4 attribute entry without `=`, value containing `=`, repeated key: Java throws from
  `getAttrs` -> `invalid_attribute`.

Where Java parses normally this parser does too, including bytes between the last block
(V4: the inner magic) and the trailing magic, a wrong V4 TotalLen and a wrong inner magic
(the Java parser ignores all three). Where the Java result is lossy this parser keeps
everything: two blocks with the same attribute string both yield their items (Java keeps
the last), and V4 numeric fields are read unsigned (Java reads them signed, section 10).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from wirecodecs.binary import INT32, Cursor
from wirecodecs.compression import decompress
from wirecodecs.errors import DecodeError
from wirecodecs.inlong.attributes import FORMAT, mutf8, split_lenient, split_strict, utf8

MAGIC_BYTES = 2
MIN_MESSAGE = 2 * MAGIC_BYTES
VERSIONS = (0, 1, 2, 3, 4)

# ---- V0-V3 headers (sections 4-6), after the front magic ------------------------------------
_HEADERS = {
    0: struct.Struct(">i"),  # AttrDataCnt
    1: struct.Struct(">qi"),  # CreateTime ms, AttrDataCnt
    2: struct.Struct(">qii"),  # CreateTime ms, MsgCnt, AttrDataCnt
    3: struct.Struct(">qii"),  # as V2; blocks hold record lists (section 6)
}
_UINT16 = struct.Struct(">H")  # AttrLen of a block (writeUTF's length)
_ITEMS_HEAD = struct.Struct(">iB")  # ItemsLen (incl. the Compress byte), Compress
_V2_ITEMS_HEAD = struct.Struct(">iiB")  # ItemCnt, ItemsLen, Compress

# ---- V4 inner binary message (section 7), after the front magic ------------------------------
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
V4_TRAILER = _UINT16.size + 2  # AttrLen before the attr, InnerMagic after it
EXT_PRIVATE_ATTRS = 0x01
EXT_STRING_IDS = 0x04
EXT_LF_JOINED = 0x20
ZIP_SNAPPY = 1  # (MsgType & 0xE0) >> 5; any other value: the body is used as stored


@dataclass(frozen=True, slots=True)
class Item:
    """One data item with the attributes InLong's consumers see for it."""

    index: int  # position in the message, wire order
    block: int | None  # attribute block (V0-V3)
    attr: str  # V0-V3: the block's string (V3: common + "&" + private); V4: common Attr
    attributes: dict[str, str]  # merged map (V0-V3: Sort's split; V4: as InLongMsg builds it)
    private_attr: str | None  # V3 / V4 form B: the item's own attribute string
    private_attributes: dict[str, str] | None
    block_item_count: int | None  # V2: the block's ItemCnt
    compressed: bool  # its block (V1-V3) or body (V4) was snappy
    body: bytes


@dataclass(frozen=True, slots=True)
class Message:
    version: int
    create_time_ms: int | None  # V1-V3 CreateTime; V4 DataTime * 1000; None for V0
    msg_count: int | None  # V2/V3 MsgCnt (int32), V4 MsgCnt (uint16); None for V0/V1
    msg_type: int | None  # V4 only, like the fields below
    group_id_num: int | None
    stream_id_num: int | None
    ext_field: int | None
    data_time: int | None  # epoch seconds
    unique_id: int | None
    items: list[Item]


def parse(buf, max_decompressed: int) -> Message:
    """Parse one whole message (bytes or memoryview); raises DecodeError with offsets
    relative to the start of `buf`."""
    try:
        return _parse(memoryview(buf), max_decompressed)
    except DecodeError:
        raise
    except (IndexError, ValueError, struct.error) as err:  # a check missed: still typed
        raise DecodeError(FORMAT, "invalid_message", str(err)) from None


def version_of(buf) -> int:
    """The version both magics agree on (section 2), or DecodeError."""
    size = len(buf)
    if size < MIN_MESSAGE:
        raise DecodeError(
            FORMAT, "message_too_short", f"{size} bytes: a message has at least 4", offset=0
        )
    if buf[0] != 0x0F or buf[1] not in VERSIONS:
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


def _parse(buf: memoryview, max_decompressed: int) -> Message:
    version = version_of(buf)
    cursor = Cursor(FORMAT, buf[: len(buf) - MAGIC_BYTES], MAGIC_BYTES)
    if version == 4:
        return _parse_v4(cursor, max_decompressed)
    fields = cursor.unpack(_HEADERS[version], "header")
    attr_count = fields[-1]
    create_time = fields[0] if version else None
    msg_count = fields[1] if version >= 2 else None
    if attr_count < 0:
        raise DecodeError(
            FORMAT, "length_out_of_range", f"AttrDataCnt {attr_count} is negative", offset=2
        )
    items: list[Item] = []
    for block in range(attr_count):
        _read_block(cursor, version, block, items, max_decompressed)
    return Message(version, create_time, msg_count, None, None, None, None, None, None, items)


def _read_block(
    cursor: Cursor, version: int, block: int, items: list[Item], max_decompressed: int
) -> None:
    """One attribute block (section 3): attr, [ItemCnt], ItemsLen, Compress, Data."""
    at = cursor.pos
    (attr_len,) = cursor.unpack(_UINT16, "AttrLen")
    attr = _at(at, mutf8, bytes(cursor.take(attr_len, "Attr")), f"block {block} attr")
    item_count = None
    if version == 2:
        item_count, items_len, flag = cursor.unpack(_V2_ITEMS_HEAD, "block head")
    else:
        items_len, flag = cursor.unpack(_ITEMS_HEAD, "block head")
    if items_len < 1:
        raise DecodeError(
            FORMAT,
            "length_out_of_range",
            f"block {block}: ItemsLen {items_len} (it counts the Compress byte)",
            offset=cursor.base + cursor.pos,
        )
    data_at = cursor.pos
    data = cursor.take(items_len - 1, f"block {block} data")
    compressed = flag == 1  # Java: any other flag value means raw
    if compressed:
        data = _snappy(data, max_decompressed, data_at)
    where = f"block {block}"
    if version == 3:
        pairs = _at(data_at, _v3_records, data, where)
        by_key: dict[str, dict[str, str]] = {}  # Java's group key -> its attribute map
        for body, private in pairs:
            key = f"{attr}&{private}"
            if key not in by_key:
                by_key[key] = split_lenient(key)
            items.append(
                Item(
                    len(items),
                    block,
                    key,
                    by_key[key],
                    private,
                    split_lenient(private),
                    None,
                    compressed,
                    body,
                )
            )
        return
    attributes = split_lenient(attr)
    for body in _at(data_at, item_list, data, where):
        items.append(
            Item(len(items), block, attr, attributes, None, None, item_count, compressed, body)
        )


def _at(offset: int, fn, *args):
    """Call `fn`, giving a DecodeError without a position the position `offset`."""
    try:
        return fn(*args)
    except DecodeError as err:
        if err.offset is None:
            err.offset = offset
        raise


def _snappy(data, max_decompressed: int, offset: int) -> bytes:
    return _at(offset, _snappy_block, data, max_decompressed)


def _snappy_block(data, max_decompressed: int) -> bytes:
    return decompress("snappy", data, max_decompressed, fmt=FORMAT)


def item_list(data, where: str) -> list[bytes]:
    """`(ItemLen int32, ItemData)*` filling `data` exactly (section 3)."""
    out = []
    pos = 0
    end = len(data)
    unpack = INT32.unpack_from
    while pos < end:
        if end - pos < 4:
            raise DecodeError(
                FORMAT, "truncated", f"{where}: {end - pos} stray bytes after item {len(out)}"
            )
        (size,) = unpack(data, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise DecodeError(
                FORMAT,
                "truncated" if size > 0 else "length_out_of_range",
                f"{where}: item {len(out)} length {size}, {end - pos} bytes left",
            )
        out.append(bytes(data[pos : pos + size]))
        pos += size
    return out


def _sized(data, pos: int, what: str, where: str) -> tuple[bytes, int]:
    """A positive int32 length and that many bytes (V3 and V4 form B: Java stops its
    parse at a length <= 0 and drops what it read, so that is an error here)."""
    if len(data) - pos < 4:
        raise DecodeError(FORMAT, "truncated", f"{where}: {what} length runs past the end")
    (size,) = INT32.unpack_from(data, pos)
    pos += 4
    if size <= 0:
        raise DecodeError(FORMAT, "invalid_item", f"{where}: {what} length {size} (Java stops)")
    if size > len(data) - pos:
        raise DecodeError(
            FORMAT, "truncated", f"{where}: {what} length {size}, {len(data) - pos} bytes left"
        )
    return bytes(data[pos : pos + size]), pos + size


def item_attr_pairs(data, where: str) -> tuple[list[tuple[bytes, str]], int]:
    """`(ItemLen, ItemData, IAttrLen, IAttr)*` from the start of `data` to its end."""
    pairs = []
    pos = 0
    while pos < len(data):
        body, pos = _sized(data, pos, f"item {len(pairs)}", where)
        raw, pos = _sized(data, pos, f"item {len(pairs)} private attr", where)
        pairs.append((body, utf8(raw, f"{where} item {len(pairs)} private attr")))
    return pairs, pos


def _v3_records(data, where: str) -> list[tuple[bytes, str]]:
    """V3 record list (section 6): RecordLen int32, then item/private-attr pairs that fill
    exactly RecordLen bytes."""
    pairs: list[tuple[bytes, str]] = []
    pos = 0
    end = len(data)
    while pos < end:
        if end - pos < 4:
            raise DecodeError(FORMAT, "truncated", f"{where}: {end - pos} stray bytes")
        (size,) = INT32.unpack_from(data, pos)
        pos += 4
        if size <= 0 or size > end - pos:
            raise DecodeError(
                FORMAT,
                "truncated" if size > 0 else "invalid_item",
                f"{where}: RecordLen {size}, {end - pos} bytes left",
            )
        record, _ = item_attr_pairs(data[pos : pos + size], f"{where} record at {pos - 4}")
        pairs.extend(record)
        pos += size
    return pairs


def _parse_v4(cursor: Cursor, max_decompressed: int) -> Message:
    """V4 (section 7): the DataProxy binary message between the magics."""
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
    attr = _at(body_at + body_len + 2, utf8, raw_attr, "common attr")
    common = _at(body_at + body_len + 2, split_strict, attr, "common attr") if attr else {}
    common["dt"] = str(data_time * 1000)
    if not ext & EXT_STRING_IDS:
        common["groupId"] = str(group_num)
        common["streamId"] = str(stream_num)
    common["cnt"] = str(msg_count)
    compressed = (msg_type & 0xE0) >> 5 == ZIP_SNAPPY
    if compressed:
        body = _snappy(body, max_decompressed, body_at)
    items: list[Item] = []
    if ext & EXT_PRIVATE_ATTRS:
        pairs, _ = _at(body_at, item_attr_pairs, body, "V4 body")
        for body_bytes, private in pairs:
            own = _at(body_at, split_strict, private, f"item {len(items)} private attr")
            items.append(
                Item(
                    len(items),
                    None,
                    attr,
                    {**own, **common},
                    private,
                    own,
                    None,
                    compressed,
                    body_bytes,
                )
            )
    else:
        for body_bytes in _at(body_at, item_list, body, "V4 body"):
            items.append(
                Item(len(items), None, attr, common, None, None, None, compressed, body_bytes)
            )
    return Message(
        4,
        data_time * 1000,
        msg_count,
        msg_type,
        group_num,
        stream_num,
        ext,
        data_time,
        unique_id,
        items,
    )

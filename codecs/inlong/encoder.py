"""InLongMsg encoder (V0-V4), written from docs/inlong.md, "Byte layout", to build test
inputs and sample days.

V1-V3 follow Java's `InLongMsg` builder byte for byte when compression is off (one block
per distinct attribute string, first-insertion order; "V0-V3 blocks"). Snappy output comes
from cramjam, so compressed bytes may differ from snappy-java's while decoding the same.
V0, which Java cannot build, is V1 without CreateTime. V4 wraps the SDK's binary message
("V4 message"); its flags, ids and the LF-joined form are the caller's to choose.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import cramjam

from wirecodecs.inlong.decoder import PREFIX
from wirecodecs.inlong.message import (
    EXT_PRIVATE_ATTRS,
    INNER_MAGIC,
    MAGIC_LEAD,
    V4_HEADER,
    ZIP_SHIFT,
    ZIP_SNAPPY,
)

_TYPE_BITS = (1 << ZIP_SHIFT) - 1  # MsgType below its compression bits
_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")
_HEADERS = {0: struct.Struct(">i"), 1: struct.Struct(">qi"), 2: struct.Struct(">qii")}


def magic(version: int) -> bytes:
    return bytes((MAGIC_LEAD, version))


def mutf8(text: str) -> bytes:
    """`DataOutput.writeUTF`: uint16 length, then modified UTF-8 (C0 80 for U+0000,
    surrogate pairs as two 3-byte sequences)."""
    units = text.encode("utf-16-be", "surrogatepass")
    chars = "".join(chr(int.from_bytes(units[i : i + 2], "big")) for i in range(0, len(units), 2))
    raw = chars.encode("utf-8", "surrogatepass").replace(b"\x00", b"\xc0\x80")
    if len(raw) > 0xFFFF:
        raise ValueError(f"attribute of {len(raw)} bytes: writeUTF allows 65535")
    return _U16.pack(len(raw)) + raw


def item_list(items: Iterable[bytes]) -> bytes:
    return b"".join(_I32.pack(len(item)) + item for item in items)


def pair_list(pairs: Iterable[tuple[bytes, str]]) -> bytes:
    """`(ItemLen, Item, IAttrLen, IAttr)*`: V3 record bodies and the V4 body form B."""
    out = []
    for item, attr in pairs:
        raw = attr.encode()
        out += [_I32.pack(len(item)), item, _I32.pack(len(raw)), raw]
    return b"".join(out)


def _block_data(data: bytes, compress: bool) -> bytes:
    """ItemsLen (counting the Compress byte), Compress, Data."""
    if compress:
        data = bytes(cramjam.snappy.compress_raw(data))
    return _I32.pack(len(data) + 1) + bytes((int(compress),)) + data


def encode_blocks(
    version: int,
    blocks: Sequence[tuple[str, Sequence[bytes]]],
    create_time_ms: int = 0,
    *,
    compress: bool = False,
) -> bytes:
    """A V0, V1 or V2 message of `(attr, items)` blocks; V2's MsgCnt counts all items."""
    if version not in _HEADERS:
        raise ValueError(f"encode_blocks builds V0-V2, not V{version}")
    total = sum(len(items) for _, items in blocks)
    fields = {0: (len(blocks),), 1: (create_time_ms, len(blocks))}.get(
        version, (create_time_ms, total, len(blocks))
    )
    out = [magic(version), _HEADERS[version].pack(*fields)]
    for attr, items in blocks:
        out.append(mutf8(attr))
        if version == 2:
            out.append(_I32.pack(len(items)))
        out.append(_block_data(item_list(items), compress))
    out.append(magic(version))
    return b"".join(out)


def encode_v3(
    blocks: Sequence[tuple[str, Sequence[Sequence[tuple[bytes, str]]]]],
    create_time_ms: int = 0,
    *,
    compress: bool = False,
) -> bytes:
    """A V3 message: `(common attr, records)` blocks, each record a list of (item,
    private attr) pairs framed by its RecordLen (an empty record is what Java's
    `addMsg(attr, emptyBuffer)` writes); MsgCnt counts as Java's builder does, one per
    record plus the extra pairs of a record holding several."""
    total = sum(max(len(record), 1) for _, records in blocks for record in records)
    out = [magic(3), _HEADERS[2].pack(create_time_ms, total, len(blocks))]
    for attr, records in blocks:
        data = b"".join(_I32.pack(len(body)) + body for body in map(pair_list, records))
        out += [mutf8(attr), _block_data(data, compress)]
    out.append(magic(3))
    return b"".join(out)


def encode_v4(
    items: Sequence[bytes],
    attr: str = "",
    *,
    private: Sequence[str] | None = None,
    group_id_num: int = 0,
    stream_id_num: int = 0,
    ext_field: int = 0,
    data_time: int = 0,
    unique_id: int = 0,
    msg_count: int | None = None,
    compress: bool = False,
    msg_type: int = 7,
) -> bytes:
    """A V4 message around an SDK binary message. `private` (one string per item) sets
    ExtField bit 0 and body form B; `compress` snappy-compresses the body and sets MsgType
    bit 5; MsgCnt defaults to the item count."""
    if private is not None:
        if len(private) != len(items):
            raise ValueError("one private attribute string per item")
        ext_field |= EXT_PRIVATE_ATTRS
        body = pair_list(zip(items, private, strict=True))
    else:
        body = item_list(items)
    if compress:
        body = bytes(cramjam.snappy.compress_raw(body))
        msg_type = (msg_type & _TYPE_BITS) | (ZIP_SNAPPY << ZIP_SHIFT)
    raw_attr = attr.encode()
    header = V4_HEADER.pack(
        25 + len(body) + len(raw_attr),
        msg_type,
        group_id_num,
        stream_id_num,
        ext_field,
        data_time,
        len(items) if msg_count is None else msg_count,
        unique_id,
        len(body),
    )
    trailer = _U16.pack(len(raw_attr)) + raw_attr + _U16.pack(INNER_MAGIC)
    return magic(4) + header + body + trailer + magic(4)


def length_prefixed(messages: Iterable[bytes]) -> bytes:
    """Messages back to back, each after its 4-byte big-endian length."""
    return b"".join(PREFIX.pack(len(message)) + message for message in messages)

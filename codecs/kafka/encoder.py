"""Kafka log-entry writer: message format v0/v1 (MessageSet) and v2 (RecordBatch).

Writes the bytes a broker keeps in a segment, every codec framed the way Java Kafka frames
it, so that sample days, round-trip tests and the benchmark exercise what lands in
production. The decoder never imports this module. Compression lives here, not in a shared
module, because the framings (xerial snappy, LZ4 with Kafka 0.8's broken header checksum)
are Kafka's own.
"""

from __future__ import annotations

import gzip
import itertools
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import cramjam
import lz4.frame
import zstandard
from crc32c import crc32c

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
LEGACY_CODECS = ("none", "gzip", "snappy", "lz4")  # zstd exists only in magic 2
SNAPPY_FRAMINGS = ("xerial", "raw")

TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40
CONTROL_TYPES = {"abort": 0, "commit": 1}

_ENTRY_PREFIX = struct.Struct(">qi")  # offset / baseOffset, size of what follows
_MAGIC_AT = 16  # every format has its magic here (docs/kafka.md §2.2)
_CRC32 = struct.Struct(">I")  # v0/v1 message CRC, between the entry prefix and the magic
_LEGACY_V0 = struct.Struct(">bb")  # magic, attributes
_LEGACY_V1 = struct.Struct(">bbq")  # magic, attributes, timestamp
_V2_HEAD = struct.Struct(">qiibI")  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc
_V2_CRC_COVERED = struct.Struct(
    ">h"  # attributes
    "i"  # lastOffsetDelta
    "q"  # baseTimestamp
    "q"  # maxTimestamp
    "q"  # producerId
    "h"  # producerEpoch
    "i"  # baseSequence
    "i"  # recordsCount
)
_INT32 = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_END_TXN_VALUE = struct.Struct(">hi")  # version, coordinatorEpoch
V2_HEADER_BYTES = _V2_HEAD.size + _V2_CRC_COVERED.size  # 61: the records section starts here

_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)  # magic, version, compatible
_XERIAL_BLOCK = 32 * 1024  # snappy-java SnappyOutputStream.DEFAULT_BLOCK_SIZE
_LZ4_KAFKA_HEADER = bytes.fromhex("04224d18604082")  # magic, FLG 0x60, BD 64 KiB, HC
# Kafka 0.8/0.9 hashed the magic too: xxh32(04 22 4D 18 60 40) >> 8 & 0xFF
# (docs/kafka.md §2.9).
_LZ4_BROKEN_HC = 0x1A


@dataclass(frozen=True)
class Record:
    """One record as a producer sends it.

    `offset_delta` defaults to the record's position in its batch; set it to leave gaps
    (compaction). `timestamp` is epoch ms (-1 = none) and is not written by magic 0;
    `headers` exist only in magic 2.
    """

    key: bytes | None = None
    value: bytes | None = None
    timestamp: int = -1
    headers: tuple[tuple[str, bytes | None], ...] = ()
    offset_delta: int | None = None


@dataclass(frozen=True)
class MessageSet:
    """Magic 0/1 messages: one log entry each, or one compressed wrapper entry.

    Offsets are `base_offset + offset_delta`. A compressed wrapper carries the offset of its
    last inner message; inner offsets are absolute in magic 0 and relative in magic 1.
    `log_append_time` stamps the broker time (magic 1), as topics with
    message.timestamp.type=LogAppendTime do.
    """

    records: Sequence[Record]
    magic: int = 1
    base_offset: int = 0
    codec: str = "none"
    log_append_time: int | None = None
    snappy_framing: str = "xerial"


@dataclass(frozen=True)
class RecordBatch:
    """A magic 2 batch. Defaults describe a plain producer; see `control_batch` for markers.

    `last_offset_delta` defaults to the last record's delta (compaction keeps a larger one).
    With `delete_horizon_ms` the base timestamp holds the horizon and deltas count from it.
    """

    records: Sequence[Record]
    base_offset: int = 0
    codec: str = "none"
    partition_leader_epoch: int = 0
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    control: bool = False
    log_append_time: int | None = None
    delete_horizon_ms: int | None = None
    last_offset_delta: int | None = None
    snappy_framing: str = "xerial"


def control_batch(
    marker: str,
    *,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    partition_leader_epoch: int = 0,
) -> RecordBatch:
    """The COMMIT or ABORT marker batch a transaction coordinator writes for a producer."""
    key = _CONTROL_KEY.pack(0, CONTROL_TYPES[marker])
    value = _END_TXN_VALUE.pack(0, coordinator_epoch)
    return RecordBatch(
        [Record(key, value, timestamp)],
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
    )


def encode(entry: MessageSet | RecordBatch) -> bytes:
    """The log entries for one message set or batch, exactly as a segment stores them."""
    if isinstance(entry, RecordBatch):
        return _encode_v2(entry)
    return _encode_legacy(entry)


def encode_log(entries: Iterable[MessageSet | RecordBatch]) -> bytes:
    """A segment body: the entries concatenated, with no header or padding
    (docs/kafka.md §2.10)."""
    return b"".join(encode(entry) for entry in entries)


def crc_field(entry: bytes) -> slice:
    """Where an encoded entry stores its CRC: after the magic in v2, before it in v0/v1.
    Either way the CRC covers everything from the end of this field to the entry's end."""
    if entry[_MAGIC_AT] == 2:
        return slice(_V2_HEAD.size - _CRC32.size, _V2_HEAD.size)
    return slice(_ENTRY_PREFIX.size, _ENTRY_PREFIX.size + _CRC32.size)


def reseal(entry: bytes) -> bytes:
    """`entry` with its CRC recomputed, as a broker does after stamping LogAppendTime.

    Lets callers edit an encoded entry (e.g. plant an undecodable payload) and still
    present a checksum that matches.
    """
    out = bytearray(entry)
    where = crc_field(entry)
    checksum = crc32c if entry[_MAGIC_AT] == 2 else zlib.crc32
    out[where] = _CRC32.pack(checksum(out[where.stop :]))
    return bytes(out)


def compress(data: bytes, codec: str, *, magic: int = 2, snappy_framing: str = "xerial") -> bytes:
    """`data` compressed the way Java Kafka writes codec `codec` for message format `magic`."""
    if codec == "none":
        return data
    if codec == "gzip":
        return gzip.compress(data, mtime=0)  # fixed header with MTIME 0, as GZIPOutputStream
    if codec == "snappy":
        return _snappy(data, snappy_framing)
    if codec == "lz4":
        return _lz4(data, broken_header_checksum=magic == 0)
    if codec == "zstd":
        # zstd-jni's streaming writer declares no content size; readers must cope.
        return zstandard.ZstdCompressor(write_content_size=False).compress(data)
    raise ValueError(f"unknown codec {codec!r}; known: {', '.join(CODECS)}")


def _snappy(data: bytes, framing: str) -> bytes:
    if framing == "raw":
        return bytes(cramjam.snappy.compress_raw(data))
    if framing != "xerial":
        raise ValueError(f"unknown snappy framing {framing!r}; known: {SNAPPY_FRAMINGS}")
    parts = [_XERIAL_HEADER]
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
        parts += (_INT32.pack(len(block)), block)
    return b"".join(parts)


def _lz4(data: bytes, *, broken_header_checksum: bool) -> bytes:
    """An LZ4 frame as Kafka's Lz4BlockOutputStream writes it: 64 KiB independent blocks."""
    frame = lz4.frame.compress(
        data,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    if frame[:7] != _LZ4_KAFKA_HEADER:
        raise RuntimeError(f"lz4 wrote an unexpected frame header {frame[:7].hex()}")
    if broken_header_checksum:
        return frame[:6] + bytes([_LZ4_BROKEN_HC]) + frame[7:]
    return frame


def _sized(data: bytes | None) -> bytes:
    """int32 length (-1 for null) then the bytes: v0/v1 keys and values."""
    if data is None:
        return _INT32.pack(-1)
    return _INT32.pack(len(data)) + data


def _legacy_message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    """One v0/v1 log entry; its CRC-32 covers magic to the end of the value."""
    if magic == 0:
        head = _LEGACY_V0.pack(magic, attributes)
    else:
        head = _LEGACY_V1.pack(magic, attributes, timestamp)
    body = head + _sized(key) + _sized(value)
    size = _CRC32.size + len(body)
    return _ENTRY_PREFIX.pack(offset, size) + _CRC32.pack(zlib.crc32(body)) + body


def _encode_legacy(ms: MessageSet) -> bytes:
    if ms.magic not in (0, 1):
        raise ValueError(f"MessageSet magic must be 0 or 1, not {ms.magic}")
    if ms.codec not in LEGACY_CODECS:
        raise ValueError(f"codec {ms.codec!r} is not valid for magic {ms.magic}")
    if not ms.records:
        raise ValueError("a message set needs at least one record")
    if any(record.headers for record in ms.records):
        raise ValueError("magic 0/1 messages cannot carry headers")
    append_time = ms.log_append_time if ms.magic == 1 else None
    deltas = _deltas(ms.records)
    if ms.codec == "none":
        attributes = TIMESTAMP_TYPE_BIT if append_time is not None else 0
        return b"".join(
            _legacy_message(
                ms.base_offset + delta,
                ms.magic,
                attributes,
                record.timestamp if append_time is None else append_time,
                record.key,
                record.value,
            )
            for record, delta in zip(ms.records, deltas, strict=True)
        )
    # Inner messages are written by the producer (CreateTime); only the wrapper is stamped.
    inner_base = ms.base_offset if ms.magic == 0 else 0
    inner = b"".join(
        _legacy_message(
            inner_base + delta,
            ms.magic,
            0,
            record.timestamp,
            record.key,
            record.value,
        )
        for record, delta in zip(ms.records, deltas, strict=True)
    )
    attributes = CODECS[ms.codec]
    if append_time is not None:
        attributes |= TIMESTAMP_TYPE_BIT
        wrapper_time = append_time
    else:
        wrapper_time = max(record.timestamp for record in ms.records)
    payload = compress(inner, ms.codec, magic=ms.magic, snappy_framing=ms.snappy_framing)
    return _legacy_message(
        ms.base_offset + deltas[-1], ms.magic, attributes, wrapper_time, None, payload
    )


def _deltas(records: Sequence[Record]) -> list[int]:
    deltas = [i if r.offset_delta is None else r.offset_delta for i, r in enumerate(records)]
    if any(b <= a for a, b in itertools.pairwise(deltas)) or (deltas and deltas[0] < 0):
        raise ValueError(f"offset deltas must be non-negative and increasing: {deltas}")
    return deltas


def _varint(value: int) -> bytes:
    """Zig-zag base-128 varint/varlong (protobuf sint64), as v2 records use."""
    unsigned = (value << 1) ^ (value >> 63)
    out = bytearray()
    while unsigned > 0x7F:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


def _varint_sized(data: bytes | None) -> bytes:
    if data is None:
        return _varint(-1)
    return _varint(len(data)) + data


def _v2_record(record: Record, offset_delta: int, base_timestamp: int) -> bytes:
    parts = [
        b"\x00",  # attributes, unused
        _varint(record.timestamp - base_timestamp),
        _varint(offset_delta),
        _varint_sized(record.key),
        _varint_sized(record.value),
        _varint(len(record.headers)),
    ]
    for name, value in record.headers:
        parts += (_varint_sized(name.encode("utf-8")), _varint_sized(value))
    body = b"".join(parts)
    return _varint(len(body)) + body


def _encode_v2(batch: RecordBatch) -> bytes:
    if batch.codec not in CODECS:
        raise ValueError(f"unknown codec {batch.codec!r}; known: {', '.join(CODECS)}")
    records = batch.records
    deltas = _deltas(records)
    if batch.delete_horizon_ms is not None:
        base_timestamp = batch.delete_horizon_ms
    else:
        base_timestamp = records[0].timestamp if records else -1
    if batch.log_append_time is not None:
        max_timestamp = batch.log_append_time
    else:
        max_timestamp = max((record.timestamp for record in records), default=-1)
    last_delta = batch.last_offset_delta
    if last_delta is None:
        last_delta = deltas[-1] if deltas else 0
    attributes = CODECS[batch.codec]
    for flag, bit in (
        (batch.log_append_time is not None, TIMESTAMP_TYPE_BIT),
        (batch.transactional, TRANSACTIONAL_BIT),
        (batch.control, CONTROL_BIT),
        (batch.delete_horizon_ms is not None, DELETE_HORIZON_BIT),
    ):
        if flag:
            attributes |= bit
    section = b"".join(
        _v2_record(record, delta, base_timestamp)
        for record, delta in zip(records, deltas, strict=True)
    )
    covered = _V2_CRC_COVERED.pack(
        attributes,
        last_delta,
        base_timestamp,
        max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        len(records),
    ) + compress(section, batch.codec, snappy_framing=batch.snappy_framing)
    head = _V2_HEAD.pack(
        batch.base_offset,
        _V2_HEAD.size - _ENTRY_PREFIX.size + len(covered),  # batchLength: bytes after it
        batch.partition_leader_epoch,
        2,
        crc32c(covered),
    )
    return head + covered

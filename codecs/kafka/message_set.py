"""Reader of a v0/v1 log entry (magic 0 or 1): one message, or a compressed wrapper whose
value is a set of inner messages (docs/kafka.md §2.3, §2.4).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from wirecodecs.binary import INT32, Cursor, wrap_int64
from wirecodecs.checksums import crc32_matches
from wirecodecs.compression import decompress
from wirecodecs.errors import DecodeError
from wirecodecs.kafka.columns import EntryColumns, RecordCrc, Run
from wirecodecs.kafka.entry import (
    CODEC_MASK,
    CODECS,
    DECOMPRESS_AS,
    FORMAT,
    LOG_APPEND_TIME_BIT,
    LOG_OVERHEAD,
    PREFIX,
    TIMESTAMP_TYPES,
)
from wirecodecs.kafka.options import KafkaOptions

# ---- the message (docs/kafka.md §2.3): the entry prefix, then these fields --------------------

_V0 = struct.Struct(
    ">q"  # offset (a wrapper's: the offset of its last inner message)
    "i"  # messageSize
    "I"  # crc: CRC-32 of magic .. end of value
    "b"  # magic = 0
    "b"  # attributes: codec bits 0-2, timestampType bit 3 (v1)
    "i"  # keyLength (negative = null)
)
_V1 = struct.Struct(">qiIbb" + "q" + "i")  # as v0, with timestamp int64 before the key
_CRC_FROM = struct.calcsize(">qiI")  # the CRC covers magic onwards
_CODECS = CODECS[:4]  # none, gzip, snappy, lz4: zstd exists only in v2
# Attribute bits a v0/v1 entry never sets: 4-7 (unused) and 2 (set only by codec ids 4-7).
INVALID_ATTRIBUTES = 0xF4


class _Message(NamedTuple):
    """One v0/v1 message: a log entry of its own, or inside a wrapper's value."""

    offset: int
    crc_valid: bool
    magic: int
    attributes: int
    timestamp: int | None  # None for magic 0
    key: bytes | None
    value: bytes | None


def _message(cursor: Cursor) -> _Message:
    """One v0/v1 entry at the cursor. Any negative key/value length is null (Java); the
    message must end exactly where its size says."""
    start = cursor.pos
    (magic,) = cursor.unpack(PREFIX, "message header")[3:]
    cursor.pos = start
    if magic not in (0, 1):
        raise DecodeError(FORMAT, "unknown_magic", f"inner message magic {magic}")
    header = _V1 if magic else _V0
    if magic:
        offset, size, crc, _, attributes, timestamp, key_size = cursor.unpack(header, "message")
    else:
        offset, size, crc, _, attributes, key_size = cursor.unpack(header, "message")
        timestamp = None
    end = start + LOG_OVERHEAD + size
    if end < cursor.pos:
        raise DecodeError(
            FORMAT, "record_size_too_small", f"v{magic} message size {size} is too small"
        )
    key = cursor.sized_bytes(key_size, "key")
    (value_size,) = cursor.unpack(INT32, "value length")
    value = cursor.sized_bytes(value_size, "value")
    if cursor.pos != end:
        raise DecodeError(
            FORMAT,
            "record_size_mismatch",
            f"message size says {size} bytes, its fields take {cursor.pos - start - LOG_OVERHEAD}",
        )
    crc_valid = crc32_matches(cursor.buf[start + _CRC_FROM : end], crc)
    return _Message(
        offset,
        crc_valid,
        magic,
        attributes,
        timestamp,
        None if key is None else bytes(key),
        None if value is None else bytes(value),
    )


def read_message_set(entry: memoryview, start: int, opts: KafkaOptions) -> Run:
    """The v0/v1 entry `entry` found at file offset `start`: a message, or a compressed
    wrapper whose value is an inner message set."""
    outer = _message(Cursor(FORMAT, entry, base=start))
    magic = outer.magic
    codec = outer.attributes & CODEC_MASK
    if codec >= len(_CODECS):
        raise DecodeError(FORMAT, "unknown_codec", f"codec id {codec} is invalid for v{magic}")
    log_append = magic == 1 and bool(outer.attributes & LOG_APPEND_TIME_BIT)
    columns = EntryColumns(
        byte_offset=start,
        crc_valid=outer.crc_valid,
        magic=magic,
        compression=CODECS[codec],
        timestamp_type=TIMESTAMP_TYPES[log_append] if magic else None,
        batch_base_offset=outer.offset,
        batch_last_offset=outer.offset,
    )
    if codec == 0:
        run = Run(columns, outer.offset, outer.timestamp, False)
        run.start_lists()
        run.offset_deltas.append(0)
        run.ts_deltas.append(0)
        run.keys.append(outer.key)
        run.values.append(outer.value)
        run.data_bytes = len(entry)
        return run
    if outer.value is None:
        raise DecodeError(FORMAT, "invalid_record", "compressed wrapper with a null value")
    data = decompress(
        DECOMPRESS_AS[codec],
        outer.value,
        opts.max_decompressed_bytes,
        fmt=FORMAT,
        legacy_lz4=magic == 0,
    )
    inner = Cursor(FORMAT, data)
    messages = []
    while inner.remaining:
        message = _message(inner)
        if message.magic != magic:  # Java's deep iterator with ensureMatchingMagic
            raise DecodeError(
                FORMAT, "invalid_record", f"inner magic {message.magic} in a v{magic} wrapper"
            )
        if message.attributes & CODEC_MASK:
            raise DecodeError(FORMAT, "invalid_record", "inner messages must not be compressed")
        messages.append(message)
    if not messages:
        raise DecodeError(FORMAT, "invalid_record", "compressed wrapper with no inner messages")
    base = 0  # v0: inner offsets are absolute
    if magic == 1 and outer.offset != 0:  # v1: relative; wrapper offset 0 means base 0
        last_inner = messages[-1].offset
        if outer.offset < last_inner:
            raise DecodeError(
                FORMAT,
                "invalid_record",
                f"wrapper offset {outer.offset} is below the last inner offset {last_inner}",
            )
        base = wrap_int64(outer.offset - last_inner)
    if magic == 0:
        run = Run(columns, base, None, False)
    elif log_append:  # inner messages take the wrapper's append time
        run = Run(columns, base, outer.timestamp, False)
    else:
        run = Run(columns, base, 0, True)
    run.start_lists()
    for row, message in enumerate(messages):
        run.offset_deltas.append(message.offset)
        run.ts_deltas.append(message.timestamp or 0)
        run.keys.append(message.key)
        run.values.append(message.value)
        run.record_crcs.append(RecordCrc(row, message.crc_valid))
    run.data_bytes = len(data)
    return run

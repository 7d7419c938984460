"""The head of a Kafka log entry: what the walk, both readers and the index read first.

Every entry starts with the same 17-byte prefix (docs/kafka.md §2.2) whose magic byte says
how the rest reads: a v0/v1 message (`message_set.py`) or a v2 record batch
(`record_batch.py`, whose fixed 61-byte header is here because the walk and the index
read it before, or without, decoding the batch).
"""

from __future__ import annotations

import struct

from wirecodecs.binary import INT8, INT32

FORMAT = "kafka"

# ---- the prefix every entry starts with (docs/kafka.md §2.2) ----------------------------------

LOG_OVERHEAD = 12  # offset int64 + size int32: an entry occupies 12 + size bytes
PREFIX = struct.Struct(
    ">q"  # offset (v0/v1) | baseOffset (v2)
    "i"  # messageSize | batchLength: bytes after this field
    "i"  # crc (v0/v1) | partitionLeaderEpoch (v2): read magic first
    "b"  # magic
)
OFFSET = struct.Struct(">q")
SIZE_AT = OFFSET.size
MAGIC_AT = struct.calcsize(">qii")
# The smallest v0 message (Java's RECORD_OVERHEAD_V0): a smaller size cannot be walked past.
MIN_ENTRY_SIZE = 14

# ---- the v2 record batch header (docs/kafka.md §2.5) ------------------------------------------

V2_HEADER = struct.Struct(
    ">q"  # baseOffset
    "i"  # batchLength
    "i"  # partitionLeaderEpoch (not covered by the CRC)
    "b"  # magic = 2
    "I"  # crc: CRC-32C of attributes .. end of batch
    "h"  # attributes (docs/kafka.md §2.6)
    "i"  # lastOffsetDelta
    "q"  # baseTimestamp: first timestamp, or the delete horizon
    "q"  # maxTimestamp: the append time under LogAppendTime
    "q"  # producerId
    "h"  # producerEpoch
    "i"  # baseSequence
    "i"  # recordsCount
)
V2_CRC_FROM = struct.calcsize(">qiibI")  # the CRC covers attributes onwards
LAST_OFFSET_DELTA_AT = struct.calcsize(">qiibIh")

# ---- attribute bits both message formats share (docs/kafka.md §2.3, §2.6) ---------------------

CODEC_MASK = 0x07  # bits 0-2: the codec id
LOG_APPEND_TIME_BIT = 0x08  # bit 3: timestampType LogAppendTime (v1, v2)
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")  # codec id -> `compression` column value
TIMESTAMP_TYPES = ("create_time", "log_append_time")  # by LOG_APPEND_TIME_BIT
DECOMPRESS_AS = {1: "gzip", 2: "snappy_xerial", 3: "lz4", 4: "zstd"}  # codec id -> framing


def magic_of(entry) -> int:
    """The magic byte of the entry (or entry head) `entry`."""
    return INT8.unpack_from(entry, MAGIC_AT)[0]


def last_offset_of(head) -> int:
    """The offset of the last record of the entry starting `head`: a v2 batch's
    baseOffset + lastOffsetDelta (the delta kept even when compaction removed the last
    records), a v0/v1 entry's own offset (a compressed wrapper's is its last message's)."""
    (base,) = OFFSET.unpack_from(head)
    if magic_of(head) == 2:
        return base + INT32.unpack_from(head, LAST_OFFSET_DELTA_AT)[0]
    return base

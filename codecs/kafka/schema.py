"""Row schema of decoded Kafka records: one row per record, control records included.

Control records (transaction markers) are rows with `is_control` true so that counts
reconcile with the log; consumers of application data filter them out.
"""

import pyarrow as pa

from wirecodecs.rows import lineage_fields

HEADER_TYPE = pa.list_(
    pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])
)

KAFKA_SCHEMA = pa.schema(
    [
        # crc_valid: the log entry's own checksum (v2 batch CRC-32C, v0/v1 message or
        # wrapper CRC-32); event_time: the record timestamp, null when absent (-1, magic 0).
        *lineage_fields("crc_valid"),
        pa.field("topic", pa.string()),  # from a `<topic>-<partition>/` folder, else null
        pa.field("partition", pa.int32()),
        pa.field("magic", pa.int8(), nullable=False),
        pa.field("compression", pa.string(), nullable=False),  # none|gzip|snappy|lz4|zstd
        pa.field("timestamp_type", pa.string()),  # create_time|log_append_time, null magic 0
        pa.field("batch_base_offset", pa.int64(), nullable=False),  # v0/v1: the entry offset
        pa.field("batch_last_offset", pa.int64(), nullable=False),
        pa.field("partition_leader_epoch", pa.int32()),  # v2 only
        pa.field("producer_id", pa.int64()),  # v2 only
        pa.field("producer_epoch", pa.int16()),  # v2 only
        pa.field("is_transactional", pa.bool_(), nullable=False),
        pa.field("is_control", pa.bool_(), nullable=False),
        pa.field("delete_horizon_ms", pa.int64()),  # v2 with attribute bit 6, else null
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("sequence", pa.int32()),  # v2 baseSequence + delta (int32 wrap), null if none
        pa.field("timestamp_ms", pa.int64()),  # as the log reports it; null for magic 0
        pa.field("record_crc_valid", pa.bool_()),  # inner message of a v0/v1 wrapper, else null
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", HEADER_TYPE, nullable=False),
        pa.field("control_type", pa.string()),  # abort|commit|leader_change|...|unknown
        pa.field("coordinator_epoch", pa.int32()),  # ABORT/COMMIT markers only
    ]
)

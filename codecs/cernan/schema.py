"""Row schemas of decoded cernan dumps: `records` (main table) and `packets` (companion).

records: one row per Avro datum of an ok packet. The datum is `record_json` (JSON that
keeps every value; schemas vary packet to packet) unless the option `datum_schema_file`
names the expected schema (.avsc): then it is `record`, a typed column mapped from Avro by
`arrow_type`, and `schema_for(options)` gives the table's schema.
packets: one row per frame, errors and empty containers included (docs/cernan.md, "Tables").
Unsigned 64-bit ids are decimal(20,0): Spark has no unsigned long and refuses Arrow uint64.
"""

from __future__ import annotations

import pyarrow as pa

from wirecodecs.cernan.arrow_types import arrow_type, load_datum_schema
from wirecodecs.cernan.options import CernanOptions
from wirecodecs.rows import lineage_fields

PACKETS = "packets"  # the companion table's name (WireFormat.tables)

U64 = pa.decimal128(20, 0)
KV_TYPE = pa.list_(
    pa.struct(
        [
            pa.field("key", pa.string()),  # null when the key is not UTF-8
            pa.field("key_bytes", pa.binary(), nullable=False),
            pa.field("value", pa.binary(), nullable=False),
        ]
    )
)

# Columns every record row shares with its packet (joins packets on source_file + packet_index).
RECORD_PACKET_FIELDS = [
    *lineage_fields(None),  # byte_offset: the packet's length prefix; event_time: see docs
    pa.field("packet_index", pa.int64(), nullable=False),
    pa.field("id", U64, nullable=False),
    pa.field("shard_by", U64, nullable=False),
    pa.field("schema_fingerprint", pa.string(), nullable=False),  # CRC-64-AVRO of the PCF
    pa.field("schema_full_name", pa.string(), nullable=False),  # or the type if unnamed
    pa.field("block_index", pa.int32(), nullable=False),
    pa.field("record_index_in_block", pa.int64(), nullable=False),
    pa.field("record_index", pa.int64(), nullable=False),  # within the packet
]
RECORDS_SCHEMA = pa.schema(
    [*RECORD_PACKET_FIELDS, pa.field("record_json", pa.string(), nullable=False)]
)

PACKETS_SCHEMA = pa.schema(
    [
        *lineage_fields(None),  # event_time: earliest event_time of the packet's records
        pa.field("packet_index", pa.int64(), nullable=False),
        pa.field("packet_length", pa.int64(), nullable=False),  # declared, excludes its 4 bytes
        pa.field("complete", pa.bool_(), nullable=False),  # false: cut by the end of the file
        pa.field("resynced", pa.bool_(), nullable=False),  # start found by the resync scan
        pa.field("status", pa.string(), nullable=False),  # ok | error
        pa.field("error_stage", pa.string()),  # framing|header|kv|avro_header|avro_block
        pa.field("error_code", pa.string()),
        pa.field("error_detail", pa.string()),
        pa.field("warnings", pa.list_(pa.string()), nullable=False),
        pa.field("version", pa.int64()),  # u32 as sent (errors keep 0, 3, 2^32-1 ...)
        pa.field("control", pa.int64()),
        pa.field("sync", pa.bool_()),
        pa.field("id", U64),
        pa.field("id_hex", pa.string()),
        pa.field("shard_by", U64),
        pa.field("shard_by_hex", pa.string()),
        pa.field("cernan_kafka_key", pa.string()),  # what cernan's Kafka sink keys by
        pa.field("kv", KV_TYPE),  # v2 pairs in wire order; null for v1
        pa.field("kv_map", pa.map_(pa.string(), pa.string())),  # last wins; null for v1
        pa.field("kv_section_length", pa.int64()),
        pa.field("avro_offset", pa.int64()),  # file offset of the container
        pa.field("avro_length", pa.int64()),
        pa.field("avro_sha256", pa.string()),  # of the container bytes
        pa.field("codec", pa.string()),  # null | deflate | snappy
        pa.field("schema_json", pa.string()),  # raw avro.schema
        pa.field("schema_full_name", pa.string()),
        pa.field("schema_fingerprint", pa.string()),
        pa.field("ocf_sync", pa.binary()),
        pa.field("ocf_user_metadata", pa.map_(pa.string(), pa.binary())),
        pa.field("block_count", pa.int64()),  # whole good blocks
        pa.field("block_record_counts", pa.list_(pa.int64())),  # declared, per good block
        pa.field("declared_record_count", pa.int64()),  # their sum
        pa.field("record_count", pa.int64(), nullable=False),  # rows in records (0 on error)
        pa.field("records_before_error", pa.int64()),  # block errors: a salvage could keep
    ]
)


def records_schema(datum_type: pa.DataType | None) -> pa.Schema:
    """The records table: `record_json`, or `record` typed as `datum_type` when given."""
    if datum_type is None:
        return RECORDS_SCHEMA
    return pa.schema([*RECORD_PACKET_FIELDS, pa.field("record", datum_type)])


def schema_for(options: CernanOptions) -> pa.Schema:
    """The records table's schema for a run's options (`WireFormat.schema_for`)."""
    path = options.datum_schema_file
    if not path:
        return RECORDS_SCHEMA
    return records_schema(arrow_type(load_datum_schema(path))[0])

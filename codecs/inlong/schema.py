"""Row schema of decoded InLongMsg data: one row per data item.

Message-level fields repeat on every item of the message; (source_file, byte_offset) —
plus the Kafka envelope's offset for Kafka-borne messages — identify the message, and
`item_index` the item inside it.
"""

import pyarrow as pa

from wirecodecs.rows import lineage_fields

ATTRIBUTES_TYPE = pa.map_(pa.string(), pa.string())

INLONG_SCHEMA = pa.schema(
    [
        # byte_offset: the message's frame (its length prefix, if the file has them);
        # event_time: Sort's head time, `t` else `dt` of the item's attributes (V4: dt is
        # DataTime * 1000); null when neither is readable.
        *lineage_fields(None),
        pa.field("version", pa.int8(), nullable=False),  # 0..4, from the magic
        pa.field("create_time_ms", pa.int64()),  # V1-V3 CreateTime, V4 DataTime*1000, V0 null
        pa.field("msg_count", pa.int32()),  # V2/V3 MsgCnt, V4 MsgCnt (unsigned); V0/V1 null
        pa.field("msg_type", pa.int16()),  # V4 MsgType byte (0x20 snappy, 0x40 encrypted)
        pa.field("group_id", pa.string()),  # attribute groupId, else bid
        pa.field("stream_id", pa.string()),  # attribute streamId, else tid
        pa.field("group_id_num", pa.int32()),  # V4 GroupIdNum (uint16)
        pa.field("stream_id_num", pa.int32()),  # V4 StreamIdNum (uint16)
        pa.field("ext_field", pa.int32()),  # V4 ExtField (uint16)
        pa.field("data_time", pa.int64()),  # V4 DataTime, epoch seconds (uint32)
        pa.field("unique_id", pa.int64()),  # V4 UniqueId (uint32)
        pa.field("block_index", pa.int32()),  # V0-V3 attribute block of the item
        pa.field("block_item_count", pa.int32()),  # V2 ItemCnt of that block
        pa.field("item_index", pa.int32(), nullable=False),  # wire order in the message
        pa.field("compressed", pa.bool_(), nullable=False),  # its block / body was snappy
        pa.field("attr", pa.string(), nullable=False),  # attribute string as sent (see docs)
        pa.field("attributes", ATTRIBUTES_TYPE, nullable=False),  # merged attribute map
        pa.field("private_attr", pa.string()),  # V3 / V4 ExtField bit 0: the item's own
        pa.field("private_attributes", ATTRIBUTES_TYPE),
        pa.field("body", pa.binary(), nullable=False),
    ]
)

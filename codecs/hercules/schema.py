"""Row schema of decoded Hercules events: one row per event, tags as a flat typed list.

Every tag, container and vector element is one entry of `tags`, in wire order
(duplicates kept), addressed by `path` (HPath-style `a/b`, vector elements `v[0]`) and
linked to its parent entry by `parent` (its index in the list; -1 for top-level tags).
The entry's `type` keeps the Hercules type (Byte, Short, Integer, Long, Flag, Float,
Double, String, UUID, Null, Container, Vector); the value sits in the typed column for
that type. `tags_json` is the plain JSON view (last duplicate wins). See docs/hercules.md.
"""

import pyarrow as pa

from wirecodecs.rows import lineage_fields

TAG_TYPE = pa.struct(
    [
        pa.field("path", pa.string(), nullable=False),  # keys joined by /, elements as [i]
        pa.field("parent", pa.int32(), nullable=False),  # index of the parent entry, or -1
        pa.field("key", pa.string()),  # null for vector elements; bad UTF-8 replaced
        pa.field("key_raw", pa.binary()),  # the key's bytes, only when not valid UTF-8
        pa.field("index", pa.int32()),  # position in the parent vector, null for tags
        pa.field("type", pa.string(), nullable=False),  # Hercules type name
        pa.field("element_type", pa.string()),  # Vector only
        pa.field("count", pa.int32()),  # Container: tags on the wire; Vector: length
        pa.field("int_value", pa.int64()),  # Byte (unsigned 0..255), Short, Integer, Long
        pa.field("bool_value", pa.bool_()),  # Flag
        pa.field("float_value", pa.float64()),  # Float (widened exactly) and Double
        pa.field("float_bits", pa.int64()),  # Float: uint32 bits; Double: int64 bits
        pa.field("string_value", pa.string()),  # String (bad UTF-8 replaced), UUID text
        pa.field("bytes_value", pa.binary()),  # String bytes when not UTF-8; Byte vector
    ]
)
TAG_FIELDS = [field.name for field in TAG_TYPE]

HERCULES_SCHEMA = pa.schema(
    [
        # no checksum in the format; event_time: the event timestamp (100-ns ticks // 10),
        # null outside years 1..9999
        *lineage_fields(None),
        pa.field("version", pa.int16(), nullable=False),  # u8; only 1 is accepted by a gate
        pa.field("timestamp", pa.int64(), nullable=False),  # 100-ns ticks since 1970, exact
        pa.field("uuid", pa.string(), nullable=False),  # canonical lowercase text
        pa.field("size", pa.int32(), nullable=False),  # the event's bytes
        pa.field("tag_count", pa.int32(), nullable=False),  # payload tags on the wire
        pa.field("tags", pa.list_(pa.field("tag", TAG_TYPE, nullable=False)), nullable=False),
        pa.field("tags_json", pa.string(), nullable=False),  # plain view, last duplicate wins
    ]
)

"""Row schema of decoded Heka messages: one row per framed record whose body is a message.

Strings that are not valid UTF-8 (producers never check) are shown with U+FFFD in their
string column and kept byte for byte in the `*_raw` twin, which is null otherwise; the
fields' `value_string_raw` holds every element's bytes when any of them is not UTF-8. The
uuid is text too: canonical for the 16 bytes message.proto defines, else as sent (with its
`uuid_raw` twin), and `uuid_valid` says which.
"""

import pyarrow as pa

from wirecodecs.rows import lineage_fields

FIELD_TYPE = pa.struct(
    [
        pa.field("name", pa.string()),
        pa.field("name_raw", pa.binary()),
        pa.field("value_type", pa.string(), nullable=False),  # STRING..BOOL, or the code
        pa.field("representation", pa.string()),
        pa.field("representation_raw", pa.binary()),
        pa.field("value_string", pa.list_(pa.string()), nullable=False),
        pa.field("value_string_raw", pa.list_(pa.binary())),
        pa.field("value_bytes", pa.list_(pa.binary()), nullable=False),
        pa.field("value_integer", pa.list_(pa.int64()), nullable=False),
        pa.field("value_double", pa.list_(pa.float64()), nullable=False),
        pa.field("value_bool", pa.list_(pa.bool_()), nullable=False),
        pa.field("unknown_fields", pa.binary()),  # Field members message.proto lacks, raw
    ]
)
FIELDS_TYPE = pa.list_(FIELD_TYPE)

HEKA_SCHEMA = pa.schema(
    [
        # hmac_valid: null for unsigned records; event_time: the ns timestamp at us precision.
        *lineage_fields("hmac_valid"),
        # null (unsigned) | valid | invalid_digest | unknown_signer | unsupported_hash
        pa.field("hmac_status", pa.string()),
        # 16 bytes: canonical 8-4-4-4-12 text; another length: the bytes as text, as sent
        # (36 characters of text from some producers); null: no uuid on the wire
        pa.field("uuid", pa.string()),
        pa.field("uuid_raw", pa.binary()),  # a uuid of another length that is not UTF-8
        pa.field("uuid_valid", pa.bool_(), nullable=False),  # exactly 16 bytes
        pa.field("timestamp", pa.int64(), nullable=False),  # ns since the epoch, exact
        pa.field("type", pa.string()),
        pa.field("type_raw", pa.binary()),
        pa.field("logger", pa.string()),
        pa.field("logger_raw", pa.binary()),
        pa.field("severity", pa.int32(), nullable=False),  # absent on the wire: 7
        pa.field("severity_present", pa.bool_(), nullable=False),
        pa.field("payload", pa.string()),
        pa.field("payload_raw", pa.binary()),
        pa.field("env_version", pa.string()),
        pa.field("env_version_raw", pa.binary()),
        pa.field("pid", pa.int32()),
        pa.field("hostname", pa.string()),
        pa.field("hostname_raw", pa.binary()),
        pa.field("fields", FIELDS_TYPE, nullable=False),  # wire order, duplicates kept
        pa.field("unknown_fields", pa.binary()),  # Message members message.proto lacks, raw
        pa.field("hmac_hash_function", pa.string()),  # MD5 | SHA1 | code; null when absent
        pa.field("hmac_signer", pa.string()),
        pa.field("hmac_key_version", pa.int64()),  # uint32
        pa.field("hmac", pa.binary()),
        pa.field("body_encoding", pa.string(), nullable=False),  # protobuf | snappy
        pa.field("frame_length", pa.int32(), nullable=False),  # 3 + header + body bytes
    ]
)

"""cernan Avro source dumps: v1/v2 packets (u32 length, header, KV pairs, Avro container)."""

from wirecodecs.cernan.decoder import decode
from wirecodecs.cernan.options import CernanOptions
from wirecodecs.cernan.schema import PACKETS, PACKETS_SCHEMA, RECORDS_SCHEMA, schema_for
from wirecodecs.cernan.splitting import split
from wirecodecs.registry import WireFormat

CERNAN = WireFormat(
    "cernan",
    RECORDS_SCHEMA,
    decode,
    CernanOptions,
    tables={PACKETS: PACKETS_SCHEMA},
    schema_for=schema_for,
    split=split,
)

__all__ = ["CERNAN", "schema_for"]

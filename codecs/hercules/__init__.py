"""Vostok Hercules events: gate batches, event streams, stream-read responses, and single
events carried as Kafka record values (payload codec)."""

from wirecodecs.hercules.decoder import decode, decode_value
from wirecodecs.hercules.options import HerculesOptions
from wirecodecs.hercules.schema import HERCULES_SCHEMA
from wirecodecs.registry import PayloadCodec, WireFormat

HERCULES = WireFormat(
    "hercules",
    HERCULES_SCHEMA,
    decode,
    HerculesOptions,
    payload=PayloadCodec(decode_value=decode_value),
)

__all__ = ["HERCULES"]

"""Vostok Hercules events: gate batches, event streams, stream-read responses, and single
events carried as Kafka record values (payload codec)."""

from wirecodecs.hercules.decoder import decode
from wirecodecs.hercules.options import HerculesOptions
from wirecodecs.hercules.payload import decode_values
from wirecodecs.hercules.schema import HERCULES_SCHEMA
from wirecodecs.registry import PayloadCodec, WireFormat

HERCULES = WireFormat(
    "hercules",
    HERCULES_SCHEMA,
    decode,
    HerculesOptions,
    payload=PayloadCodec(decode_values=decode_values),
)

__all__ = ["HERCULES"]

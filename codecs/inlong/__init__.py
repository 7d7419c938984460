"""Apache InLong InLongMsg messages (V0-V4): landed files and Kafka record values."""

from wirecodecs.inlong.decoder import decode
from wirecodecs.inlong.options import InlongOptions
from wirecodecs.inlong.payload import decode_values
from wirecodecs.inlong.schema import INLONG_SCHEMA
from wirecodecs.registry import PayloadCodec, WireFormat

INLONG = WireFormat(
    "inlong",
    INLONG_SCHEMA,
    decode,
    InlongOptions,
    payload=PayloadCodec(decode_values=decode_values),
)

__all__ = ["INLONG"]

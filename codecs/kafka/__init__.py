"""Kafka log segments and fetch record sets (message formats v0, v1 and v2)."""

from wirecodecs.kafka.decoder import decode
from wirecodecs.kafka.index import split
from wirecodecs.kafka.layout import is_data_file
from wirecodecs.kafka.options import KafkaOptions
from wirecodecs.kafka.schema import KAFKA_SCHEMA
from wirecodecs.registry import WireFormat

KAFKA = WireFormat("kafka", KAFKA_SCHEMA, decode, KafkaOptions, data_file=is_data_file, split=split)

__all__ = ["KAFKA"]

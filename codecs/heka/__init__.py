"""Heka framed protobuf streams (0x1E header 0x1F body), signed or not, plain or gzip/zstd."""

from wirecodecs.heka.decoder import decode
from wirecodecs.heka.options import HekaOptions
from wirecodecs.heka.schema import HEKA_SCHEMA
from wirecodecs.heka.splitting import split
from wirecodecs.registry import WireFormat

HEKA = WireFormat("heka", HEKA_SCHEMA, decode, HekaOptions, split=split)

__all__ = ["HEKA"]

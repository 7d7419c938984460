"""Checksum verdicts: compute with a C-backed package, compare, and let the caller decide.

A mismatch is a verdict, not an error: Kafka's own tools still print a batch whose CRC is
wrong, so decoders record the verdict as a column and go on.
"""

from __future__ import annotations

import zlib

from crc32c import crc32c as _crc32c


def crc32(data) -> int:
    """CRC-32 (IEEE 802.3, zlib's): Kafka v0/v1 messages."""
    return zlib.crc32(data)


def crc32c(data) -> int:
    """CRC-32C (Castagnoli): Kafka v2 batches. Check value of b"123456789": 0xE3069283."""
    return _crc32c(data)


def crc32_matches(data, expected: int) -> bool:
    """Whether the CRC-32 of `data` equals the stored unsigned 32-bit `expected`."""
    return zlib.crc32(data) == expected


def crc32c_matches(data, expected: int) -> bool:
    """Whether the CRC-32C of `data` equals the stored unsigned 32-bit `expected`."""
    return _crc32c(data) == expected

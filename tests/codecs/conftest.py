"""The kafka codec tests' `decode` fixture (the shared helpers are in decoding.py)."""

from __future__ import annotations

import pytest
from decoding import Decoded, decode_all

from wirecodecs.kafka import decoder as kafka_decoder

WALKS = {  # decoder.COMPILED_COLUMNS for each path; the compiled one is skipped without numba
    "pure": lambda: None,
    "compiled": lambda: pytest.importorskip("wirecodecs.kafka.fastpath").Columns,
}


@pytest.fixture(scope="session", params=list(WALKS))
def decode(request):
    """`decode(bytes_or_stream, source=..., **options) -> Decoded` for the kafka format,
    once with the pure-Python v2 record walk and once with the compiled one (set for the
    call only, so tests that call `decode_all` directly keep the decoder's own choice)."""
    walk = WALKS[request.param]()
    if walk is not None:  # compile (or load from cache) now, not inside a timed example
        assert walk().walk(b"\x16\x00\x00\x00\x01\x02v\x02\x02k\x02x", 1) is not None

    def decode_with_walk(*args, **options) -> Decoded:
        chosen = kafka_decoder.COMPILED_COLUMNS
        kafka_decoder.COMPILED_COLUMNS = walk
        try:
            return decode_all(*args, **options)
        finally:
            kafka_decoder.COMPILED_COLUMNS = chosen

    return decode_with_walk

"""The decoder's own choice of v2 record walk: the pure walk until the process has read
`WALKS["kafka"].pure_below` bytes of Kafka data (small files do not pay numba's start), the compiled
walk from the next flush on, and the same output whichever flushes took which walk."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from decoding import ChunkedReads, decode_all, outcome

from wirecodecs.compiled import file_size, forced
from wirecodecs.kafka import decoder
from wirecodecs.stream import StreamWindow

compiled = pytest.importorskip("wirecodecs.kafka.compiled")

KAFKA_DATA = Path(__file__).resolve().parents[2] / "data" / "kafka"
VECTORS = ["v2_none.log", "v2_transactions.log", "mixed_magic.log", "v2_zstd.log"]


def test_pure_walk_until_the_process_has_read_enough(auto_walk):
    auto_walk.setattr(decoder.WALK, "pure_below", 150)
    window = StreamWindow(io.BytesIO(b"x" * 100))
    choose = decoder._when_worth_it(window)
    assert choose(None) is None
    window.fill(100)
    assert choose(None) is None  # 100 bytes of this file
    auto_walk.setattr(decoder.WALK, "read", 50)  # and 50 of files decoded before
    previous = choose(None)
    assert isinstance(previous, compiled.Columns)
    assert isinstance(choose(previous), compiled.Columns)


def test_a_file_known_to_be_large_takes_the_compiled_walk_at_once(auto_walk, tmp_path):
    auto_walk.setattr(decoder.WALK, "pure_below", 150)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"x" * 150)
    with path.open("rb") as stream:
        size = file_size(stream)
        assert size == 150
        assert isinstance(
            decoder._when_worth_it(StreamWindow(stream), size)(None), compiled.Columns
        )
    assert file_size(io.BytesIO(b"x" * 150)) == 0  # not a file: counted as read


def test_the_process_counts_what_it_read(auto_walk):
    data = (KAFKA_DATA / "v2_none.log").read_bytes()
    decode_all(data)
    decode_all(data)
    assert decoder.WALK.read == 2 * len(data)


@pytest.mark.parametrize("name", VECTORS)
def test_switching_walks_between_flushes_keeps_the_output(auto_walk, name):
    """Short reads make the window's count grow entry by entry, so the switch falls
    between two flushes of the file (batch_rows 3: many flushes)."""
    data = (KAFKA_DATA / name).read_bytes()
    auto_walk.setattr(decoder.WALK, "pure_below", len(data) // 2)
    mixed = decode_all(ChunkedReads(data, [97, 13, 256]), batch_rows=3)
    assert decoder.WALK.read == len(data)
    with forced("pure"):
        pure = decode_all(data, batch_rows=3)
    assert outcome(mixed) == outcome(pure)
    assert [b.num_rows for b in mixed.batches] == [b.num_rows for b in pure.batches]

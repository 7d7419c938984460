"""The compiled walk and its pure-Python twin give the same outcome (rows, quarantined
items with their kind, offset and detail, accounting) on every vector and on
deterministic damage of the mutation seeds: flipped bytes, cuts, inserted separators."""

from __future__ import annotations

import random

import pytest
from budget import sweep
from decoding import outcome
from heka_support import DATA, VECTORS, decode
from test_heka_mutation import SEED_NAMES, SEEDS

from wirecodecs.compiled import forced

pytest.importorskip("numba")  # no compiled walk without it


def both_walks(data: bytes, **options) -> tuple[tuple, tuple]:
    with forced("pure"):
        pure = outcome(decode(data, **options))
    with forced("compiled"):
        compiled = outcome(decode(data, **options))
    return pure, compiled


def damaged(data: bytes, seed: int) -> bytes:
    """`data` with a few bytes flipped, a separator inserted or a piece cut out."""
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(out))
        action = rng.randrange(3)
        if action == 0:
            out[at] ^= 1 << rng.randrange(8)
        elif action == 1:
            out[at:at] = rng.choice([b"\x1e", b"\x1f", b"\x80", b"\xff\xff"])
        else:
            del out[at : at + rng.randint(1, 16)]
    return bytes(out)


@pytest.mark.parametrize("name", VECTORS)
@pytest.mark.parametrize("batch_rows", [1, 3, 8192])
def test_vectors_read_alike(name, batch_rows):
    pure, compiled = both_walks((DATA / name).read_bytes(), batch_rows=batch_rows)
    assert compiled == pure


@pytest.mark.parametrize("name", SEED_NAMES)
def test_damaged_seeds_read_alike(name):
    for seed in sweep(range(150)):
        pure, compiled = both_walks(damaged(SEEDS[name], seed), batch_rows=3)
        assert compiled == pure, seed

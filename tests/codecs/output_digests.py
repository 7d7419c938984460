"""Digests of what every decoder makes of a fixed corpus, to hold a rewrite to today's output.

The corpus is each fuzz target's seeds (`fuzz_targets.seed_files`: the golden vectors, the
inputs the fuzzer caught and the sample days' files) and, for each seed, `MUTATIONS`
damaged copies made by a seeded generator (bytes overwritten, a cut, a slice repeated, a
run zeroed), so that the error paths are held as well as the clean ones. Every input is
decoded under each of the target's option variants, whole, with the default batch size
and with `fuzz_targets.SMALL_BATCH` rows per batch; the test does it once per walk where a
decoder has two (compiled and pure), and each must give the recorded digests.

An input's digest covers everything a caller sees, in every one of those decodes: the
order of batches, companion-table rows and quarantined items, each batch's schema and row
count, every row's values, every quarantined item's place, kind and detail, and the final
accounting.

`tests/data/output_digests.json` holds the digests recorded when the decoders were last
meant to change their output. Recording them again is a decision, not a fix:

    PYTHONPATH=tests/codecs .venv/bin/python tests/codecs/output_digests.py --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path

import pyarrow as pa
from decoding import Decoded, as_declared, decode_all
from fuzz_targets import (
    BOUNDS,
    SMALL_BATCH,
    SOURCE,
    TARGETS,
    Target,
    default_batch_rows,
    seed_files,
    walk_taken,
)

from wirecodecs import Quarantined, get
from wirecodecs.registry import TableRows

DIGESTS = Path(__file__).resolve().parents[1] / "data" / "output_digests.json"
MUTATIONS = 4  # damaged copies per seed
MUTATED_SEED_BYTES = 256 << 10  # larger seeds (sample-day files) are kept clean only


def _mutated(data: bytes, rng: random.Random) -> bytes:
    """`data` damaged one way, chosen by `rng`."""
    at = rng.randrange(len(data))
    size = rng.randint(1, 16)
    how = rng.choice(("overwrite", "cut", "repeat", "zero"))
    if how == "overwrite":
        return data[:at] + rng.randbytes(size) + data[at + size :]
    if how == "cut":
        return data[:at]
    if how == "repeat":
        return data[: at + size] + data[at : at + size] + data[at + size :]
    return data[:at] + bytes(size) + data[at + size :]


def inputs(target: Target, folder: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of the target's corpus: each seed, then its damaged copies."""
    for path in seed_files(target, folder):
        data = path.read_bytes()
        yield path.name, data
        if not data or len(data) > MUTATED_SEED_BYTES:
            continue
        rng = random.Random(f"{target.name}/{path.name}")
        for number in range(MUTATIONS):
            yield f"{path.name}~{number}", _mutated(data, rng)


def _update(sha, got: Decoded) -> None:
    """Feed `sha` everything `got` holds, in the order it was yielded."""
    for item in got.items:
        if isinstance(item, Quarantined):
            seen = ("quarantined", item.byte_offset, item.length, item.kind, item.detail)
        elif isinstance(item, TableRows):
            seen = ("table", item.table, str(item.batch.schema), item.batch.to_pylist())
        elif isinstance(item, pa.RecordBatch):
            seen = ("rows", str(item.schema), item.num_rows, item.to_pylist())
        else:
            seen = ("unexpected", type(item).__name__)
        sha.update(repr(seen).encode())
    sha.update(repr(sorted(got.accounting.to_dict().items())).encode())


def target_digests(
    target: Target, walk: str = "", names: Collection[str] | None = None
) -> dict[str, str | None]:
    """Input name -> one digest of its decodes under every option variant and batch size,
    the decoders set to take `walk` (`fuzz_targets.walk_taken`). With `names`, only those
    inputs are decoded; every other input of the corpus maps to None."""
    fmt = get(target.name)
    chosen = None if names is None else set(names)
    out: dict[str, str | None] = {}
    with tempfile.TemporaryDirectory() as tmp, walk_taken(walk):
        for name, data in inputs(target, Path(tmp)):
            if chosen is not None and name not in chosen:
                out[name] = None
                continue
            sha = hashlib.sha256()
            for variant in target.variants:
                for batch_rows in (default_batch_rows(fmt), SMALL_BATCH):
                    options = {**BOUNDS, **variant, "batch_rows": batch_rows}
                    declared = as_declared(target.name, options)
                    _update(sha, decode_all(data, SOURCE, target.name, **declared))
            out[name] = sha.hexdigest()[:16]
    return out


def recorded(target_name: str) -> dict[str, str]:
    return json.loads(DIGESTS.read_text())[target_name]


def current(
    target_name: str, walk: str = "", names: Collection[str] | None = None
) -> dict[str, str | None]:
    return target_digests(TARGETS[target_name], walk, names)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"record the digests in {DIGESTS}")
    args = parser.parse_args()
    digests = {name: current(name) for name in sorted(TARGETS)}
    for name, cases in digests.items():
        print(f"{name}: {len(cases)} inputs", file=sys.stderr)
    if args.write:
        DIGESTS.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Helpers shared by the Heka codec tests: the vectors, their sidecars, one decode call."""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

from decoding import decode_all

DATA = Path(__file__).resolve().parents[2] / "data" / "heka"
VECTORS = sorted(path.name for path in DATA.iterdir() if path.name.endswith((".heka", ".heka.gz")))


def sidecar(name: str) -> dict:
    with gzip.open(DATA / f"{name}.json.gz") as fh:
        return json.load(fh)


def signers_file(tmp_path: Path, signers: dict[str, str]) -> str:
    """A keys file for the `hmac_keys_file` option, written where the test says."""
    path = tmp_path / "heka_hmac_keys.json"
    path.write_text(json.dumps(signers), encoding="utf-8")
    return str(path)


# The registered heka decoder run to the end over bytes or a stream, every item kept.
decode = functools.partial(decode_all, source="mem.heka", fmt="heka")

"""Helpers shared by the Heka codec tests: the vectors, their sidecars, one decode call."""

from __future__ import annotations

import gzip
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from wirecodecs import FileAccounting, Quarantined
from wirecodecs.heka import HEKA
from wirecodecs.registry import resolve_options

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


@dataclass
class Decoded:
    """Everything one decode call yielded, in order, and the file's accounting."""

    accounting: FileAccounting
    items: list = field(default_factory=list)

    @property
    def batches(self) -> list[pa.RecordBatch]:
        return [item for item in self.items if isinstance(item, pa.RecordBatch)]

    @property
    def quarantined(self) -> list[Quarantined]:
        return [item for item in self.items if isinstance(item, Quarantined)]

    @property
    def rows(self) -> list[dict]:
        return [row for batch in self.batches for row in batch.to_pylist()]


def decode(data_or_stream, source: str = "mem.heka", **options) -> Decoded:
    """Run the registered heka decoder to the end, keeping every yielded item."""
    stream = (
        io.BytesIO(data_or_stream)
        if isinstance(data_or_stream, bytes | bytearray)
        else data_or_stream
    )
    got = Decoded(FileAccounting(source, "heka"))
    for item in HEKA.decode(stream, source, got.accounting, resolve_options(HEKA, options)):
        got.items.append(item)
    return got

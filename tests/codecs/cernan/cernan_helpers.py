"""Shared helpers of the cernan codec tests: golden vectors, and one decode call that
keeps the records, the packets rows and the quarantined packets apart (in yield order)."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from wirecodecs import FileAccounting, Quarantined, get
from wirecodecs.options import resolve
from wirecodecs.registry import TableRows

DATA = Path(__file__).resolve().parents[2] / "data" / "cernan"
CERNAN = get("cernan")


def sidecar(name: str) -> dict:
    return json.loads(gzip.decompress((DATA / f"{name}.json.gz").read_bytes()))


def vector(name: str) -> bytes:
    return (DATA / f"{name}.bin").read_bytes()


_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
_TIME = re.compile(r"\d\d:\d\d:\d\d(\.\d+)?")


def same_values(value: object) -> object:
    """A plain-JSON record with its timestamp and time strings parsed, so that renderings
    of the same instant compare equal (the sidecars always write six fraction digits)."""
    if isinstance(value, dict):
        return {key: same_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [same_values(item) for item in value]
    if isinstance(value, str) and _TIMESTAMP.fullmatch(value):
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if isinstance(value, str) and _TIME.fullmatch(value):
        return dt.time.fromisoformat(value)
    return value


@dataclass
class Result:
    accounting: FileAccounting
    records: list[dict] = field(default_factory=list)
    packets: list[dict] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # what was yielded, in order
    batches: list[pa.RecordBatch] = field(default_factory=list)


def run(data, source: str = "mem.cernan", **options) -> Result:
    """Decode bytes (or a stream) to the end with the registered cernan decoder."""
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    result = Result(FileAccounting(source, "cernan"))
    for item in CERNAN.decode(stream, source, result.accounting, resolve(CERNAN, options)):
        if isinstance(item, pa.RecordBatch):
            result.batches.append(item)
            result.records += item.to_pylist()
            result.kinds.append("records")
        elif isinstance(item, TableRows):
            assert item.table == "packets"
            assert item.batch.schema == CERNAN.tables["packets"]
            result.packets += item.batch.to_pylist()
            result.kinds.append("packets")
        else:
            result.quarantined.append(item)
            result.kinds.append("quarantined")
    return result


def check_invariants(result: Result, size: int) -> None:
    """What every decode must satisfy, damaged input or not."""
    acc = result.accounting
    assert acc.balanced, acc
    assert acc.bytes_total == size
    assert acc.records_good == len(result.records)
    assert acc.frames_bad == len(result.quarantined)
    ok = [p for p in result.packets if p["status"] == "ok"]
    assert acc.frames_good == len(ok)
    assert sum(p["record_count"] for p in result.packets) == len(result.records)
    assert [p["packet_index"] for p in result.packets] == list(range(len(result.packets)))

"""Memory that does not grow with the day: spark-submit with a driver heap smaller than the
day it decodes (local mode, so the one JVM is the driver and the executor) succeeds.

Rows never pass through the JVM (executors write Parquet with pyarrow), so the heap holds
Spark's own state and the units' accounting, whatever the size of the day.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jobs import lake
from wirecodecs.kafka import encoder as enc

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
DAY = "2026-11-20"
HEAP_MB = 100
DAY_MB = 160  # more than the heap
BATCH_RECORDS = 10_000


def one_batch() -> bytes:
    """One ~1 MB v2 batch of ~100-byte values, timestamps inside DAY."""
    records = [
        enc.Record(key=b"k%d" % i, value=bytes([i % 251]) * 100, timestamp=1_795_000_000_000 + i)
        for i in range(BATCH_RECORDS)
    ]
    return enc.encode(enc.RecordBatch(records, base_offset=0))


def write_day(landing: Path) -> int:
    """Two segments of copies of one batch, base offsets rewritten (the batch CRC does not
    cover them), so a big day costs I/O, not encoding. Returns the record count."""
    batch = one_batch()
    copies = DAY_MB * 1_000_000 // len(batch) // 2
    for segment in range(2):
        path = landing / f"orders-{segment}" / "00000000000000000000.log"
        path.parent.mkdir(parents=True)
        with path.open("wb") as out:
            for n in range(copies):
                out.write((n * BATCH_RECORDS).to_bytes(8, "big", signed=True) + batch[8:])
    (landing / "_SUCCESS").write_text("")
    return 2 * copies * BATCH_RECORDS


def test_a_day_bigger_than_the_driver_heap_decodes(tmp_path):
    landing = tmp_path / "landing"
    records = write_day(landing)
    assert sum(f.stat().st_size for f in landing.rglob("*.log")) > HEAP_MB << 20
    warehouse = tmp_path / "warehouse"
    command = [
        shutil.which("spark-submit", path=os.path.dirname(sys.executable)) or "spark-submit",
        "--master", "local[2]",
        "--driver-memory", f"{HEAP_MB}m",
        # Spark refuses a heap below 450 MB unless told what memory to plan with; the JVM
        # still gets only -Xmx100m.
        "--conf", "spark.testing.memory=536870912",
        str(ROOT / "jobs" / "decode.py"),
        "--source", "kafka", "--envelope", "kafka", "--date", DAY,
        "--landing", str(landing), "--warehouse", str(warehouse),
        "--reports", str(tmp_path / "reports"),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads(
        (warehouse / "_manifests" / "kafka" / f"dt={DAY}" / "manifest.json").read_text()
    )
    assert manifest["totals"]["rows"] == records
    assert lake.day_rows(str(warehouse / "kafka"), dt.date.fromisoformat(DAY)) == records

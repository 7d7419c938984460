"""Kafka v2 decode throughput: wirecodecs against kafka-python and aiokafka, one core.

Not a test. Writes two uncompressed v2 segments (~100-byte and ~1 KB values) into a
temporary folder under $TMPDIR, then decodes each with every reader in fresh child
processes, so that every measurement starts from the same state and its peak memory is
its own:

* wirecodecs: the registered `kafka` decoder over an open file (streamed), every Arrow
  batch built (CRC-32C checked per batch by the decoder);
* wirecodecs-pure: the same with WIRELAKE_PURE_PYTHON set (no compiled record walk);
* kafka-python and aiokafka (its C extension reader): `MemoryRecords` over the file's
  bytes (they need them all in memory), `batch.validate_crc()` per batch, and key, value,
  headers, offset and timestamp read from every record so all do comparable work.

Times are the best of --repeat runs (wall clock, including the file read). Memory is the
child's peak resident set (`ru_maxrss`) and its growth over the child's state after
imports: RSS, unlike tracemalloc, also sees Arrow's native buffers.

    ./wirelake bench kafka [--size-mb 50] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pyarrow as pa
from aiokafka.record.memory_records import MemoryRecords as AiokafkaRecords
from kafka.record import MemoryRecords as KafkaPythonRecords

from wirecodecs.accounting import FileAccounting
from wirecodecs.kafka import encoder as enc
from wirecodecs.registry import get, resolve_options

BATCH_BYTES = 16 * 1024  # the Java producer's default batch.size
SHAPES = {"100B": 100, "1KB": 1000}  # value size per segment


def write_segment(path: Path, size_mb: int, value_bytes: int, seed: int = 7) -> int:
    """An uncompressed v2 segment of about `size_mb` MB; returns its record count."""
    rng = random.Random(seed)
    per_batch = max(1, BATCH_BYTES // (value_bytes + 30))
    target = size_mb * 1_000_000
    written = records = 0
    timestamp = 1_790_000_000_000
    with path.open("wb") as out:
        while written < target:
            batch = []
            for i in range(per_batch):
                headers = (("trace-id", rng.randbytes(8)),) if (records + i) % 10 == 0 else ()
                jitter = rng.randrange(value_bytes // 5 + 1)
                batch.append(
                    enc.Record(
                        key=b"user-%d" % rng.randrange(100_000),
                        value=rng.randbytes(value_bytes - value_bytes // 10 + jitter),
                        timestamp=timestamp + i,
                        headers=headers,
                    )
                )
            data = enc.encode(
                enc.RecordBatch(batch, base_offset=records, producer_id=9, producer_epoch=0)
            )
            out.write(data)
            written += len(data)
            records += len(batch)
            timestamp += 1000
    return records


def _wirecodecs(path: str) -> int:
    fmt = get("kafka")
    options = resolve_options(fmt, {})
    accounting = FileAccounting(source=path, format=fmt.name)
    rows = 0
    with open(path, "rb") as stream:
        for item in fmt.decode(stream, path, accounting, options):
            if isinstance(item, pa.RecordBatch):
                rows += item.num_rows
    if accounting.frames_bad or not accounting.balanced:
        raise RuntimeError(f"unexpected damage: {accounting}")
    return rows


def _memory_records(records_class: type, path: str) -> int:
    """Walk a client library's MemoryRecords over the whole file, CRC-checking each batch."""
    records = records_class(Path(path).read_bytes())
    rows = 0
    while records.has_next():
        batch = records.next_batch()
        if not batch.validate_crc():
            raise RuntimeError(f"CRC mismatch at offset {batch.base_offset}")
        for record in batch:
            record.key, record.value, record.headers, record.offset, record.timestamp  # noqa: B018
            rows += 1
    return rows


READERS = {
    "wirecodecs": _wirecodecs,  # the compiled v2 record walk when numba is there
    "wirecodecs-pure": _wirecodecs,  # the same decoder with WIRELAKE_PURE_PYTHON set
    "kafka-python": functools.partial(_memory_records, KafkaPythonRecords),
    "aiokafka-c": functools.partial(_memory_records, AiokafkaRecords),
}


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def worker(reader: str, path: str, repeat: int) -> dict:
    """Runs inside the child: decode `repeat` times, report the best time and peak RSS,
    then once more under tracemalloc (untimed) for the peak of Python and numpy memory."""
    run = READERS[reader]
    baseline = _max_rss_mb()  # both libraries imported: the same start for either reader
    best = float("inf")
    rows = 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = run(path)
        best = min(best, time.perf_counter() - start)
    peak = _max_rss_mb()
    arrow_peak = pa.default_memory_pool().max_memory() / 2**20  # Arrow buffers, not retention
    tracemalloc.start()
    run(path)
    traced_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return {
        "rows": rows,
        "seconds": best,
        "peak_rss_mb": peak,
        "rss_growth_mb": peak - baseline,
        "arrow_peak_mb": arrow_peak,
        "traced_peak_mb": traced_peak,
    }


def measure(reader: str, path: Path, repeat: int) -> dict:
    child = subprocess.run(
        [sys.executable, __file__, "--worker", reader, str(path), "--repeat", str(repeat)],
        env={**os.environ, "WIRELAKE_PURE_PYTHON": "1"} if reader.endswith("-pure") else None,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(child.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=50, help="size of each segment (MB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; best kept")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--worker", nargs=2, metavar=("READER", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.repeat)))
        return 0

    results = []
    with tempfile.TemporaryDirectory(prefix="kafka-bench-") as tmp:
        for shape, value_bytes in SHAPES.items():
            path = Path(tmp) / f"v2_none_{shape}.log"
            records = write_segment(path, args.size_mb, value_bytes)
            size = path.stat().st_size
            for reader in READERS:
                got = measure(reader, path, args.repeat)
                if got["rows"] != records:
                    raise SystemExit(f"{reader} decoded {got['rows']} of {records} records")
                results.append(
                    {
                        "reader": reader,
                        "segment": shape,
                        "records": records,
                        "mb": size / 1e6,
                        "records_per_s": records / got["seconds"],
                        "mb_per_s": size / 1e6 / got["seconds"],
                        **got,
                    }
                )
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print_table(results)
    return 0


def _print_table(results: list[dict]) -> None:
    header = f"{'reader':<16}{'values':>7}{'records':>10}{'MB':>7}{'best s':>8}"
    header += f"{'records/s':>12}{'MB/s':>8}{'peak RSS MB':>13}{'RSS growth MB':>15}"
    header += f"{'Arrow peak MB':>15}{'traced peak MB':>16}"
    print(header)
    for r in results:
        print(
            f"{r['reader']:<16}{r['segment']:>7}{r['records']:>10}{r['mb']:>7.1f}"
            f"{r['seconds']:>8.2f}{r['records_per_s']:>12,.0f}{r['mb_per_s']:>8.1f}"
            f"{r['peak_rss_mb']:>13.0f}{r['rss_growth_mb']:>15.0f}{r['arrow_peak_mb']:>15.0f}"
            f"{r['traced_peak_mb']:>16.0f}"
        )
    print(
        f"python {sys.version.split()[0]}, one process per measurement, {os.cpu_count()} "
        "cores on the machine; RSS = ru_maxrss of that process (allocators keep freed memory, "
        "and the first call loads the compiled walk: ~64 MB); Arrow peak = the Arrow memory "
        "pool's high-water mark; traced peak = tracemalloc's (Python objects and numpy "
        "buffers) in one more, untimed run"
    )


if __name__ == "__main__":
    raise SystemExit(main())

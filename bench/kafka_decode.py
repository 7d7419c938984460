"""Kafka v2 decode throughput: wirecodecs against kafka-python and aiokafka, one core.

Not a test. Writes v2 segments (~100-byte and ~1 KB values; uncompressed, lz4 and zstd
batches) into a temporary folder under $TMPDIR, then decodes each with every reader in
fresh child processes, so that every measurement starts from the same state and its peak
memory is its own; the readers take turns (two rounds of a process each, --repeat runs
per process), so that a load on the machine falls on all of them alike:

* wirecodecs: the registered `kafka` decoder over an open file (streamed), every Arrow
  batch built (CRC-32C checked per batch by the decoder);
* wirecodecs-pure: the same with WIRELAKE_WALK=pure (no compiled record walk);
* kafka-python (uncompressed segments only: it is the slowest by far) and aiokafka (its
  C extension reader): `MemoryRecords` over the file's bytes (they need them all in
  memory), `batch.validate_crc()` per batch, and key, value, headers, offset and
  timestamp read from every record so all do comparable work.

Times are the best of all runs (2 x --repeat), wall clock and CPU time
(`time.process_time`: what a loaded machine disturbs least), including the file read;
"first s" is the first run of a fresh process (imports, numba's start); "x aiokafka" is
aiokafka-c's CPU time over the reader's on the same segment. Memory is the child's peak resident set
(`ru_maxrss`) and its growth over the child's state after imports: RSS, unlike
tracemalloc, also sees Arrow's native buffers.

    ./wirelake bench kafka [--size-mb 50] [--repeat 3] [--json]
"""

from __future__ import annotations

import functools
import os
import random
import time
from pathlib import Path

import harness
from aiokafka.record.memory_records import MemoryRecords as AiokafkaRecords
from kafka.record import MemoryRecords as KafkaPythonRecords

from wirecodecs.kafka import encoder as enc

BATCH_BYTES = 16 * 1024  # the Java producer's default batch.size
SHAPES = {"100B": 100, "1KB": 1000}  # value size per segment
CODECS = ("none", "lz4", "zstd")
ROUNDS = 2  # fresh processes per reader and segment, the readers taking turns


def write_segment(
    path: Path, size_mb: float, value_bytes: int, seed: int = 7, codec: str = "none"
) -> int:
    """A v2 segment of about `size_mb` MB of batches compressed with `codec` (uncompressed
    by default); returns its record count."""
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
                enc.RecordBatch(
                    batch, base_offset=records, producer_id=9, producer_epoch=0, codec=codec
                )
            )
            out.write(data)
            written += len(data)
            records += len(batch)
            timestamp += 100  # 10 batches a second: a 1 GB segment spans about 2 hours
    return records


def _wirecodecs(path: str) -> int:
    return harness.decode("kafka", path, {}).rows


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
    "wirecodecs-pure": _wirecodecs,  # the same decoder with WIRELAKE_WALK=pure
    "kafka-python": functools.partial(_memory_records, KafkaPythonRecords),
    "aiokafka-c": functools.partial(_memory_records, AiokafkaRecords),
}


def worker(reader: str, path: str, *, repeat: int) -> dict:
    """Runs inside the child, both libraries imported: the same start for either reader.
    A first run, timed apart, pays what a fresh process pays once (lazy imports, loading
    the compiled walk from numba's cache)."""
    cpu_seconds = []

    def run() -> int:
        start = time.process_time()
        rows = READERS[reader](path)
        cpu_seconds.append(time.process_time() - start)
        return rows

    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    got = harness.best_of(run, repeat)
    return {**got, "first_seconds": first, "cpu_seconds": min(cpu_seconds[1 : repeat + 1])}


def bench(args, tmp: Path) -> list[dict]:
    results = []
    for codec in CODECS:
        for shape, value_bytes in SHAPES.items():
            path = tmp / f"v2_{codec}_{shape}.log"
            records = write_segment(path, args.size_mb, value_bytes, codec=codec)
            readers = [r for r in READERS if codec == "none" or r != "kafka-python"]
            best = {reader: _measure(reader, path, args.repeat) for reader in readers}
            for _ in range(ROUNDS - 1):  # in turns: a load falls on every reader alike
                for reader in readers:
                    got = _measure(reader, path, args.repeat)
                    cpu = min(best[reader]["cpu_seconds"], got["cpu_seconds"])
                    if got["seconds"] < best[reader]["seconds"]:
                        best[reader] = got
                    best[reader]["cpu_seconds"] = cpu
            yardstick = best["aiokafka-c"]["cpu_seconds"]
            for reader, got in best.items():
                row = harness.result(
                    got, records, path, label=reader, reader=reader, segment=f"{codec} {shape}"
                )
                row["cpu_records_per_s"] = records / got["cpu_seconds"]
                row["vs_aiokafka"] = yardstick / got["cpu_seconds"]
                results.append(row)
    return results


def _measure(reader: str, path: Path, repeat: int) -> dict:
    """`repeat` runs of `reader` over `path` in a fresh process."""
    pure = {**os.environ, "WIRELAKE_WALK": "pure"} if reader.endswith("-pure") else None
    return harness.measure(__file__, [reader, path], repeat, pure)


COLUMNS: list[harness.Column] = [
    ("reader", "<16", "reader"),
    ("segment", ">10", "segment"),
    ("records", ">10", "records"),
    ("MB", ">7.1f", "mb"),
    ("first s", ">8.3f", "first_seconds"),
    ("best s", ">8.3f", "seconds"),
    ("CPU s", ">7.3f", "cpu_seconds"),
    ("records/s", ">12,.0f", "records_per_s"),
    ("CPU records/s", ">15,.0f", "cpu_records_per_s"),
    ("MB/s", ">8.1f", "mb_per_s"),
    ("x aiokafka", ">12.2f", "vs_aiokafka"),
    *harness.MEMORY_COLUMNS,
]


def _print_table(results: list[dict]) -> None:
    harness.print_table(
        results,
        COLUMNS,
        f"{harness.machine()}; RSS = ru_maxrss of that process (allocators keep freed memory, "
        "and the first call loads the compiled walk: ~64 MB); Arrow peak = the Arrow memory "
        "pool's high-water mark; traced peak = tracemalloc's (Python objects and numpy "
        "buffers) in one more, untimed run",
    )


if __name__ == "__main__":
    raise SystemExit(
        harness.main(__doc__, "size of each segment (MB)", worker, bench, _print_table)
    )

"""Hercules decode throughput: wirecodecs against json.loads on the same events, one core.

Not a test. Writes a gate batch of realistic log events (`hercules.samples.log_event`:
10-30 tags, common tags nested under `properties`, exceptions with stack-frame vectors)
of about --size-mb MB into a temporary folder under $TMPDIR, and the same events as JSON
lines (version, timestamp, uuid and the tags' plain JSON view, as the decoder's
`tags_json` renders them). Then, each in fresh child processes so that every measurement
starts from the same state and its peak memory is its own:

* wirecodecs: the registered `hercules` decoder over the open batch file (streamed),
  every Arrow batch built (typed tag list and JSON view per event);
* json.loads: the JSON lines file read line by line, `json.loads` on each (Python's C
  parser; it builds dicts, no Arrow);
* kafka+hercules: a Kafka log segment whose record values are the same events (one per
  record, uncompressed v2 batches of RECORDS_PER_BATCH, as the gate's topic holds them).

Times are the best of --repeat runs (wall clock, including the file read). Memory is the
child's peak resident set (`ru_maxrss`), its growth over the child's state after imports,
and tracemalloc's peak in one more, untimed run. The ratios come from one more child that
runs the three readers interleaved, --repeat rounds, best wall and CPU time of each (the
machine is shared: CPU time is the steadier figure). Last, the first decode of a one-event
batch in a fresh process (numba is imported then, by the decoder), with an empty numba
cache (compiles) and with the cache that run filled (loads).

    ./wirelake bench hercules [--size-mb 50] [--repeat 3] [--json]
"""

from __future__ import annotations

import json
import os
import random
import struct
import time
from pathlib import Path

import harness

from wirecodecs.accounting import FileAccounting
from wirecodecs.hercules.encoder import encode_event
from wirecodecs.hercules.samples import log_event
from wirecodecs.kafka import encoder as kafka_enc
from wirecodecs.options import resolve
from wirecodecs.registry import get

TICK0 = 17_900_000_000_000_000  # 2026-09-21 in 100-ns ticks
RECORDS_PER_BATCH = 64


def write_batch(batch: Path, size_mb: float, seed: int = 7) -> int:
    """A gate batch (int32 count, events) of about `size_mb` MB; returns the event count."""
    rng = random.Random(seed)
    target = size_mb * 1_000_000
    written = count = 0
    with batch.open("wb") as out:
        out.write(struct.pack(">i", 0))
        while written < target:
            data = encode_event(log_event(rng, TICK0 + count * 37_000))
            out.write(data)
            written += len(data)
            count += 1
        out.seek(0)
        out.write(struct.pack(">i", count))
    return count


def write_inputs(batch: Path, lines: Path, segment: Path, size_mb: int, seed: int = 7) -> int:
    """The gate batch, the same events as JSON lines and as a Kafka segment's record
    values; returns the event count."""
    count = write_batch(batch, size_mb, seed)
    write_segment(segment, count, seed)
    with lines.open("w") as out:
        for row in _rows(batch):
            head = {key: row[key] for key in ("version", "timestamp", "uuid")}
            text = json.dumps(head, separators=(",", ":"))
            out.write(f'{text[:-1]},"tags":{row["tags_json"]}}}\n')
    return count


def write_segment(segment: Path, count: int, seed: int = 7) -> None:
    """The `count` events `write_batch` writes, as the record values of a Kafka segment."""
    rng = random.Random(seed)
    events = [encode_event(log_event(rng, TICK0 + i * 37_000)) for i in range(count)]
    with segment.open("wb") as out:
        for start in range(0, count, RECORDS_PER_BATCH):
            chunk = events[start : start + RECORDS_PER_BATCH]
            records = [kafka_enc.Record(value=event) for event in chunk]
            out.write(kafka_enc.encode_log([kafka_enc.RecordBatch(records, base_offset=start)]))


def _rows(path: Path):
    fmt = get("hercules")
    accounting = FileAccounting(source=str(path), format=fmt.name)
    with path.open("rb") as stream:
        for item in fmt.decode(stream, str(path), accounting, resolve(fmt, {})):
            yield from item.select(["version", "timestamp", "uuid", "tags_json"]).to_pylist()


def _wirecodecs(path: str) -> int:
    return harness.decode("hercules", path, {}).rows


def _json_loads(path: str) -> int:
    rows = 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            json.loads(line)
            rows += 1
    return rows


def _kafka(path: str) -> int:
    return harness.decode("kafka+hercules", path, {}).rows


READERS = {"wirecodecs": _wirecodecs, "json.loads": _json_loads, "kafka+hercules": _kafka}


def _interleaved(paths: list[str], repeat: int) -> dict:
    """Inside one child: the readers in turn, `repeat` rounds; best wall and CPU seconds."""
    best = {reader: [float("inf")] * 2 for reader in READERS}
    for _ in range(repeat):
        for (reader, read), path in zip(READERS.items(), paths, strict=True):
            wall, cpu = time.perf_counter(), time.process_time()
            read(path)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best[reader] = [min(best[reader][0], wall), min(best[reader][1], cpu)]
    return best


def _first_call(path: str) -> dict:
    """Inside a fresh child: the first and the second decode of a small batch."""
    times = []
    for _ in range(2):
        start = time.perf_counter()
        _wirecodecs(path)
        times.append(time.perf_counter() - start)
    return {"first_seconds": times[0], "second_seconds": times[1]}


def worker(reader: str, *paths: str, repeat: int) -> dict:
    """Runs inside the child (no Arrow pool figure: json.loads builds no Arrow)."""
    if reader == "interleaved":
        return _interleaved(list(paths), repeat)
    if reader == "first":
        return _first_call(paths[0])
    return harness.best_of(lambda: READERS[reader](paths[0]), repeat, arrow_pool=False)


def bench(args, tmp: Path) -> dict:
    results = []
    inputs = {
        "wirecodecs": tmp / "batch.bin",
        "json.loads": tmp / "events.jsonl",
        "kafka+hercules": tmp / "00000000000000000000.log",
    }
    events = write_inputs(*inputs.values(), args.size_mb)
    for reader, path in inputs.items():
        got = harness.measure(__file__, [reader, path], args.repeat)
        results.append(
            harness.result(
                got, events, path, label=reader, unit="events", reader=reader, input=path.name
            )
        )
    best = harness.measure(__file__, ["interleaved", *inputs.values()], args.repeat)
    (wall, cpu), (json_wall, json_cpu), (kafka_wall, kafka_cpu) = best.values()
    small = tmp / "small.bin"
    write_batch(small, 0.0001)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp / "numba-cache")}
    first = [harness.measure(__file__, ["first", small], 1, env) for _ in ("cold", "warm")]
    return {
        "results": results,
        "interleaved": best,
        "wirecodecs_over_json_time": wall / json_wall,
        "wirecodecs_over_json_cpu": cpu / json_cpu,
        "kafka_over_file_time": kafka_wall / wall,
        "kafka_over_file_cpu": kafka_cpu / cpu,
        "first_call_cold_cache": first[0],
        "first_call_warm_cache": first[1],
    }


COLUMNS: list[harness.Column] = [
    ("reader", "<12", "reader"),
    ("input", ">14", "input"),
    ("events", ">9", "events"),
    ("MB", ">7.1f", "mb"),
    ("best s", ">8.2f", "seconds"),
    ("events/s", ">11,.0f", "events_per_s"),
    ("MB/s", ">7.1f", "mb_per_s"),
    *(column for column in harness.MEMORY_COLUMNS if column[2] != "arrow_peak_mb"),
]


def _print_table(report: dict) -> None:
    r = report
    harness.print_table(
        r["results"],
        COLUMNS,
        f"Interleaved in one process, best of each: wirecodecs takes "
        f"{r['wirecodecs_over_json_time']:.2f}x the time of json.loads on the same events "
        f"(CPU {r['wirecodecs_over_json_cpu']:.2f}x); kafka+hercules "
        f"{r['kafka_over_file_time']:.2f}x the file decoder's (CPU "
        f"{r['kafka_over_file_cpu']:.2f}x). {harness.machine()} (shared); MB/s of each "
        "reader's own input",
    )
    for cache in ("cold", "warm"):
        got = r[f"first_call_{cache}_cache"]
        print(
            f"first decode of a one-event batch in a fresh process, numba cache {cache}: "
            f"{got['first_seconds']:.2f} s; the second: {got['second_seconds'] * 1000:.1f} ms"
        )


if __name__ == "__main__":
    raise SystemExit(
        harness.main(__doc__, "size of the batch file (MB)", worker, bench, _print_table)
    )

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
  parser; it builds dicts, no Arrow).

Times are the best of --repeat runs (wall clock, including the file read). Memory is the
child's peak resident set (`ru_maxrss`), its growth over the child's state after imports,
and tracemalloc's peak in one more, untimed run.

    ./wirelake bench hercules [--size-mb 50] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pyarrow as pa

from wirecodecs.accounting import FileAccounting
from wirecodecs.hercules.encoder import encode_event
from wirecodecs.hercules.samples import log_event
from wirecodecs.registry import get, resolve_options

TICK0 = 17_900_000_000_000_000  # 2026-09-21 in 100-ns ticks


def write_inputs(batch: Path, lines: Path, size_mb: int, seed: int = 7) -> int:
    """The gate batch (int32 count, events) and the same events as JSON lines; returns
    the event count."""
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
    with lines.open("w") as out:
        for row in _rows(batch):
            head = {key: row[key] for key in ("version", "timestamp", "uuid")}
            text = json.dumps(head, separators=(",", ":"))
            out.write(f'{text[:-1]},"tags":{row["tags_json"]}}}\n')
    return count


def _rows(path: Path):
    fmt = get("hercules")
    accounting = FileAccounting(source=str(path), format=fmt.name)
    with path.open("rb") as stream:
        for item in fmt.decode(stream, str(path), accounting, resolve_options(fmt, {})):
            yield from item.select(["version", "timestamp", "uuid", "tags_json"]).to_pylist()


def _wirecodecs(path: str) -> int:
    fmt = get("hercules")
    accounting = FileAccounting(source=path, format=fmt.name)
    rows = 0
    with open(path, "rb") as stream:
        for item in fmt.decode(stream, path, accounting, resolve_options(fmt, {})):
            if not isinstance(item, pa.RecordBatch):
                raise RuntimeError(f"unexpected damage: {item}")
            rows += item.num_rows
    if not accounting.balanced:
        raise RuntimeError(f"unbalanced: {accounting}")
    return rows


def _json_loads(path: str) -> int:
    rows = 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            json.loads(line)
            rows += 1
    return rows


READERS = {"wirecodecs": _wirecodecs, "json.loads": _json_loads}


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def worker(reader: str, path: str, repeat: int) -> dict:
    """Runs inside the child: decode `repeat` times, report the best time and peak RSS,
    then once more under tracemalloc (untimed)."""
    run = READERS[reader]
    baseline = _max_rss_mb()
    best = float("inf")
    rows = 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = run(path)
        best = min(best, time.perf_counter() - start)
    peak = _max_rss_mb()
    tracemalloc.start()
    run(path)
    traced_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return {
        "rows": rows,
        "seconds": best,
        "peak_rss_mb": peak,
        "rss_growth_mb": peak - baseline,
        "traced_peak_mb": traced_peak,
    }


def measure(reader: str, path: Path, repeat: int) -> dict:
    child = subprocess.run(
        [sys.executable, __file__, "--worker", reader, str(path), "--repeat", str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(child.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=50, help="size of the batch file (MB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; best kept")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--worker", nargs=2, metavar=("READER", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.repeat)))
        return 0

    results = []
    with tempfile.TemporaryDirectory(prefix="hercules-bench-") as tmp:
        inputs = {"wirecodecs": Path(tmp) / "batch.bin", "json.loads": Path(tmp) / "events.jsonl"}
        events = write_inputs(inputs["wirecodecs"], inputs["json.loads"], args.size_mb)
        for reader, path in inputs.items():
            got = measure(reader, path, args.repeat)
            if got["rows"] != events:
                raise SystemExit(f"{reader} decoded {got['rows']} of {events} events")
            size = path.stat().st_size
            results.append(
                {
                    "reader": reader,
                    "input": path.name,
                    "events": events,
                    "mb": size / 1e6,
                    "events_per_s": events / got["seconds"],
                    "mb_per_s": size / 1e6 / got["seconds"],
                    **got,
                }
            )
    ratio = results[0]["seconds"] / results[1]["seconds"]
    if args.json:
        print(json.dumps({"results": results, "wirecodecs_over_json_time": ratio}, indent=2))
    else:
        _print_table(results, ratio)
    return 0


def _print_table(results: list[dict], ratio: float) -> None:
    header = f"{'reader':<12}{'input':>14}{'events':>9}{'MB':>7}{'best s':>8}"
    header += f"{'events/s':>11}{'MB/s':>7}{'peak RSS MB':>13}{'RSS growth MB':>15}"
    header += f"{'traced peak MB':>16}"
    print(header)
    for r in results:
        print(
            f"{r['reader']:<12}{r['input']:>14}{r['events']:>9}{r['mb']:>7.1f}"
            f"{r['seconds']:>8.2f}{r['events_per_s']:>11,.0f}{r['mb_per_s']:>7.1f}"
            f"{r['peak_rss_mb']:>13.0f}{r['rss_growth_mb']:>15.0f}{r['traced_peak_mb']:>16.0f}"
        )
    print(
        f"wirecodecs takes {ratio:.2f}x the time of json.loads on the same events "
        f"({1 / ratio:.2f}x its speed). python {sys.version.split()[0]}, one process per "
        f"measurement, {os.cpu_count()} cores on the machine (shared); MB/s of each reader's "
        "own input"
    )


if __name__ == "__main__":
    raise SystemExit(main())

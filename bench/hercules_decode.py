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

import json
import random
import struct
from pathlib import Path

import harness

from wirecodecs.accounting import FileAccounting
from wirecodecs.hercules.encoder import encode_event
from wirecodecs.hercules.samples import log_event
from wirecodecs.options import resolve
from wirecodecs.registry import get

TICK0 = 17_900_000_000_000_000  # 2026-09-21 in 100-ns ticks


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


def write_inputs(batch: Path, lines: Path, size_mb: int, seed: int = 7) -> int:
    """The gate batch and the same events as JSON lines; returns the event count."""
    count = write_batch(batch, size_mb, seed)
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


READERS = {"wirecodecs": _wirecodecs, "json.loads": _json_loads}


def worker(reader: str, path: str, *, repeat: int) -> dict:
    """Runs inside the child (no Arrow pool figure: json.loads builds no Arrow)."""
    return harness.best_of(lambda: READERS[reader](path), repeat, arrow_pool=False)


def bench(args, tmp: Path) -> dict:
    results = []
    inputs = {"wirecodecs": tmp / "batch.bin", "json.loads": tmp / "events.jsonl"}
    events = write_inputs(inputs["wirecodecs"], inputs["json.loads"], args.size_mb)
    for reader, path in inputs.items():
        got = harness.measure(__file__, [reader, path], args.repeat)
        results.append(
            harness.result(
                got, events, path, label=reader, unit="events", reader=reader, input=path.name
            )
        )
    ratio = results[0]["seconds"] / results[1]["seconds"]
    return {"results": results, "wirecodecs_over_json_time": ratio}


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
    ratio = report["wirecodecs_over_json_time"]
    harness.print_table(
        report["results"],
        COLUMNS,
        f"wirecodecs takes {ratio:.2f}x the time of json.loads on the same events "
        f"({1 / ratio:.2f}x its speed). {harness.machine()} (shared); MB/s of each reader's "
        "own input",
    )


if __name__ == "__main__":
    raise SystemExit(
        harness.main(__doc__, "size of the batch file (MB)", worker, bench, _print_table)
    )

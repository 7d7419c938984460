"""InLongMsg decode throughput: the `inlong` file decoder on length-prefixed files, one core.

Not a test. Writes two files of about --size-mb MB into a temporary folder under $TMPDIR,
each a run of length-prefixed messages with snappy bodies, like DataProxy's MQ output:

* v4: SDK binary messages (MsgType 0x27), 50 CSV-like items of ~80-200 bytes per body,
  string ids and a DataProxy-style common attribute string;
* v1: DataProxy text messages, one snappy block of 50 such items per message.

Each is decoded in fresh child processes (streamed from an open file, every Arrow batch
built). Reported: items/s and MB/s (file bytes) of the best of --repeat runs, the child's
peak RSS and its growth over the state after imports, the Arrow pool's high-water mark and
tracemalloc's peak in one more, untimed run, and the share of decode time spent in snappy
decompression, measured in one more run with every decompress call timed on its own.

    ./wirelake bench inlong [--size-mb 50] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
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

from wirecodecs.accounting import FileAccounting
from wirecodecs.inlong import encoder as enc
from wirecodecs.inlong import message
from wirecodecs.registry import get, resolve_options

ITEMS_PER_MESSAGE = 50
WORDS = ["view", "buy", "cart", "home", "search", "pay", "ok", "fail", "cn", "de", "us", "web"]
DATA_TIME = 1_790_000_000


def _items(rng: random.Random) -> list[bytes]:
    out = []
    for _ in range(ITEMS_PER_MESSAGE):
        fields = [str(rng.randrange(10**9)), *rng.choices(WORDS, k=rng.randrange(6, 24))]
        fields.append(f"{rng.uniform(0, 1000):.3f}")
        out.append(",".join(fields).encode())
    return out


def _v4(rng: random.Random, n: int) -> bytes:
    attr = f"groupId=g_bench&streamId=s_{n % 7}&rtms={DATA_TIME * 1000 + n}&NodeIP=10.0.0.1"
    return enc.encode_v4(
        _items(rng), attr, ext_field=0x04, data_time=DATA_TIME + n % 3600, unique_id=n,
        compress=True,
    )  # fmt: skip


def _v1(rng: random.Random, n: int) -> bytes:
    attr = f"m=0&groupId=g_bench&streamId=s_{n % 7}&dt={DATA_TIME * 1000 + n}&NodeIP=10.0.0.1"
    return enc.encode_blocks(1, [(attr, _items(rng))], DATA_TIME * 1000 + n, compress=True)


SHAPES = {"v4": _v4, "v1": _v1}


def write_file(path: Path, size_mb: int, build, seed: int = 7) -> int:
    """Length-prefixed messages until the file holds about `size_mb` MB; returns items."""
    rng = random.Random(seed)
    target = size_mb * 1_000_000
    written = items = n = 0
    with path.open("wb") as out:
        while written < target:
            data = enc.length_prefixed([build(rng, n)])
            out.write(data)
            written += len(data)
            items += ITEMS_PER_MESSAGE
            n += 1
    return items


def decode_file(path: str) -> int:
    fmt = get("inlong")
    options = resolve_options(fmt, {"framing": "length_prefixed"})
    accounting = FileAccounting(source=path, format=fmt.name)
    rows = 0
    with open(path, "rb") as stream:
        for item in fmt.decode(stream, path, accounting, options):
            if isinstance(item, pa.RecordBatch):
                rows += item.num_rows
    if accounting.frames_bad or not accounting.balanced:
        raise RuntimeError(f"unexpected damage: {accounting}")
    return rows


def _snappy_seconds(path: str) -> tuple[float, float]:
    """(decode seconds, of which inside snappy) for one run with decompress calls timed."""
    spent = 0.0
    plain = message._snappy_block

    def timed(data, max_decompressed):
        nonlocal spent
        start = time.perf_counter()
        try:
            return plain(data, max_decompressed)
        finally:
            spent += time.perf_counter() - start

    message._snappy_block = timed
    try:
        start = time.perf_counter()
        decode_file(path)
        return time.perf_counter() - start, spent
    finally:
        message._snappy_block = plain


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def worker(path: str, repeat: int) -> dict:
    """Inside the child: best of `repeat` timed runs, then the untimed tracemalloc run and
    the run with snappy timed."""
    baseline = _max_rss_mb()
    best, rows = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = decode_file(path)
        best = min(best, time.perf_counter() - start)
    peak = _max_rss_mb()
    arrow_peak = pa.default_memory_pool().max_memory() / 2**20
    tracemalloc.start()
    decode_file(path)
    traced_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    total, snappy = _snappy_seconds(path)
    return {
        "rows": rows,
        "seconds": best,
        "peak_rss_mb": peak,
        "rss_growth_mb": peak - baseline,
        "arrow_peak_mb": arrow_peak,
        "traced_peak_mb": traced_peak,
        "snappy_seconds": snappy,
        "snappy_share": snappy / total,
    }


def measure(path: Path, repeat: int) -> dict:
    child = subprocess.run(
        [sys.executable, __file__, "--worker", str(path), "--repeat", str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(child.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=50, help="size of each file (MB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; best kept")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--worker", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.repeat)))
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="inlong-bench-") as tmp:
        for shape, build in SHAPES.items():
            path = Path(tmp) / f"{shape}_snappy.bin"
            items = write_file(path, args.size_mb, build)
            size = path.stat().st_size
            got = measure(path, args.repeat)
            if got["rows"] != items:
                raise SystemExit(f"{shape}: decoded {got['rows']} of {items} items")
            results.append(
                {
                    "file": shape,
                    "items": items,
                    "mb": size / 1e6,
                    "items_per_s": items / got["seconds"],
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
    header = f"{'file':<6}{'items':>10}{'MB':>7}{'best s':>8}{'items/s':>12}{'MB/s':>8}"
    header += f"{'peak RSS MB':>13}{'RSS growth MB':>15}{'Arrow peak MB':>15}{'traced MB':>11}"
    header += f"{'snappy share':>14}"
    print(header)
    for r in results:
        print(
            f"{r['file']:<6}{r['items']:>10}{r['mb']:>7.1f}{r['seconds']:>8.2f}"
            f"{r['items_per_s']:>12,.0f}{r['mb_per_s']:>8.1f}{r['peak_rss_mb']:>13.0f}"
            f"{r['rss_growth_mb']:>15.0f}{r['arrow_peak_mb']:>15.0f}{r['traced_peak_mb']:>11.0f}"
            f"{r['snappy_share']:>13.1%}"
        )
    print(
        f"python {sys.version.split()[0]}, one process per file, {os.cpu_count()} cores on the "
        "machine; MB = file bytes (snappy-compressed bodies); snappy share = time inside the "
        "decompress calls / decode time, in a separate run with each call timed"
    )


if __name__ == "__main__":
    raise SystemExit(main())

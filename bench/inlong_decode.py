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

import random
import time
from pathlib import Path

import harness

from wirecodecs.inlong import encoder as enc
from wirecodecs.inlong import message

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
    return harness.decode("inlong", path, {"framing": "length_prefixed"}).rows


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


def worker(path: str, *, repeat: int) -> dict:
    """Inside the child: the measured runs, then the run with snappy timed."""
    got = harness.best_of(lambda: decode_file(path), repeat)
    total, snappy = _snappy_seconds(path)
    return {**got, "snappy_seconds": snappy, "snappy_share": snappy / total}


def bench(args, tmp: Path) -> list[dict]:
    results = []
    for shape, build in SHAPES.items():
        path = tmp / f"{shape}_snappy.bin"
        items = write_file(path, args.size_mb, build)
        got = harness.measure(__file__, [path], args.repeat)
        results.append(
            harness.result(got, items, path, label=f"{shape}:", unit="items", file=shape)
        )
    return results


COLUMNS: list[harness.Column] = [
    ("file", "<6", "file"),
    ("items", ">10", "items"),
    ("MB", ">7.1f", "mb"),
    ("best s", ">8.2f", "seconds"),
    ("items/s", ">12,.0f", "items_per_s"),
    ("MB/s", ">8.1f", "mb_per_s"),
    *harness.MEMORY_COLUMNS[:3],
    ("traced MB", ">11.0f", "traced_peak_mb"),
    ("snappy share", ">14.1%", "snappy_share"),
]


def _print_table(results: list[dict]) -> None:
    harness.print_table(
        results,
        COLUMNS,
        f"{harness.machine('file')}; MB = file bytes (snappy-compressed bodies); snappy share "
        "= time inside the decompress calls / decode time, in a separate run with each call "
        "timed",
    )


if __name__ == "__main__":
    raise SystemExit(harness.main(__doc__, "size of each file (MB)", worker, bench, _print_table))

"""InLongMsg decode throughput: the `inlong` file decoder on length-prefixed files, one core.

Not a test. Writes two files of about --size-mb MB into a temporary folder under $TMPDIR,
each a run of length-prefixed messages with snappy bodies, like DataProxy's MQ output:

* v4: SDK binary messages (MsgType 0x27), 50 CSV-like items of ~80-200 bytes per body,
  string ids and a DataProxy-style common attribute string;
* v1: DataProxy text messages, one snappy block of 50 such items per message.

and a Kafka log segment of each whose record values are the same messages. Each file and
its segment (`kafka+inlong`) are decoded in turn in a fresh child process (streamed from an
open file, every Arrow batch built). Reported: items/s and MB/s (file bytes) of the best of
--repeat runs, the segment's best time and its CPU time over the file's (the carried
payload's cost), the child's peak RSS and its growth over the state after imports, the
Arrow pool's high-water mark and tracemalloc's peak in one more, untimed run, and the share
of the file's CPU time the compiled snappy decoder takes on its blocks alone. Last, the
first and second decode in a fresh process of a one-message file (pure walk) and then of a
10 MB file (the compiled walk takes over), with an empty numba cache (compiles) and with
the cache that run filled (loads).

    ./wirelake bench inlong [--size-mb 50] [--repeat 3] [--json]
"""

from __future__ import annotations

import os
import random
import struct
import time
from pathlib import Path

import harness
import numpy as np

from wirecodecs import get
from wirecodecs.inlong import decoder
from wirecodecs.inlong import encoder as enc
from wirecodecs.kafka import encoder as kafka_enc

ITEMS_PER_MESSAGE = 50
WORDS = ["view", "buy", "cart", "home", "search", "pay", "ok", "fail", "cn", "de", "us", "web"]
DATA_TIME = 1_790_000_000
RECORDS_PER_BATCH = 16
FIRST_CALL_MB = 10  # the larger file of the first-call figures: past WALKS["inlong"].pure_below


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


def write_segment(path: Path, file: Path) -> None:
    """A Kafka log segment whose record values are the messages of the length-prefixed
    `file` (uncompressed v2 batches of RECORDS_PER_BATCH records), as DataProxy's Kafka
    sink writes them."""
    data = file.read_bytes()
    values = []
    pos = 0
    while pos < len(data):
        (length,) = decoder.PREFIX.unpack_from(data, pos)
        values.append(data[pos + 4 : pos + 4 + length])
        pos += 4 + length
    with path.open("wb") as out:
        for start in range(0, len(values), RECORDS_PER_BATCH):
            records = [kafka_enc.Record(value=v) for v in values[start : start + RECORDS_PER_BATCH]]
            out.write(kafka_enc.encode_log([kafka_enc.RecordBatch(records, base_offset=start)]))


def decode_file(path: str) -> int:
    return harness.decode("inlong", path, {"framing": "length_prefixed"}).rows


def decode_segment(path: str) -> int:
    return harness.decode("kafka+inlong", path, {}).rows


def _snappy_seconds(path: str) -> float:
    """Seconds the compiled snappy decoder takes for every block of the file alone (one
    call per block: an upper bound)."""
    from wirecodecs.inlong import (
        compiled,
    )  # imported here: the first-call figures need numba unloaded

    data = np.frombuffer(Path(path).read_bytes(), np.uint8)
    out = np.empty(1 << 20, np.uint8)
    spans = []
    pos = 0
    while pos < data.size:
        (length,) = decoder.PREFIX.unpack_from(data, pos)
        message = pos + 4
        if data[message + 1] == 4:  # V4: the body after the 25-byte header
            (size,) = struct.unpack_from(">i", data, message + 2 + 21)
            spans.append((message + 2 + 25, size))
        else:  # V1, one block: CreateTime, AttrDataCnt, AttrLen, Attr, ItemsLen, Compress
            (attr_len,) = struct.unpack_from(">H", data, message + 14)
            at = message + 16 + attr_len
            (size,) = struct.unpack_from(">i", data, at)
            spans.append((at + 5, size - 1))
        pos = message + length
    start = time.process_time()
    for at, size in spans:
        compiled.snappy(data, at, at + size, out, 1 << 27)
    return time.process_time() - start


def _timed(run) -> tuple[float, float]:
    """(wall, CPU) seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def worker(path: str, segment: str, *, repeat: int) -> dict:
    """Inside the child: the memory figures of the file decoder, then the file and the
    segment decoded in turn `repeat` times (best wall and CPU time of each), and the
    snappy share of the file's CPU time."""
    got = harness.best_of(lambda: decode_file(path), 1)  # memory first: not the segment's
    best = {"file": [float("inf")] * 2, "kafka": [float("inf")] * 2}
    for _ in range(repeat):
        for name, run in (
            ("file", lambda: decode_file(path)),
            ("kafka", lambda: decode_segment(segment)),
        ):
            best[name] = [min(pair) for pair in zip(best[name], _timed(run), strict=True)]
    got["seconds"], got["cpu_seconds"] = best["file"]
    got["kafka_seconds"], got["kafka_cpu_seconds"] = best["kafka"]
    got["kafka_ratio"] = got["kafka_cpu_seconds"] / got["cpu_seconds"]
    got["snappy_share"] = _snappy_seconds(path) / got["cpu_seconds"]
    return got


def first_call(small: str, large: str, *, repeat: int) -> dict:
    """Inside a fresh child: seconds of the registry's first look-up, of the first and the
    second decode of a one-message file (the pure walk: the process has read less than
    `WALKS["inlong"].pure_below`), then of a larger one (the compiled walk takes over: the first
    loads, or compiles, its code)."""
    del repeat
    start = time.perf_counter()
    get("inlong")  # the registry imports every format (some import numba)
    got = {"registry_seconds": time.perf_counter() - start}
    for name, path in (("small", small), ("large", large)):
        got[f"{name}_first"], _ = _timed(lambda: decode_file(path))  # noqa: B023
        got[f"{name}_second"], _ = _timed(lambda: decode_file(path))  # noqa: B023
    return got


def bench(args, tmp: Path) -> list[dict]:
    results = []
    for shape, build in SHAPES.items():
        path = tmp / f"{shape}_snappy.bin"
        items = write_file(path, args.size_mb, build)
        segment = tmp / f"{shape}_kafka.log"
        write_segment(segment, path)
        got = harness.measure(__file__, [path, segment], args.repeat)
        results.append(
            harness.result(got, items, path, label=f"{shape}:", unit="items", file=shape)
        )
    small, large = tmp / "small.bin", tmp / "large.bin"
    small.write_bytes(enc.length_prefixed([_v4(random.Random(7), 0)]))
    write_file(large, FIRST_CALL_MB, _v4)
    cache = tmp / "numba-cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    for cold in (True, False):  # an empty numba cache, then the one the first run filled
        got = harness.measure(__file__, ["first", small, large], 1, env)
        results.append({"file": "first call", "cold_cache": cold, **got})
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
    ("kafka+inlong s", ">16.2f", "kafka_seconds"),
    ("kafka/file CPU", ">16.2f", "kafka_ratio"),
]


def _print_table(results: list[dict]) -> None:
    harness.print_table(
        [r for r in results if "items" in r],
        COLUMNS,
        f"{harness.machine('file')}; MB = file bytes (snappy-compressed bodies); best s and "
        "kafka+inlong s: best wall time, file and segment decoded in turn; kafka/file CPU = "
        "ratio of their best CPU times; snappy share = CPU time of the compiled snappy "
        "decoder alone on every block / the file's best CPU time",
    )
    for r in results:
        if "small_first" in r:
            cache = "cold (compiles)" if r["cold_cache"] else "warm (loads)"
            print(
                f"fresh process, numba cache {cache}: registry {r['registry_seconds']:.2f} s, "
                f"one-message file {r['small_first']:.3f} s "
                f"first, {r['small_second'] * 1000:.1f} ms second; {FIRST_CALL_MB} MB file "
                f"{r['large_first']:.2f} s first, {r['large_second']:.2f} s second"
            )


def _worker(*args: str, repeat: int) -> dict:
    if args[0] == "first":
        return first_call(*args[1:], repeat=repeat)
    return worker(*args, repeat=repeat)


if __name__ == "__main__":
    raise SystemExit(harness.main(__doc__, "size of each file (MB)", _worker, bench, _print_table))

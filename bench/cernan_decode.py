"""cernan dump decode throughput: wirecodecs against fastavro reading the same containers.

Not a test. Writes a dump of about --size-mb MB of small-record v2 packets (20 records of
~70 bytes per packet, two KV pairs, SYNC set) per codec (null, deflate) into a temporary
folder under $TMPDIR, then decodes it with every reader in fresh child processes, so that
every measurement starts from the same state and its peak memory is its own:

* wirecodecs: the registered `cernan` decoder over an open file (streamed): records with
  the datum as JSON text (the default), packets rows, every Arrow batch built;
* wirecodecs-typed: the same with `datum_schema_file` (the datum as a typed struct);
* fastavro: `fastavro.reader` over each packet's container, the containers cut out of
  the file beforehand (untimed); every record materialised as a dict. This is the floor:
  what the Avro part alone costs, without framing, checks or Arrow.

Times are the best of --repeat runs (wall clock, including the file read for wirecodecs).
Memory: the child's peak RSS (`ru_maxrss`) and its growth after imports, the Arrow pool's
peak, and tracemalloc's peak in one more, untimed run. The last line gives the ratio
wirecodecs / fastavro (time per record).

    ./wirelake bench cernan [--size-mb 50] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import io
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

import fastavro
import pyarrow as pa

from wirecodecs.accounting import FileAccounting
from wirecodecs.cernan import encoder as enc
from wirecodecs.registry import TableRows, get, resolve_options

RECORDS_PER_PACKET = 20
CODECS = ("null", "deflate")
SCHEMA = {
    "type": "record",
    "name": "Request",
    "namespace": "bench.web-1",
    "fields": [
        {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "host", "type": "string"},
        {"name": "path", "type": "string"},
        {"name": "status", "type": "int"},
        {"name": "latency_ms", "type": ["null", "double"]},
        {"name": "user_id", "type": "long"},
    ],
}
_LENGTH = struct.Struct(">I")


def write_dump(path: Path, size_mb: int, codec: str, seed: int = 7) -> int:
    """A dump of about `size_mb` MB of v2 packets; returns its record count."""
    rng = random.Random(seed)
    target = size_mb * 1_000_000
    written = records = 0
    millis = 1_790_000_000_000
    with path.open("wb") as out:
        while written < target:
            batch = [
                {
                    "event_time": millis + i,
                    "host": f"web-{rng.randrange(16)}",
                    "path": rng.choice(["/", "/cart", "/search", "/orders/12345"]),
                    "status": rng.choice([200, 200, 200, 404, 500]),
                    "latency_ms": rng.choice([None, rng.random() * 300]),
                    "user_id": rng.randrange(10**9),
                }
                for i in range(RECORDS_PER_PACKET)
            ]
            avro = enc.container(SCHEMA, batch, codec=codec, sync_marker=rng.randbytes(16))
            frame = enc.frame(
                enc.Packet(
                    avro,
                    id=rng.getrandbits(64),
                    shard_by=rng.getrandbits(64),
                    kv=[("app", "shop"), ("env", "prod")],
                )
            )
            out.write(frame)
            written += len(frame)
            records += len(batch)
            millis += 1000
    return records


def _wirecodecs(path: str, options: dict) -> int:
    fmt = get("cernan")
    accounting = FileAccounting(source=path, format=fmt.name)
    rows = packets = 0
    with open(path, "rb") as stream:
        for item in fmt.decode(stream, path, accounting, resolve_options(fmt, options)):
            if isinstance(item, pa.RecordBatch):
                rows += item.num_rows
            elif isinstance(item, TableRows):
                packets += item.batch.num_rows
    if accounting.frames_bad or not accounting.balanced or packets != accounting.frames_good:
        raise RuntimeError(f"unexpected damage: {accounting}")
    return rows


def _containers(path: str) -> list[memoryview]:
    """Each packet's container, cut out by the length prefix and the v2 KV walk."""
    data = memoryview(Path(path).read_bytes())
    out = []
    pos = 0
    while pos < len(data):
        (length,) = _LENGTH.unpack_from(data, pos)
        payload = data[pos + 4 : pos + 4 + length]
        at = 25
        for _ in range(payload[24]):
            at += 1 + payload[at]  # key length and key
            (size,) = struct.unpack_from(">H", payload, at)
            at += 2 + size
        out.append(payload[at:])
        pos += 4 + length
    return out


def _fastavro(containers: list[memoryview]) -> int:
    rows = 0
    for container in containers:
        for _ in fastavro.reader(io.BytesIO(container)):
            rows += 1
    return rows


def worker(reader: str, path: str, repeat: int, avsc: str) -> dict:
    """Runs inside the child: decode `repeat` times, report the best time and peak RSS,
    then once more under tracemalloc (untimed) for the peak of Python memory."""
    if reader == "fastavro":
        containers = _containers(path)  # setup, untimed: fastavro needs them cut out

        def run() -> int:
            return _fastavro(containers)
    else:
        options = {"datum_schema_file": avsc} if reader == "wirecodecs-typed" else {}
        get("cernan")  # the registry imports every format: before the baseline

        def run() -> int:
            return _wirecodecs(path, options)

    baseline = _max_rss_mb()
    best = float("inf")
    rows = 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = run()
        best = min(best, time.perf_counter() - start)
    peak = _max_rss_mb()
    arrow_peak = pa.default_memory_pool().max_memory() / 2**20
    tracemalloc.start()
    run()
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


READERS = ("wirecodecs", "wirecodecs-typed", "fastavro")


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure(reader: str, path: Path, repeat: int, avsc: Path) -> dict:
    argv = [sys.executable, __file__, "--worker", reader, str(path), str(avsc)]
    child = subprocess.run(
        [*argv, "--repeat", str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(child.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=50, help="size of each dump (MB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; best kept")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument(
        "--worker", nargs=3, metavar=("READER", "FILE", "AVSC"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.repeat, args.worker[2])))
        return 0

    results = []
    with tempfile.TemporaryDirectory(prefix="cernan-bench-") as tmp:
        avsc = Path(tmp) / "request.avsc"
        avsc.write_text(json.dumps(SCHEMA))
        for codec in CODECS:
            path = Path(tmp) / f"cernan_{codec}.bin"
            records = write_dump(path, args.size_mb, codec)
            size = path.stat().st_size
            for reader in READERS:
                got = measure(reader, path, args.repeat, avsc)
                if got["rows"] != records:
                    raise SystemExit(f"{reader} decoded {got['rows']} of {records} records")
                results.append(
                    {
                        "reader": reader,
                        "codec": codec,
                        "records": records,
                        "mb": size / 1e6,
                        "records_per_s": records / got["seconds"],
                        "mb_per_s": size / 1e6 / got["seconds"],
                        **got,
                    }
                )
    for result in results:
        floor = next(
            r for r in results if r["codec"] == result["codec"] and r["reader"] == "fastavro"
        )
        result["vs_fastavro"] = result["seconds"] / floor["seconds"]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print_table(results)
    return 0


def _print_table(results: list[dict]) -> None:
    header = f"{'reader':<18}{'codec':>8}{'records':>10}{'MB':>7}{'best s':>8}"
    header += f"{'records/s':>12}{'MB/s':>8}{'x fastavro':>11}{'peak RSS MB':>13}"
    header += f"{'RSS growth MB':>15}{'Arrow peak MB':>15}{'traced peak MB':>16}"
    print(header)
    for r in results:
        print(
            f"{r['reader']:<18}{r['codec']:>8}{r['records']:>10}{r['mb']:>7.1f}"
            f"{r['seconds']:>8.2f}{r['records_per_s']:>12,.0f}{r['mb_per_s']:>8.1f}"
            f"{r['vs_fastavro']:>11.2f}{r['peak_rss_mb']:>13.0f}{r['rss_growth_mb']:>15.0f}"
            f"{r['arrow_peak_mb']:>15.0f}{r['traced_peak_mb']:>16.0f}"
        )
    print(
        f"python {sys.version.split()[0]}, one process per measurement, {os.cpu_count()} "
        "cores on the machine; x fastavro = time / fastavro's time on the same containers "
        "(fastavro: containers cut out beforehand, whole file in memory, dicts only); "
        "RSS = ru_maxrss of that process; Arrow peak = the Arrow pool's high-water mark; "
        "traced peak = tracemalloc's in one more, untimed run"
    )


if __name__ == "__main__":
    raise SystemExit(main())

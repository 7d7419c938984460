"""cernan dump decode throughput: wirecodecs against fastavro reading the same containers.

Not a test. Writes a dump of about --size-mb MB of small-record v2 packets (20 records of
~70 bytes per packet, two KV pairs, SYNC set) per codec (null, deflate) into a temporary
folder under $TMPDIR, then decodes it with every reader in fresh child processes, so that
every measurement starts from the same state and its peak memory is its own:

* wirecodecs: the registered `cernan` decoder over an open file (streamed): records with
  the datum as JSON text (the default), packets rows, every Arrow batch built; its
  compiled JSON walk takes every packet of a file of 4 MB or more (docs/cernan.md §8);
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

import io
import json
import random
import struct
from pathlib import Path

import fastavro
import harness

from wirecodecs.cernan import encoder as enc
from wirecodecs.registry import get

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


def write_dump(path: Path, size_mb: float, codec: str, seed: int = 7, packet_ms: int = 1000) -> int:
    """A dump of about `size_mb` MB of v2 packets, one every `packet_ms` ms; returns its
    record count."""
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
            millis += packet_ms
    return records


def _wirecodecs(path: str, options: dict) -> int:
    decoded = harness.decode("cernan", path, options)
    if decoded.table_rows != decoded.accounting.frames_good:  # a packets row per packet
        raise RuntimeError(f"unexpected damage: {decoded.accounting}")
    return decoded.rows


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


def worker(reader: str, path: str, avsc: str, *, repeat: int) -> dict:
    """Runs inside the child: the reader's set-up, then the measured runs."""
    if reader == "fastavro":
        containers = _containers(path)  # setup, untimed: fastavro needs them cut out

        def run() -> int:
            return _fastavro(containers)
    else:
        options = {"datum_schema_file": avsc} if reader == "wirecodecs-typed" else {}
        get("cernan")  # the registry imports every format: before the baseline

        def run() -> int:
            return _wirecodecs(path, options)

    return harness.best_of(run, repeat)


READERS = ("wirecodecs", "wirecodecs-typed", "fastavro")


def bench(args, tmp: Path) -> list[dict]:
    results = []
    avsc = tmp / "request.avsc"
    avsc.write_text(json.dumps(SCHEMA))
    for codec in CODECS:
        path = tmp / f"cernan_{codec}.bin"
        records = write_dump(path, args.size_mb, codec)
        for reader in READERS:
            got = harness.measure(__file__, [reader, path, avsc], args.repeat)
            results.append(
                harness.result(got, records, path, label=reader, reader=reader, codec=codec)
            )
    for result in results:
        floor = next(
            r for r in results if r["codec"] == result["codec"] and r["reader"] == "fastavro"
        )
        result["vs_fastavro"] = result["seconds"] / floor["seconds"]
    return results


COLUMNS: list[harness.Column] = [
    ("reader", "<18", "reader"),
    ("codec", ">8", "codec"),
    ("records", ">10", "records"),
    ("MB", ">7.1f", "mb"),
    ("best s", ">8.2f", "seconds"),
    ("records/s", ">12,.0f", "records_per_s"),
    ("MB/s", ">8.1f", "mb_per_s"),
    ("x fastavro", ">11.2f", "vs_fastavro"),
    *harness.MEMORY_COLUMNS,
]


def _print_table(results: list[dict]) -> None:
    harness.print_table(
        results,
        COLUMNS,
        f"{harness.machine()}; x fastavro = time / fastavro's time on the same containers "
        "(fastavro: containers cut out beforehand, whole file in memory, dicts only); "
        "RSS = ru_maxrss of that process; Arrow peak = the Arrow pool's high-water mark; "
        "traced peak = tracemalloc's in one more, untimed run",
    )


if __name__ == "__main__":
    raise SystemExit(harness.main(__doc__, "size of each dump (MB)", worker, bench, _print_table))

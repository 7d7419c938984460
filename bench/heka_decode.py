"""Heka decode throughput: wirecodecs against the protobuf runtime's own parser, one core.

Not a test. Writes Heka streams of about --size-mb MB into a temporary folder under
$TMPDIR (web-log messages of ~450 bytes with five typed fields, as the sample day has):
`plain` (unsigned protobuf bodies) and `signed` (HMAC-MD5 signed, every 7th body a raw
snappy block). Each is decoded in fresh child processes, so that every measurement starts
from the same state and its peak memory is its own:

* wirecodecs: the registered `heka` decoder over an open file (streamed): framing and
  resync, HMAC verified, snappy trial, every Arrow batch built;
* protobuf-parse: the runtime (upb) `Message.ParseFromString` on the same message bodies
  (snappy ones given already inflated), cut out of the stream before the clock starts:
  the floor any protobuf-based reader pays before it has a single Python value;
* protobuf-values: the same, then every field read out of the parsed message (presence
  checked) into Python values, which is what a runtime-based decoder must do before it
  can build rows;
* wire-reader: the decoder's own wire reader (`heka.message.parse_message`) on the same
  bodies, giving the same values plus unknown fields and every string's bytes: the
  like-for-like comparison with protobuf-values that chose the hand-written reader.

The message classes are built at runtime from message.proto written out as a
FileDescriptorProto (tests/codecs/heka/heka_proto.py; no protoc is needed). Times are the
best of --repeat runs; memory is the child's peak RSS, its growth over the state after
imports, the Arrow pool's peak and tracemalloc's peak in one more, untimed run.

    ./wirelake bench heka [--size-mb 50] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
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

import cramjam
import pyarrow as pa

from wirecodecs.accounting import FileAccounting
from wirecodecs.heka import encoder as enc
from wirecodecs.heka.message import parse_header, parse_message
from wirecodecs.registry import get, resolve_options

ROOT = Path(__file__).resolve().parent.parent
SIGNER = enc.Signer("bench", 1, b"bench-key")
SHAPES = ("plain", "signed")


def _heka_proto():
    """tests/codecs/heka/heka_proto.py: message.proto as runtime classes (one definition,
    shared with the tests that use it as their oracle)."""
    path = ROOT / "tests" / "codecs" / "heka" / "heka_proto.py"
    spec = importlib.util.spec_from_file_location("heka_proto", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _message(rng: random.Random, ns: int) -> enc.Message:
    status = rng.choice([200, 200, 200, 204, 301, 404, 500])
    return enc.Message(
        uuid=rng.randbytes(16),
        timestamp=ns,
        type="nginx.access",
        logger="web.nginx",
        severity=6,
        payload=json.dumps(
            {"path": rng.choice(["/", "/api/v1/items", "/login"]), "status": status}
        ),
        env_version="0.10",
        pid=4242,
        hostname="web-01.example.net",
        fields=[
            enc.Field("status", "INTEGER", value_integer=[status]),
            enc.Field("request_time", "DOUBLE", "s", value_double=[rng.random()]),
            enc.Field("user_agent", value_string=["Mozilla/5.0 (X11; Linux x86_64) " * 4]),
            enc.Field("tags", value_string=["edge", "eu"]),
            enc.Field("cached", "BOOL", value_bool=[rng.random() < 0.3]),
        ],
    )


def write_stream(path: Path, size_mb: int, shape: str, seed: int = 7) -> int:
    """A Heka stream of about `size_mb` MB; returns its record count."""
    rng = random.Random(seed)
    target = size_mb * 1_000_000
    written = records = 0
    ns = 1_790_000_000 * 10**9
    with path.open("wb") as out:
        while written < target:
            body = enc.encode_message(_message(rng, ns + records * 1000))
            if shape == "signed" and records % 7 == 0:
                body = enc.snappy_block(body)
            data = enc.frame(body, SIGNER if shape == "signed" else None)
            out.write(data)
            written += len(data)
            records += 1
    return records


def protobuf_bodies(path: str, shape: str) -> list[bytes]:
    """The protobuf bytes of every record of a stream written by `write_stream` (its
    snappy bodies inflated), cut out by the framing alone."""
    data = Path(path).read_bytes()
    bodies, pos = [], 0
    while pos < len(data):
        hlen = data[pos + 1]
        length = parse_header(data[pos + 2 : pos + 2 + hlen]).message_length
        body = data[pos + 3 + hlen : pos + 3 + hlen + length]
        if shape == "signed" and len(bodies) % 7 == 0:
            body = bytes(cramjam.snappy.decompress_raw(body))
        bodies.append(body)
        pos += 3 + hlen + length
    return bodies


def _wirecodecs(path: str, keys_file: str) -> int:
    fmt = get("heka")
    options = resolve_options(fmt, {"hmac_keys_file": keys_file})
    accounting = FileAccounting(source=path, format=fmt.name)
    rows = 0
    with open(path, "rb") as stream:
        for item in fmt.decode(stream, path, accounting, options):
            if isinstance(item, pa.RecordBatch):
                rows += item.num_rows
    if accounting.frames_bad or accounting.bytes_skipped or not accounting.balanced:
        raise RuntimeError(f"unexpected damage: {accounting}")
    return rows


def _parse(message_class, bodies: list[bytes]) -> int:
    for body in bodies:
        message_class().ParseFromString(body)
    return len(bodies)


def _values(message_class, bodies: list[bytes]) -> int:
    def text(msg, name):
        return getattr(msg, name) if msg.HasField(name) else None

    for body in bodies:
        m = message_class()
        m.ParseFromString(body)
        (
            m.uuid,
            m.timestamp,
            text(m, "type"),
            text(m, "logger"),
            text(m, "severity"),
            text(m, "payload"),
            text(m, "env_version"),
            text(m, "pid"),
            text(m, "hostname"),
            [
                (
                    f.name,
                    text(f, "value_type"),
                    text(f, "representation"),
                    list(f.value_string),
                    list(f.value_bytes),
                    list(f.value_integer),
                    list(f.value_double),
                    list(f.value_bool),
                )
                for f in m.fields
            ],
        )
    return len(bodies)


def _wire_reader(_, bodies: list[bytes]) -> int:
    for body in bodies:
        parse_message(body)
    return len(bodies)


READERS = {
    "wirecodecs": None,  # the whole decoder over the file
    "wire-reader": _wire_reader,
    "protobuf-parse": _parse,
    "protobuf-values": _values,
}


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def worker(reader: str, path: str, shape: str, keys_file: str, repeat: int) -> dict:
    """Runs inside the child: prepare, then run `repeat` times; report the best time and
    peak memory, then once more under tracemalloc (untimed)."""
    if reader == "wirecodecs":
        get("heka")  # the registry imports every format once: not part of the baseline

        def run() -> int:
            return _wirecodecs(path, keys_file)
    else:
        _, message_class, _ = _heka_proto().classes()
        bodies = protobuf_bodies(path, shape)
        step = READERS[reader]

        def run() -> int:
            return step(message_class, bodies)

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


def measure(reader: str, path: Path, shape: str, keys_file: Path, repeat: int) -> dict:
    child = subprocess.run(
        [
            sys.executable,
            __file__,
            "--worker",
            reader,
            str(path),
            shape,
            str(keys_file),
            "--repeat",
            str(repeat),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(child.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=50, help="size of each stream (MB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; best kept")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument(
        "--worker", nargs=4, metavar=("READER", "FILE", "SHAPE", "KEYS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.repeat)))
        return 0

    results = []
    with tempfile.TemporaryDirectory(prefix="heka-bench-") as tmp:
        keys = Path(tmp) / "keys.json"
        keys.write_text(json.dumps({f"{SIGNER.name}_{SIGNER.key_version}": "bench-key"}))
        for shape in SHAPES:
            path = Path(tmp) / f"{shape}.heka"
            records = write_stream(path, args.size_mb, shape)
            size = path.stat().st_size
            for reader in READERS:
                got = measure(reader, path, shape, keys, args.repeat)
                if got["rows"] != records:
                    raise SystemExit(f"{reader} decoded {got['rows']} of {records} records")
                results.append(
                    {
                        "reader": reader,
                        "stream": shape,
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
    header = f"{'reader':<17}{'stream':>7}{'records':>10}{'MB':>7}{'best s':>8}"
    header += f"{'records/s':>12}{'MB/s':>8}{'peak RSS MB':>13}{'RSS growth MB':>15}"
    header += f"{'Arrow peak MB':>15}{'traced peak MB':>16}{'x floor':>9}"
    print(header)
    floor = {r["stream"]: r["seconds"] for r in results if r["reader"] == "protobuf-parse"}
    for r in results:
        print(
            f"{r['reader']:<17}{r['stream']:>7}{r['records']:>10}{r['mb']:>7.1f}"
            f"{r['seconds']:>8.2f}{r['records_per_s']:>12,.0f}{r['mb_per_s']:>8.1f}"
            f"{r['peak_rss_mb']:>13.0f}{r['rss_growth_mb']:>15.0f}{r['arrow_peak_mb']:>15.0f}"
            f"{r['traced_peak_mb']:>16.0f}{r['seconds'] / floor[r['stream']]:>9.1f}"
        )
    print(
        f"python {sys.version.split()[0]}, one process per measurement, {os.cpu_count()} "
        "cores on the machine; x floor = time / protobuf-parse time on the same stream; the "
        "protobuf readers are timed on bodies already cut out of the stream and inflated "
        "(and hold them all in memory); RSS = ru_maxrss of that process"
    )


if __name__ == "__main__":
    raise SystemExit(main())

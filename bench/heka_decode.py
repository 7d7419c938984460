"""Heka decode throughput: wirecodecs against the protobuf runtime's own parser, one core.

Not a test. Writes Heka streams of about --size-mb MB into a temporary folder under
$TMPDIR (web-log messages of ~450 bytes with five typed fields, as the sample day has):
`plain` (unsigned protobuf bodies) and `signed` (HMAC-MD5 signed, every 7th body a raw
snappy block). Each is decoded in fresh child processes, so that every measurement starts
from the same state and its peak memory is its own:

* wirecodecs: the registered `heka` decoder over an open file (streamed): framing and
  resync, HMAC verified, snappy trial, every Arrow batch built (the compiled walk);
* wirecodecs-pure: the same with the decoder's pure-Python walk, its twin (docs/heka.md,
  "Compiled walk");
* protobuf-parse: the runtime (upb) `Message.ParseFromString` on the same message bodies
  (snappy ones given already inflated), cut out of the stream before the clock starts:
  the floor any protobuf-based reader pays before it has a single Python value;
* protobuf-values: the same, then every field read out of the parsed message (presence
  checked) into Python values, which is what a runtime-based decoder must do before it
  can build rows;
* wire-reader: the pure walk's wire reader (`heka.message.parse_message`) on the same
  bodies, giving the same values plus unknown fields and every string's bytes: the
  like-for-like comparison with protobuf-values that chose the hand-written reader.

The message classes are built at runtime from message.proto written out as a
FileDescriptorProto (tests/codecs/heka/heka_proto.py; no protoc is needed). Times are the
best of --repeat runs; memory is the child's peak RSS, its growth over the state after
imports, the Arrow pool's peak and tracemalloc's peak in one more, untimed run.

    ./wirelake bench heka [--size-mb 50] [--repeat 3] [--json]
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
from pathlib import Path

import cramjam
import harness

from wirecodecs.heka import encoder as enc
from wirecodecs.heka.message import parse_header, parse_message
from wirecodecs.registry import get

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
    decoded = harness.decode("heka", path, {"hmac_keys_file": keys_file})
    if decoded.accounting.bytes_skipped:
        raise RuntimeError(f"unexpected damage: {decoded.accounting}")
    return decoded.rows


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
    "wirecodecs-pure": None,  # the same, pure-Python walk
    "wire-reader": _wire_reader,
    "protobuf-parse": _parse,
    "protobuf-values": _values,
}


def worker(reader: str, path: str, shape: str, keys_file: str, *, repeat: int) -> dict:
    """Runs inside the child: the reader's set-up, then the measured runs."""
    if reader.startswith("wirecodecs"):
        get("heka")  # the registry imports every format once: not part of the baseline
        if reader == "wirecodecs-pure":
            os.environ["WIRELAKE_WALK"] = "pure"  # this child only

        def run() -> int:
            return _wirecodecs(path, keys_file)
    else:
        _, message_class, _ = _heka_proto().classes()
        bodies = protobuf_bodies(path, shape)
        step = READERS[reader]

        def run() -> int:
            return step(message_class, bodies)

    return harness.best_of(run, repeat)


def bench(args, tmp: Path) -> list[dict]:
    results = []
    keys = tmp / "keys.json"
    keys.write_text(json.dumps({f"{SIGNER.name}_{SIGNER.key_version}": "bench-key"}))
    for shape in SHAPES:
        path = tmp / f"{shape}.heka"
        records = write_stream(path, args.size_mb, shape)
        for reader in READERS:
            got = harness.measure(__file__, [reader, path, shape, keys], args.repeat)
            results.append(
                harness.result(got, records, path, label=reader, reader=reader, stream=shape)
            )
    return results


def _print_table(results: list[dict]) -> None:
    floor = {r["stream"]: r["seconds"] for r in results if r["reader"] == "protobuf-parse"}
    columns: list[harness.Column] = [
        ("reader", "<17", "reader"),
        ("stream", ">7", "stream"),
        ("records", ">10", "records"),
        ("MB", ">7.1f", "mb"),
        ("best s", ">8.2f", "seconds"),
        ("records/s", ">12,.0f", "records_per_s"),
        ("MB/s", ">8.1f", "mb_per_s"),
        *harness.MEMORY_COLUMNS,
        ("x floor", ">9.1f", lambda r: r["seconds"] / floor[r["stream"]]),
    ]
    harness.print_table(
        results,
        columns,
        f"{harness.machine()}; x floor = time / protobuf-parse time on the same stream; the "
        "protobuf readers are timed on bodies already cut out of the stream and inflated "
        "(and hold them all in memory); RSS = ru_maxrss of that process",
    )


if __name__ == "__main__":
    raise SystemExit(harness.main(__doc__, "size of each stream (MB)", worker, bench, _print_table))

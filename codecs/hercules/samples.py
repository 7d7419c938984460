"""Sample landing days of Hercules log events for the two Hercules sources (dags/sources.yaml).

A fleet of services logs through Vostok's Hercules client: log events in the schema of
doc/event-schema/log-event-schema.md (common tags under `properties`, level, message,
template, exceptions with stack frames as vectors of containers) plus the extra tags
real services add (every scalar type, UUIDs, vectors, nulls). They land as:

* `hercules`: gate batch files (/stream/send bodies: int32 count, events), one of them
  LZ4-compressed (`.lz4`, as sent with `Content-Encoding: lz4`);
* `hercules_kafka`: the gate's Kafka topic, one record per event, key = the event UUID.

Damage on purpose, recorded in the `SampleFile` counts: an event whose first type byte is
unknown (quarantined, the events after it kept), a batch cut inside its last event
(truncated tail), a Kafka record value cut short (quarantined by the payload codec).
`log_event` is also what the benchmark decodes.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from pathlib import Path

from wirecodecs.hercules import encoder as enc
from wirecodecs.hercules.encoder import Value
from wirecodecs.kafka import encoder as kafka_enc
from wirecodecs.sample_day import DAY_MS, SampleFile

TICKS_PER_MS = 10_000
PROJECTS = (("shop", "production"), ("shop", "staging"), ("billing", "production"))
APPS = ("api", "worker", "gateway", "scheduler")
LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR")
TEMPLATES = (
    "Request {Method} {Path} served in {ElapsedMs} ms with {StatusCode}",
    "Order {OrderId} moved to state {State}",
    "Cache {Cache} hit ratio {Ratio}",
    "Retrying {Operation} after {Attempt} attempts",
)
EXCEPTIONS = ("System.TimeoutException", "System.IO.IOException", "NullReferenceException")


def _s(text: str) -> Value:
    return Value("String", text)


def _frames(rng: random.Random) -> Value:
    frames = [
        [
            ("function", _s(f"Handle{rng.randrange(40)}")),
            ("type", _s(f"Shop.Service{rng.randrange(9)}")),
            ("file", _s(f"/src/Service{rng.randrange(9)}.cs")),
            ("line", Value("Integer", rng.randrange(1, 2000))),
            ("column", Value("Short", rng.randrange(1, 120))),
        ]
        for _ in range(rng.randrange(1, 5))
    ]
    return Value("Vector", frames, "Container")


def _exception(rng: random.Random, depth: int = 0) -> Value:
    tags = [
        ("type", _s(rng.choice(EXCEPTIONS))),
        ("message", _s("operation failed: " + "x" * rng.randrange(0, 60))),
        ("stackFrames", _frames(rng)),
    ]
    if depth == 0 and rng.random() < 0.5:
        inner = [_exception(rng, depth + 1).value for _ in range(rng.randrange(1, 3))]
        tags.append(("innerExceptions", Value("Vector", inner, "Container")))
    return Value("Container", tags)


def log_event(rng: random.Random, ticks: int) -> enc.Event:
    """A realistic log event at `ticks`: 10-30 tags, the common tags nested."""
    project, environment = rng.choice(PROJECTS)
    level = rng.choice(LEVELS)
    template = rng.choice(TEMPLATES)
    properties = [
        ("project", _s(project)),
        ("environment", _s(environment)),
        ("application", _s(rng.choice(APPS))),
        ("host", _s(f"{rng.choice(APPS)}-{rng.randrange(12):02d}.dc1")),
        ("threadId", Value("Integer", rng.randrange(1, 300))),
        ("traceId", Value("UUID", uuid.UUID(int=rng.getrandbits(128)))),
    ]
    if rng.random() < 0.3:
        properties.insert(1, ("subproject", _s("checkout")))
    tags = [
        ("properties", Value("Container", properties)),
        ("level", _s(level)),
        ("messageTemplate", _s(template)),
        ("message", _s(template.replace("{", "").replace("}", "") + " #" * rng.randrange(3))),
        ("utcOffset", Value("Long", 3 * 3600 * 10_000_000)),
        ("elapsedMs", Value("Double", round(rng.expovariate(1 / 40), 3))),
        ("statusCode", Value("Short", rng.choice((200, 200, 201, 404, 500)))),
        ("success", Value("Flag", level not in ("WARN", "ERROR"))),
        ("priority", Value("Byte", rng.randrange(256))),
        ("sampleRate", Value("Float", rng.choice((1.0, 0.5, 0.125)))),
        ("bytesSent", Value("Long", rng.randrange(1 << 40))),
        ("retries", Value("Integer", rng.randrange(4))),
        (
            "tags",
            Value(
                "Vector", [rng.choice(("web", "db", "cache", "auth")) for _ in range(3)], "String"
            ),
        ),
    ]
    extras = [
        ("userId", Value("Long", rng.randrange(10**9))),
        ("sessionId", Value("UUID", uuid.UUID(int=rng.getrandbits(128)))),
        ("region", _s(rng.choice(("eu-west", "us-east", "ap-south")))),
        ("latencies", Value("Vector", [rng.randrange(1, 900) for _ in range(5)], "Integer")),
        ("weights", Value("Vector", [rng.random() for _ in range(3)], "Double")),
        ("checksum", Value("Vector", rng.randbytes(8), "Byte")),
        ("parentSpan", Value("Null")),
        ("cached", Value("Flag", rng.random() < 0.5)),
        ("shard", Value("Short", rng.randrange(64))),
        (
            "http",
            Value(
                "Container",
                [
                    ("method", _s("GET")),
                    ("path", _s("/api/v1/orders")),
                    ("query", Value("Container", [("page", Value("Integer", 2))])),
                ],
            ),
        ),
        (
            "matrix",
            Value(
                "Vector",
                [Value("Vector", [1, 2], "Integer"), Value("Vector", ["a"], "String")],
                "Vector",
            ),
        ),
        ("gaps", Value("Vector", [None, None], "Null")),
        ("features", Value("Vector", [True, False, True], "Flag")),
        ("build", _s(f"2026.11.{rng.randrange(1, 30)}")),
        ("memoryMb", Value("Float", rng.uniform(100, 4000))),
        ("attempt", Value("Byte", rng.randrange(1, 5))),
    ]
    tags += rng.sample(extras, rng.randrange(0, len(extras) + 1))
    if level == "ERROR":
        tags.append(("exception", _exception(rng)))
    return enc.Event(ticks, uuid.UUID(int=rng.getrandbits(128), version=4), tags)


def _day_ticks(day: dt.date, rng: random.Random, count: int) -> list[int]:
    """`count` event times inside `day`, in order, as 100-ns ticks."""
    start = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()) * 1000
    return sorted(
        (start + rng.randrange(DAY_MS - 1)) * TICKS_PER_MS + rng.randrange(TICKS_PER_MS)
        for _ in range(count)
    )


def _events(day: dt.date, rng: random.Random, count: int) -> list[bytes]:
    return [enc.encode_event(log_event(rng, ticks)) for ticks in _day_ticks(day, rng, count)]


def corrupt_first_type(event: bytes) -> bytes:
    """`event` with its first tag's type byte set to 0x0C, a code Hercules does not define."""
    key_length = event[27]  # after version, timestamp, uuid (25 bytes) and the u16 count
    out = bytearray(event)
    out[28 + key_length] = 0x0C
    return bytes(out)


def _rng(seed: int, day: dt.date, name: str) -> random.Random:
    return random.Random(f"{seed}:{day.isoformat()}:hercules:{name}")


def gate_batch_day(out: Path, day: dt.date, seed: int) -> list[SampleFile]:
    """Source `hercules`: four gate batches from two gates; one LZ4 body, one corrupt
    event in a batch, one batch cut inside its last event."""
    files = []
    for index, (gate, damage) in enumerate(
        [("gate-1", None), ("gate-1", "lz4"), ("gate-2", "corrupt"), ("gate-2", "cut")]
    ):
        rng = _rng(seed, day, f"batch{index}")
        events = _events(day, rng, rng.randrange(120, 180))
        name = f"{gate}/batch-{index:04d}.bin"
        counts: dict[str, int] = {}
        declared = len(events)
        if damage == "corrupt":
            bad = len(events) // 2
            events[bad] = corrupt_first_type(events[bad])
            counts = {"undecodable_frames": 1, "undecodable_records": 1}
        body = enc.encode_batch(events)
        if damage == "cut":  # the count declares the cut event: a record lost
            cut = len(events.pop()) // 2
            body = body[:-cut]
            counts = {"truncated_tail_bytes": len(body) - 4 - sum(map(len, events)),
                      "undecodable_records": 1}  # fmt: skip
        elif damage == "lz4":
            body = enc.lz4_body(body)
            name += ".lz4"
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        files.append(SampleFile(path, frames=len(events), records=declared, **counts))
    return files


def kafka_day(out: Path, day: dt.date, seed: int) -> list[SampleFile]:
    """Source `hercules_kafka`: two partitions of the gate's topic (one event per record,
    key = the event UUID, batches with every Kafka codec); one record value cut short."""
    files = []
    codecs = list(kafka_enc.CODECS)
    for partition in range(2):
        rng = _rng(seed, day, f"kafka{partition}")
        ticks = _day_ticks(day, rng, 150)
        events = [log_event(rng, tick) for tick in ticks]
        values = [enc.encode_event(event) for event in events]
        damaged = 0
        if partition == 1:
            values[40] = values[40][: len(values[40]) // 2]
            damaged = 1
        batches, start = [], 0
        while start < len(values):
            size = rng.randrange(1, 20)
            records = [
                kafka_enc.Record(
                    key=event.uuid.bytes, value=value, timestamp=tick // TICKS_PER_MS + 150
                )
                for event, value, tick in zip(
                    events[start : start + size],
                    values[start : start + size],
                    ticks[start : start + size],
                    strict=True,
                )
            ]
            codec = codecs[len(batches) % len(codecs)]
            batches.append(kafka_enc.RecordBatch(records, base_offset=start, codec=codec))
            start += len(records)
        path = out / f"logs-{partition}" / "00000000000000000000.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(kafka_enc.encode_log(batches))
        files.append(
            SampleFile(
                path,
                frames=len(batches),
                records=len(values),
                undecodable_frames=damaged,
                undecodable_records=damaged,
            )
        )
    return files

"""Sample cernan landing day: what a fleet of pycernan / Erlang clients sends through a
spooling proxy in one day (v1 and v2 packets, three schemas, every codec, SYNC on and
off), with a few packets damaged on purpose and one file cut mid-packet."""

from __future__ import annotations

import datetime as dt
import random
import uuid
from pathlib import Path

from wirecodecs.cernan import encoder as enc
from wirecodecs.sample_day import DAY_MS, SampleFile

CODECS = ("null", "deflate", "snappy")
_TS_MILLIS = {"type": "long", "logicalType": "timestamp-millis"}

# Three producer schemas; every one has `event_time` (the sources config points at it).
PAGE_VIEW = {
    "type": "record",
    "name": "PageView",
    "namespace": "wirelake.sample",
    "fields": [
        {"name": "event_time", "type": _TS_MILLIS},
        {"name": "user", "type": "string"},
        {"name": "path", "type": "string"},
        {"name": "latency_ms", "type": ["null", "int"]},
    ],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "wirelake.sample",
    "fields": [
        {"name": "event_time", "type": _TS_MILLIS},
        {"name": "order_id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "items", "type": {"type": "array", "items": "string"}},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
        {"name": "amount_cents", "type": "long"},
    ],
}


def blueox_event(host: str) -> dict:
    """BlueOx's schema: namespace blueox.<host> (not a valid Avro name; producers send it),
    event_time a plain long in ms."""
    return {
        "type": "record",
        "name": "blueox_event",
        "namespace": f"blueox.{host}",
        "fields": [
            {"name": "event_time", "type": "long"},
            {"name": "type", "type": "string"},
            {"name": "host", "type": "string"},
            {"name": "body", "type": ["null", "string"]},
        ],
    }


def _datum(schema: dict, rng: random.Random, millis: int) -> dict:
    name = schema["name"]
    if name == "PageView":
        return {
            "event_time": dt.datetime.fromtimestamp(millis / 1000, dt.UTC),
            "user": f"user-{rng.randrange(1000)}",
            "path": rng.choice(["/", "/cart", "/search?q=ü", "/orders"]),
            "latency_ms": rng.choice([None, rng.randrange(2000)]),
        }
    if name == "Order":
        return {
            "event_time": dt.datetime.fromtimestamp(millis / 1000, dt.UTC),
            "order_id": str(uuid.UUID(int=rng.getrandbits(128))),
            "items": [f"sku-{rng.randrange(99)}" for _ in range(rng.randrange(4))],
            "state": rng.choice(["NEW", "PAID"]),
            "amount_cents": rng.randrange(100_000),
        }
    host = schema["namespace"].split(".", 1)[1]
    body = rng.choice([None, '{"status": 200}'])
    return {"event_time": millis, "type": "request", "host": host, "body": body}


def _packet(rng: random.Random, schema: dict, start_ms: int, index: int) -> tuple[enc.Packet, int]:
    count = rng.randrange(1, 12)
    records = [_datum(schema, rng, start_ms + rng.randrange(DAY_MS)) for _ in range(count)]
    version = 1 if index % 7 == 3 else 2
    avro = enc.container(
        schema,
        records,
        codec=CODECS[index % 3],
        records_per_block=rng.choice([None, 1, 3]),
        sync_marker=rng.randbytes(16),
    )
    kv = [("host", "web-1"), ("app", "shop")] if version == 2 and index % 2 else []
    packet = enc.Packet(
        avro,
        version=version,
        control=index % 2,
        id=rng.getrandbits(64),
        shard_by=rng.getrandbits(64),
        kv=kv,
    )
    return packet, count


def _damage(packet: enc.Packet, how: str) -> enc.Packet:
    """A packet that must be quarantined: unknown version, the pycernan unicode bug, or a
    corrupt block (header fine: cernan itself would have forwarded it)."""
    if how == "version":
        return enc.Packet(packet.avro, version=3, id=packet.id, shard_by=packet.shard_by)
    if how == "unicode":
        return enc.Packet(packet.avro, kv=[("city", "Zürich")], char_counted_kv=True)
    avro = bytearray(packet.avro)
    avro[-20] ^= 0xFF  # inside the last block's data
    return enc.Packet(bytes(avro), id=packet.id, shard_by=packet.shard_by)


def cernan_sample_day(out_dir: Path, day: dt.date, seed: int) -> list[SampleFile]:
    """Three proxy spool files for `day`: ~40 packets each, 3 damaged packets in the first
    two files, a packet cut in half at the end of the last."""
    rng = random.Random(seed)
    start_ms = int(dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC).timestamp() * 1000)
    schemas = [PAGE_VIEW, ORDER, blueox_event("web-1"), blueox_event("worker-7")]
    files = []
    for number, damage in enumerate([("version", "unicode"), ("block",), ()]):
        frames, records, bad_frames, bad_records = [], 0, 0, 0
        damaged_at = {5 + 11 * k: how for k, how in enumerate(damage)}
        for index in range(40):
            packet, count = _packet(rng, schemas[(index + number) % len(schemas)], start_ms, index)
            if index in damaged_at:
                packet = _damage(packet, damaged_at[index])
                bad_frames += 1
                bad_records += count
            frames.append(enc.frame(packet))
            records += count
        data = b"".join(frames)
        tail = b""
        if number == 2:  # the proxy died mid-write: half a packet at the end
            packet, _ = _packet(rng, PAGE_VIEW, start_ms, 41)
            tail = enc.frame(packet)[: len(enc.frame(packet)) // 2]
        path = out_dir / f"proxy-{number}" / f"spool-{day.isoformat()}.cernan"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data + tail)
        files.append(
            SampleFile(
                path=path,
                frames=len(frames),
                records=records,
                undecodable_frames=bad_frames,
                undecodable_records=bad_records,
                truncated_tail_bytes=len(tail),
            )
        )
    return files

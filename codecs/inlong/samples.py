"""Sample landing days of InLongMsg data for the three InLong sources (dags/sources.yaml).

A DataProxy fleet packs events into InLongMsg messages of every version it may meet (V1
text and Agent traffic, V3 per-item attributes, V4 SDK binary messages with numeric or
string ids, private attributes and LF-joined events, legacy V0/V2), with and without
snappy, and lands them as:

* `inlong`: files of back-to-back messages, each after a 4-byte big-endian length;
* `inlong_messages`: one message per file (dumped MQ message bodies);
* `inlong_kafka`: Kafka partition logs whose record values are messages.

Damage on purpose, recorded in the `SampleFile` counts: a corrupt snappy block and an
attribute Java rejects (quarantined messages), a cut last frame (truncated tail), a file
cut short and a file with a foreign magic (one message per file), a corrupt record value.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from pathlib import Path

from wirecodecs.inlong import encoder as enc
from wirecodecs.kafka import encoder as kafka_enc
from wirecodecs.sample_day import DAY_MS, SampleFile

GROUPS = (("g_shop", "s_orders", 101, 1), ("g_shop", "s_clicks", 101, 2), ("g_pay", "s_tx", 7, 3))
NODES = ("10.0.0.11", "10.0.0.12", "10.0.0.13")
_SHAPES = (
    "v0",
    "v0_snappy",
    "v1",
    "v1_snappy",
    "v2",
    "v2_snappy",
    "v3",
    "v3_snappy",
    "v4",
    "v4_snappy",
    "v4_private",
    "v4_private_snappy",
    "v4_lf",
    "v4_numeric",
)


@dataclass(frozen=True)
class _Message:
    data: bytes
    items: int
    time_ms: int  # when it was packed: messages of a file are in time order


class _Producer:
    """Random but plausible messages for one day (every event time inside it)."""

    def __init__(self, day: dt.date, rng: random.Random) -> None:
        self.rng = rng
        self.day_start = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())
        self.day_start *= 1000

    def time(self) -> int:
        return self.day_start + self.rng.randrange(DAY_MS - 60_000)

    def _items(self, count: int, *, empty_ok: bool = True) -> list[bytes]:
        out = []
        for _ in range(count):
            roll = self.rng.random()
            if roll < 0.05 and empty_ok:
                out.append(b"")
            elif roll < 0.1:
                out.append(self.rng.randbytes(self.rng.randrange(1, 40)))
            elif roll < 0.15:
                out.append(f"{self.rng.randrange(10**6)},用户,ünïcödé,😀".encode())
            else:
                user, action = self.rng.randrange(10**6), self.rng.choice(["view", "buy", "cart"])
                out.append(f"{user},{action},{self.rng.uniform(1, 500):.2f}".encode())
        return out

    def _attr(self, ms: int, count: int, *, hour_tag: bool = False) -> str:
        """A DataProxy-style attribute string; `hour_tag` gives `t` instead of `dt`."""
        group, stream, _, _ = self.rng.choice(GROUPS)
        moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
        when = f"t={moment:%Y%m%d%H}" if hour_tag else f"dt={ms}"
        node = self.rng.choice(NODES)
        return f"m=0&groupId={group}&streamId={stream}&{when}&NodeIP={node}&cnt={count}"

    def message(self, shape: str) -> _Message:
        rng = self.rng
        ms = self.time()
        version = int(shape[1])
        compress = shape.endswith("snappy")
        if version <= 2:
            blocks = []
            for _ in range(rng.randrange(1, 4)):
                items = self._items(rng.randrange(1, 12))
                blocks.append((self._attr(ms, len(items), hour_tag=rng.random() < 0.2), items))
            data = enc.encode_blocks(version, blocks, ms, compress=compress)
            return _Message(data, sum(len(items) for _, items in blocks), ms)
        if version == 3:
            records = [
                [(item, f"sid={rng.randrange(10**6)}&k={rng.randrange(4)}") for item in items]
                for items in (self._items(rng.randrange(1, 5), empty_ok=False) for _ in range(3))
            ]
            data = enc.encode_v3([(self._attr(ms, 1), records)], ms, compress=compress)
            return _Message(data, sum(map(len, records)), ms)
        return self._v4(shape, ms, compress)

    def _v4(self, shape: str, ms: int, compress: bool) -> _Message:
        rng = self.rng
        group, stream, group_num, stream_num = rng.choice(GROUPS)
        fields = {
            "data_time": ms // 1000,
            "unique_id": rng.randrange(1 << 32),
            "compress": compress,
            "group_id_num": group_num,
            "stream_id_num": stream_num,
        }
        attr = f"rtms={ms + rng.randrange(500)}&NodeIP={rng.choice(NODES)}"
        if shape != "v4_numeric":
            fields["ext_field"] = 0x04  # string ids, in the attributes
            attr = f"groupId={group}&streamId={stream}&{attr}"
        if shape == "v4_lf":
            events = self._items(rng.randrange(2, 8), empty_ok=False)
            items = [b"\n".join(event.replace(b"\n", b" ") for event in events)]
            fields["ext_field"] = fields.get("ext_field", 0) | 0x20  # one item, N events
            data = enc.encode_v4(items, attr, msg_count=len(events), **fields)
            return _Message(data, 1, ms)
        private = None
        items = self._items(rng.randrange(1, 20), empty_ok=not shape.startswith("v4_private"))
        if shape.startswith("v4_private"):
            private = [f"k={rng.randrange(3)}&seq={i}" for i in range(len(items))]
        return _Message(enc.encode_v4(items, attr, private=private, **fields), len(items), ms)

    def day(self, count: int) -> list[_Message]:
        """`count` messages cycling through every shape, in time order."""
        messages = [self.message(_SHAPES[i % len(_SHAPES)]) for i in range(count)]
        return sorted(messages, key=lambda m: m.time_ms)


def _corrupt_snappy(message: bytes) -> bytes:
    """A V1 snappy message whose first block claims ~4 GiB of output in its snappy length
    varint (same frame length): the frame is whole, its block undecodable."""
    out = bytearray(message)
    attr_len = int.from_bytes(out[14:16], "big")
    data_at = 16 + attr_len + 5  # AttrLen, Attr, ItemsLen, Compress
    out[data_at] = 0xFF  # a varint length far beyond what the block can hold
    out[data_at + 1 : data_at + 6] = b"\xff\xff\xff\xff\x0f"
    return bytes(out)


def _rng(seed: int, day: dt.date, name: str) -> random.Random:
    return random.Random(f"{seed}:{day.isoformat()}:inlong:{name}")


def _damaged_snappy(producer: _Producer) -> _Message:
    message = producer.message("v1_snappy")
    return _Message(_corrupt_snappy(message.data), message.items, message.time_ms)


def _rejected_attr(producer: _Producer) -> _Message:
    """A V4 message whose attribute has a chunk without `=` (Java throws)."""
    ms = producer.time()
    data = enc.encode_v4([b"x,1"], "groupId=g_shop&streamId=s_orders&junk", data_time=ms // 1000)
    return _Message(data, 1, ms)


def length_prefixed_day(out: Path, day: dt.date, seed: int) -> list[SampleFile]:
    """Source `inlong`: two DataProxy nodes' files; one carries a corrupt snappy block and
    a cut last frame, the other an attribute string Java rejects."""
    files = []
    for node, (count, damage) in enumerate(((70, _damaged_snappy), (60, _rejected_attr))):
        producer = _Producer(day, _rng(seed, day, f"node{node}"))
        messages = producer.day(count)
        bad = damage(producer)
        messages.insert(len(messages) // 2, bad)
        data = enc.length_prefixed(m.data for m in messages)
        counts = {"undecodable_frames": 1, "undecodable_records": bad.items}
        if node == 0:
            cut = enc.length_prefixed([producer.message("v4_snappy").data])
            cut = cut[: len(cut) // 2]
            data += cut
            counts["truncated_tail_bytes"] = len(cut)
        path = out / f"dataproxy-{node}" / f"inlong-{day:%Y%m%d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        files.append(
            SampleFile(path, frames=len(messages), records=sum(m.items for m in messages), **counts)
        )
    return files


def message_files_day(out: Path, day: dt.date, seed: int) -> list[SampleFile]:
    """Source `inlong_messages`: one dumped message per file; one file cut short (its back
    magic lost), one whose magic is not InLong's."""
    producer = _Producer(day, _rng(seed, day, "messages"))
    files = []
    for index, message in enumerate(producer.day(36)):
        data = message.data
        counts = {}
        if index in (7, 23):
            data = data[:-3] if index == 7 else b"\x0f\x09" + data[2:-2] + b"\x0f\x09"
            counts = {"undecodable_frames": 1, "undecodable_records": message.items}
        path = out / f"msg-{index:04d}.inlong"
        path.write_bytes(data)
        files.append(SampleFile(path, frames=1, records=message.items, **counts))
    return files


def kafka_day(out: Path, day: dt.date, seed: int) -> list[SampleFile]:
    """Source `inlong_kafka`: one partition of a topic DataProxy's Kafka sink writes
    (one message per record value, batches with every Kafka codec); one value corrupt."""
    rng = _rng(seed, day, "kafka")
    producer = _Producer(day, rng)
    messages = producer.day(60)
    bad_index = len(messages) // 3
    messages[bad_index] = _damaged_snappy(producer)
    codecs = list(kafka_enc.CODECS)
    batches, start = [], 0
    while start < len(messages):
        chunk = messages[start : start + rng.randrange(1, 6)]
        records = [kafka_enc.Record(value=m.data, timestamp=m.time_ms) for m in chunk]
        codec = codecs[len(batches) % len(codecs)]
        batches.append(kafka_enc.RecordBatch(records, base_offset=start, codec=codec))
        start += len(chunk)
    path = out / "inlong-topic-0" / "00000000000000000000.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(kafka_enc.encode_log(batches))
    return [
        SampleFile(
            path,
            frames=len(batches),
            records=sum(m.items for m in messages),
            undecodable_frames=1,
            undecodable_records=messages[bad_index].items,
        )
    ]

"""A sample landing day of Kafka segments for the `kafka` source (dags/sources.yaml).

Four partitions, one segment each, written with the project's own encoder (every message
format and codec, transactions, idempotent producers, LogAppendTime topics):

* `orders-0`: transactions (COMMIT and ABORT markers) interleaved with an idempotent
  producer;
* `orders-1`: plain producers, every other batch stamped LogAppendTime, snappy both
  xerial-framed and raw; one gzip batch's records replaced by noise under a matching CRC
  (quarantined);
* `clicks-0`: a topic that lived through the upgrades (magic 0, then 1, then 2); one
  uncompressed batch with its CRC flipped (rows kept, `crc_valid` false);
* `payments-0`: two transactional producers with overlapping transactions, ending in a
  batch cut in half (the active segment of a broker that crashed mid-append).

Damage is recorded in the `SampleFile` counts.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wirecodecs.kafka import encoder as enc
from wirecodecs.sample_day import DAY_MS, SampleFile

Entry = enc.MessageSet | enc.RecordBatch


@dataclass
class _Partition:
    """Builds one partition's log: offsets, day-bounded timestamps and producer state."""

    topic: str
    partition: int
    rng: random.Random
    day_start: int
    batches: int  # producer sends the topic's filler makes (markers come on top)
    leader_epoch: int = 0
    entries: list[Entry] = field(default_factory=list)
    next_offset: int = 0
    sends: int = 0
    sequences: dict[int, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def clock(self) -> int:
        """The time of the next send: one jittered slot per send, with room for 50 % more
        sends than planned (markers, a cut tail) so that every timestamp stays in the day."""
        slot = DAY_MS * 2 // (3 * self.batches)
        self.sends += 1
        if self.sends * slot > DAY_MS:
            raise RuntimeError(f"{self.name}: more sends than the day has slots for")
        return self.day_start + (self.sends - 1) * slot + self.rng.randrange(slot // 2)

    def records(self, count: int, start: int, *, headers: bool = True) -> list[enc.Record]:
        """`count` records from `start` on, a few ms apart, with the edge cases real logs have."""
        out = []
        timestamp = start
        for _ in range(count):
            out.append(
                enc.Record(
                    key=self._key(),
                    value=self._value(),
                    timestamp=timestamp,
                    headers=self._headers() if headers else (),
                )
            )
            timestamp += self.rng.randrange(40)
        return out

    def _key(self) -> bytes | None:
        roll = self.rng.random()
        if roll < 0.1:
            return None
        if roll < 0.15:
            return b""
        return f"{self.topic[:-1]}-{self.rng.randrange(5000)}".encode()

    def _value(self) -> bytes | None:
        roll = self.rng.random()
        if roll < 0.03:
            return None  # tombstone
        if roll < 0.05:
            return b""
        if roll < 0.1:
            return self.rng.randbytes(self.rng.randrange(1, 64))  # opaque binary
        body = {
            "id": self.rng.randrange(10**9),
            "amount": round(self.rng.uniform(1, 500), 2),
            "currency": self.rng.choice(["EUR", "USD", "JPY", "GBP"]),
            "note": "x" * self.rng.randrange(0, 200),
        }
        return json.dumps(body).encode()

    def _headers(self) -> tuple[tuple[str, bytes | None], ...]:
        roll = self.rng.random()
        if roll < 0.4:
            return ()
        headers = [("trace-id", self.rng.randbytes(8).hex().encode())]
        if roll > 0.7:
            headers += [("retry", b"1"), ("retry", b"2"), ("null-hdr", None), ("empty", b"")]
        if roll > 0.9:
            headers.append(("h\u00e9", b"\x00\xff"))
        return tuple(headers)

    def add_v2(self, count: int, codec: str, *, log_append: bool = False, **batch_fields):
        """Append a v2 batch of `count` records; idempotent producers get their sequences."""
        records = self.records(count, self.clock())
        producer_id = batch_fields.get("producer_id", -1)
        if producer_id >= 0:
            batch_fields["base_sequence"] = self.sequences.get(producer_id, 0)
            self.sequences[producer_id] = batch_fields["base_sequence"] + count
        if log_append:
            batch_fields["log_append_time"] = self._append_time(records)
        batch = enc.RecordBatch(
            records,
            base_offset=self.next_offset,
            codec=codec,
            partition_leader_epoch=self.leader_epoch,
            **batch_fields,
        )
        return self._append(batch, count)

    def add_marker(self, marker: str, producer_id: int, producer_epoch: int) -> enc.RecordBatch:
        batch = enc.control_batch(
            marker,
            base_offset=self.next_offset,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=7,
            timestamp=self.clock(),
            partition_leader_epoch=self.leader_epoch,
        )
        return self._append(batch, 1)

    def add_legacy(self, magic: int, count: int, codec: str, *, log_append: bool = False):
        records = self.records(count, self.clock(), headers=False)
        entry = enc.MessageSet(
            records,
            magic=magic,
            base_offset=self.next_offset,
            codec=codec,
            log_append_time=self._append_time(records) if log_append else None,
        )
        return self._append(entry, count)

    def _append_time(self, records: list[enc.Record]) -> int:
        """When the broker appended `records`: shortly after the producer stamped the last."""
        return records[-1].timestamp + self.rng.randrange(1, 500)

    def _append(self, entry: Entry, span: int) -> Entry:
        self.entries.append(entry)
        self.next_offset += span
        return entry


def _frames(entry: Entry) -> int:
    """Log entries one `Entry` becomes: uncompressed v0/v1 messages are one entry each."""
    if isinstance(entry, enc.MessageSet) and entry.codec == "none":
        return len(entry.records)
    return 1


def _orders(part: _Partition) -> None:
    """Transactions (COMMIT and ABORT) interleaved with an idempotent producer, all codecs."""
    codecs = list(enc.CODECS)
    txn_id, epoch = 4001, 2
    for i in range(part.batches // 3):
        for j in range(part.rng.randrange(1, 3)):
            part.add_v2(
                part.rng.randrange(1, 12),
                codecs[(i + j) % len(codecs)],
                producer_id=txn_id,
                producer_epoch=epoch,
                transactional=True,
            )
        part.add_v2(
            part.rng.randrange(1, 20),
            codecs[(i + 2) % len(codecs)],
            producer_id=77,
            producer_epoch=0,
        )
        part.add_marker("abort" if i % 5 == 3 else "commit", txn_id, epoch)


def _orders_append_time(part: _Partition) -> None:
    """A LogAppendTime topic written by plain producers, snappy both framed and raw."""
    codecs = list(enc.CODECS)
    for i in range(part.batches):
        part.add_v2(
            part.rng.randrange(1, 25),
            codecs[i % len(codecs)],
            log_append=i % 2 == 0,
            snappy_framing="raw" if i % 10 == 2 else "xerial",
        )


def _clicks(part: _Partition) -> None:
    """A topic that lived through the message-format upgrades: magic 0, then 1, then 2."""
    third = part.batches // 3
    for i in range(third):
        part.add_legacy(0, part.rng.randrange(1, 6), enc.LEGACY_CODECS[i % 4])
    for i in range(third):
        part.add_legacy(
            1, part.rng.randrange(1, 6), enc.LEGACY_CODECS[i % 4], log_append=i % 3 == 1
        )
    codecs = list(enc.CODECS)
    for i in range(part.batches - 2 * third):
        part.add_v2(part.rng.randrange(1, 15), codecs[i % len(codecs)])


def _payments(part: _Partition) -> None:
    """Two transactional producers whose transactions overlap in the log."""
    producers = [(5001, 0), (5002, 4)]
    open_txn = {pid: 0 for pid, _ in producers}
    codecs = ["zstd", "gzip", "lz4", "none", "snappy"]
    for i in range(part.batches):
        pid, epoch = producers[part.rng.randrange(2)]
        part.add_v2(
            part.rng.randrange(1, 8),
            codecs[i % len(codecs)],
            producer_id=pid,
            producer_epoch=epoch,
            transactional=True,
        )
        open_txn[pid] += 1
        if open_txn[pid] >= 3:
            part.add_marker("abort" if part.rng.random() < 0.2 else "commit", pid, epoch)
            open_txn[pid] = 0
    for pid, epoch in producers:
        if open_txn[pid]:
            part.add_marker("commit", pid, epoch)


def _flip_crc(data: bytes) -> bytes:
    """One CRC byte inverted: the payload is intact, only the checksum verdict changes."""
    out = bytearray(data)
    out[enc.crc_field(data).start] ^= 0xFF
    return bytes(out)


def _garbage_payload(data: bytes, rng: random.Random) -> bytes:
    """A v2 batch's compressed records replaced by noise under a matching CRC (a buggy
    producer): the frame is whole, its checksum right, its records undecodable."""
    body = len(data) - enc.V2_HEADER_BYTES
    noise = b"\x00" + rng.randbytes(body - 1)  # no gzip/zstd/lz4/xerial magic
    return enc.reseal(data[: enc.V2_HEADER_BYTES] + noise)


def _write_kafka_partition(
    out: Path, part: _Partition, damage: str | None, tail: Entry | None
) -> SampleFile:
    chunks = [enc.encode(entry) for entry in part.entries]
    counts: dict[str, int] = {}
    if damage:
        target = _damage_target(part.entries, damage)
        records = len(part.entries[target].records)
        if damage == "crc":
            chunks[target] = _flip_crc(chunks[target])
            counts = {"crc_invalid_frames": 1, "crc_invalid_records": records}
        else:
            chunks[target] = _garbage_payload(chunks[target], part.rng)
            counts = {"undecodable_frames": 1, "undecodable_records": records}
    if tail is not None:
        cut = enc.encode(tail)
        cut = cut[: len(cut) // 2]
        chunks.append(cut)
        counts["truncated_tail_bytes"] = len(cut)
    path = out / part.name / "00000000000000000000.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(chunks))
    return SampleFile(
        path,
        frames=sum(_frames(entry) for entry in part.entries),
        records=sum(len(entry.records) for entry in part.entries),
        **counts,
    )


def _damage_target(entries: list[Entry], damage: str) -> int:
    """The middle v2 data batch fit for the damage: uncompressed for a CRC flip, gzip else."""
    codec = "none" if damage == "crc" else "gzip"
    fit = [
        i
        for i, entry in enumerate(entries)
        if isinstance(entry, enc.RecordBatch) and not entry.control and entry.codec == codec
    ]
    return fit[len(fit) // 2]


def kafka_sample_day(out: Path, day: dt.date, seed: int) -> list[SampleFile]:
    """Four partitions over one day; one CRC flip, one garbage payload, one cut tail."""
    day_start = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()) * 1000
    layout: list[tuple[str, int, int, Callable[[_Partition], None], str | None]] = [
        # topic, partition, producer sends, filler, damage
        ("orders", 0, 90, _orders, None),
        ("orders", 1, 80, _orders_append_time, "garbage"),
        ("clicks", 0, 90, _clicks, "crc"),
        ("payments", 0, 60, _payments, None),
    ]
    files = []
    for topic, number, batches, fill, damage in layout:
        rng = random.Random(f"{seed}:{day.isoformat()}:{topic}-{number}")
        part = _Partition(topic, number, rng, day_start, batches, leader_epoch=number + 3)
        fill(part)
        tail = None
        if topic == "payments":  # the active segment of a broker that crashed mid-append
            tail = enc.RecordBatch(part.records(5, part.clock()), base_offset=part.next_offset)
        files.append(_write_kafka_partition(out, part, damage, tail))
    return files

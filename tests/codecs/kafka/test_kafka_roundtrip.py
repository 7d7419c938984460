"""The Kafka encoder against the truth, and the decoder against the encoder's input.

Three independent anchors: the golden vectors (the encoder reproduces them byte for byte
where the codec output is deterministic), kafka-python's reader (it reads what the encoder
writes), and the encoder input itself (what the decoder must give back, column by column).
"""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import json
from pathlib import Path

import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords

from wirecodecs.kafka import encoder as enc
from wirecodecs.kafka.schema import KAFKA_SCHEMA

VECTORS = Path(__file__).resolve().parents[2] / "data" / "kafka"
SOURCE = "landing/orders-3/00000000000000000000.log"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
INT32_WRAP = 2**31

COMBOS = [(0, c) for c in enc.LEGACY_CODECS] + [(1, c) for c in enc.LEGACY_CODECS]
COMBOS += [(2, c) for c in enc.CODECS]

blobs = st.one_of(st.none(), st.just(b""), st.binary(min_size=1, max_size=48))
timestamps = st.one_of(st.just(-1), st.integers(0, 4_102_444_800_000))
header_lists = st.lists(
    st.tuples(st.sampled_from(["trace-id", "dup", "dup", "h\u00e9", ""]), blobs), max_size=4
).map(tuple)


@st.composite
def record_lists(draw, *, headers: bool, gaps: bool = False) -> list[enc.Record]:
    """1-8 records; with `gaps`, offset deltas skip as after compaction."""
    records, delta = [], 0
    for i in range(draw(st.integers(1, 8))):
        if i:
            delta += draw(st.integers(1, 3)) if gaps else 1
        records.append(
            enc.Record(
                key=draw(blobs),
                value=draw(blobs),
                timestamp=draw(timestamps),
                headers=draw(header_lists) if headers else (),
                offset_delta=delta if gaps else None,
            )
        )
    return records


def _deltas(records) -> list[int]:
    return [i if r.offset_delta is None else r.offset_delta for i, r in enumerate(records)]


def _time(ms: int | None) -> dt.datetime | None:
    return None if ms is None or ms == -1 else EPOCH + dt.timedelta(milliseconds=ms)


def _headers(record: enc.Record) -> list[dict]:
    return [{"key": key, "value": value} for key, value in record.headers]


def expected_legacy(ms: enc.MessageSet) -> list[dict]:
    """Rows a correct decoder reports for a v0/v1 message set, worked out from its input."""
    deltas = _deltas(ms.records)
    compressed = ms.codec != "none"
    append_time = ms.log_append_time if ms.magic == 1 else None
    rows = []
    for record, delta in zip(ms.records, deltas, strict=True):
        offset = ms.base_offset + delta
        entry_offset = ms.base_offset + deltas[-1] if compressed else offset
        timestamp = None
        if ms.magic == 1:
            timestamp = record.timestamp if append_time is None else append_time
        rows.append(
            {
                "crc_valid": True,
                "event_time": _time(timestamp),
                "magic": ms.magic,
                "compression": ms.codec,
                "timestamp_type": None
                if ms.magic == 0
                else ("log_append_time" if append_time is not None else "create_time"),
                "batch_base_offset": entry_offset,
                "batch_last_offset": entry_offset,
                "partition_leader_epoch": None,
                "producer_id": None,
                "producer_epoch": None,
                "is_transactional": False,
                "is_control": False,
                "delete_horizon_ms": None,
                "offset": offset,
                "sequence": None,
                "timestamp_ms": timestamp,
                "record_crc_valid": True if compressed else None,
                "key": record.key,
                "value": record.value,
                "headers": [],
                "control_type": None,
                "coordinator_epoch": None,
            }
        )
    return rows


def expected_v2(batch: enc.RecordBatch) -> list[dict]:
    """Rows a correct decoder reports for a v2 batch, worked out from its input."""
    deltas = _deltas(batch.records)
    last_delta = batch.last_offset_delta if batch.last_offset_delta is not None else deltas[-1]
    rows = []
    for record, delta in zip(batch.records, deltas, strict=True):
        timestamp = record.timestamp if batch.log_append_time is None else batch.log_append_time
        control_type = coordinator_epoch = None
        if batch.control:
            control_type = {0: "abort", 1: "commit"}[int.from_bytes(record.key[2:4], "big")]
            coordinator_epoch = int.from_bytes(record.value[2:6], "big", signed=True)
        rows.append(
            {
                "crc_valid": True,
                "event_time": _time(timestamp),
                "magic": 2,
                "compression": batch.codec,
                "timestamp_type": "create_time"
                if batch.log_append_time is None
                else "log_append_time",
                "batch_base_offset": batch.base_offset,
                "batch_last_offset": batch.base_offset + last_delta,
                "partition_leader_epoch": batch.partition_leader_epoch,
                "producer_id": batch.producer_id,
                "producer_epoch": batch.producer_epoch,
                "is_transactional": batch.transactional,
                "is_control": batch.control,
                "delete_horizon_ms": batch.delete_horizon_ms,
                "offset": batch.base_offset + delta,
                "sequence": None
                if batch.base_sequence < 0
                else (batch.base_sequence + delta) % INT32_WRAP,
                "timestamp_ms": timestamp,
                "record_crc_valid": None,
                "key": record.key,
                "value": record.value,
                "headers": _headers(record),
                "control_type": control_type,
                "coordinator_epoch": coordinator_epoch,
            }
        )
    return rows


def expected_rows(entries) -> list[dict]:
    rows = []
    for entry in entries:
        rows += expected_v2(entry) if isinstance(entry, enc.RecordBatch) else expected_legacy(entry)
    for row in rows:
        row.update(source_file=SOURCE, topic="orders", partition=3)
    return rows


def assert_round_trip(decode, entries) -> None:
    """Encode `entries`, decode them with the real decoder, compare with the input."""
    data = enc.encode_log(entries)
    decoded = decode(data, source=SOURCE)
    assert decoded.quarantined == []
    assert all(batch.schema.equals(KAFKA_SCHEMA) for batch in decoded.batches)
    accounting = decoded.accounting
    assert accounting.balanced
    assert accounting.bytes_decoded == accounting.bytes_total == len(data)
    assert accounting.frames_bad == 0
    rows = decoded.rows
    want = expected_rows(entries)
    assert len(rows) == len(want)
    for got, expected in zip(rows, want, strict=True):
        assert {name: got[name] for name in expected} == expected
    assert [row["byte_offset"] for row in rows] == sorted(row["byte_offset"] for row in rows)


def _chain(make, record_batches, offset: int) -> list:
    """Entries whose offsets continue one another from `offset`, as in a partition log."""
    entries = []
    for records in record_batches:
        entries.append(make(records, offset))
        offset += _deltas(records)[-1] + 1
    return entries


# --- golden vectors: bytes written by kafka-python's builders ------------------------------


def sidecar(name: str) -> dict:
    with gzip.open(VECTORS / f"{name}.json.gz") as fh:
        return json.load(fh)


def _b64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _entry_from_sidecar(batch: dict) -> enc.MessageSet | enc.RecordBatch:
    """The encoder input that describes one sidecar batch (record offsets -> deltas)."""
    base = batch["base_offset"] if batch["magic"] == 2 else batch["records"][0]["offset"]
    records = [
        enc.Record(
            key=_b64(r["key_b64"]),
            value=_b64(r["value_b64"]),
            timestamp=-1 if r["timestamp"] is None else r["timestamp"],
            headers=tuple((k, _b64(v)) for k, v in r["headers"]),
            offset_delta=r["offset"] - base,
        )
        for r in batch["records"]
    ]
    if batch["magic"] < 2:
        return enc.MessageSet(
            records, magic=batch["magic"], base_offset=base, codec=batch["compression"]
        )
    return enc.RecordBatch(
        records,
        base_offset=base,
        codec=batch["compression"],
        partition_leader_epoch=batch["partition_leader_epoch"],
        producer_id=batch["producer_id"],
        producer_epoch=batch["producer_epoch"],
        base_sequence=batch["base_sequence"],
        transactional=batch["is_transactional"],
        control=batch["is_control"],
        last_offset_delta=batch["last_offset_delta"],
    )


# Uncompressed files, and the codecs whose output does not depend on the library that
# compressed (xerial snappy blocks; LZ4 frames without content size, i.e. magic 0 with the
# broken header checksum). gzip/zstd/v1+ LZ4 bytes differ between libraries by design.
BYTE_IDENTICAL = [
    "v0_none",
    "v1_none",
    "v2_none",
    "v0_snappy",
    "v1_snappy",
    "v2_snappy",
    "v2_snappy_large",
    "v0_lz4",
    "v2_epoch_tampered_crc_ok",
]


@pytest.mark.parametrize("name", BYTE_IDENTICAL)
def test_encoder_reproduces_golden_vector_bytes(name):
    expected = sidecar(name)
    entries = [_entry_from_sidecar(batch) for batch in expected["batches"]]
    assert enc.encode_log(entries) == (VECTORS / expected["file"]).read_bytes()


def test_encoder_reproduces_golden_control_batches():
    """COMMIT/ABORT markers as kafka-python writes them, byte for byte."""
    data = (VECTORS / "v2_transactions.log").read_bytes()
    markers = [batch for batch in sidecar("v2_transactions")["batches"] if batch["is_control"]]
    assert len(markers) >= 2
    for batch in markers:
        record = batch["records"][0]
        ours = enc.control_batch(
            record["control"]["type_name"],
            base_offset=batch["base_offset"],
            producer_id=batch["producer_id"],
            producer_epoch=batch["producer_epoch"],
            coordinator_epoch=int.from_bytes(_b64(record["value_b64"])[2:], "big"),
            timestamp=record["timestamp"],
            partition_leader_epoch=batch["partition_leader_epoch"],
        )
        start = batch["position"]
        assert enc.encode(ours) == data[start : start + batch["size"]]


# --- round trips through our decoder -------------------------------------------------------

RT_SETTINGS = settings(max_examples=examples(0.25), suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("magic", "codec"), COMBOS)
@RT_SETTINGS
@given(data=st.data())
def test_round_trip_every_magic_and_codec(decode, magic, codec, data):
    batches = data.draw(
        st.lists(record_lists(headers=magic == 2, gaps=magic == 2), min_size=1, max_size=3)
    )
    start = data.draw(st.integers(0, 2**40))
    if magic == 2:
        entries = _chain(
            lambda r, o: enc.RecordBatch(r, base_offset=o, codec=codec), batches, start
        )
    else:
        entries = _chain(
            lambda r, o: enc.MessageSet(r, magic=magic, base_offset=o, codec=codec), batches, start
        )
    assert_round_trip(decode, entries)


@pytest.mark.parametrize("magic", [0, 1, 2])
@RT_SETTINGS
@given(data=st.data())
def test_round_trip_raw_snappy_blocks(decode, magic, data):
    """librdkafka-style snappy: one bare block, no xerial header."""
    records = data.draw(record_lists(headers=magic == 2))
    if magic == 2:
        entry = enc.RecordBatch(records, codec="snappy", snappy_framing="raw")
    else:
        entry = enc.MessageSet(records, magic=magic, codec="snappy", snappy_framing="raw")
    assert_round_trip(decode, [entry])


@RT_SETTINGS
@given(
    records=record_lists(headers=False),
    codec=st.sampled_from(enc.LEGACY_CODECS),
    append_time=st.integers(0, 4_102_444_800_000),
    base=st.integers(0, 2**40),
)
def test_round_trip_v1_log_append_time(decode, records, codec, append_time, base):
    """Every message (inner ones too) reports the broker's append time."""
    assert_round_trip(
        decode,
        [enc.MessageSet(records, base_offset=base, codec=codec, log_append_time=append_time)],
    )


@st.composite
def v2_batches(draw) -> list[enc.RecordBatch]:
    """A partition's worth of v2 batches: idempotent/transactional producers, sequences
    near the int32 wrap, LogAppendTime, delete horizons, compaction gaps, and markers."""
    entries, offset = [], draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 4))):
        records = draw(record_lists(headers=True, gaps=True))
        producer = draw(st.sampled_from([(-1, -1, -1), (42, 3, None), (4001, 0, None)]))
        producer_id, producer_epoch, sequence = producer
        if sequence is None:
            sequence = draw(st.sampled_from([0, 17, INT32_WRAP - 2, INT32_WRAP - 1]))
        transactional = producer_id == 4001
        extra = draw(st.integers(0, 3))  # compaction kept a larger lastOffsetDelta
        batch = enc.RecordBatch(
            records,
            base_offset=offset,
            codec=draw(st.sampled_from(list(enc.CODECS))),
            partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=sequence,
            transactional=transactional,
            log_append_time=draw(st.none() | st.integers(0, 4_102_444_800_000)),
            delete_horizon_ms=draw(st.none() | st.integers(0, 4_102_444_800_000)),
            last_offset_delta=_deltas(records)[-1] + extra,
        )
        entries.append(batch)
        offset += batch.last_offset_delta + 1
        if transactional:
            marker = enc.control_batch(
                draw(st.sampled_from(["commit", "abort"])),
                base_offset=offset,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                coordinator_epoch=draw(st.integers(0, 2**31 - 1)),
                timestamp=draw(st.integers(0, 4_102_444_800_000)),
            )
            entries.append(marker)
            offset += 1
    return entries


@settings(max_examples=examples(0.6), suppress_health_check=[HealthCheck.too_slow])
@given(entries=v2_batches())
def test_round_trip_v2_batch_attributes(decode, entries):
    assert_round_trip(decode, entries)


@RT_SETTINGS
@given(
    v0=record_lists(headers=False), v1=record_lists(headers=False), v2=record_lists(headers=True)
)
def test_round_trip_mixed_magic_segment(decode, v0, v1, v2):
    """A topic upgraded across message formats keeps all three in one segment."""
    entries = [
        enc.MessageSet(v0, magic=0, codec="lz4"),
        enc.MessageSet(v1, magic=1, base_offset=len(v0), codec="gzip"),
        enc.RecordBatch(v2, base_offset=len(v0) + len(v1), codec="zstd"),
    ]
    assert_round_trip(decode, entries)


# --- kafka-python as an independent reader -------------------------------------------------

ORACLE_RECORDS = [
    enc.Record(None, b'{"id": 1}', 1_790_000_000_000, (("trace-id", b"ab"), ("dup", None))),
    enc.Record(b"", b"", 1_790_000_000_005, (("dup", b"1"), ("dup", b""))),
    enc.Record(b"k\x00\xff", None, 1_789_999_999_990),
    enc.Record(b"user-7", bytes(range(256)) * 300, 1_790_000_000_100),  # multi-block
]


def _oracle_entries(magic: int, codec: str):
    if magic == 2:
        return [
            enc.RecordBatch(
                ORACLE_RECORDS,
                base_offset=10,
                codec=codec,
                producer_id=4001,
                producer_epoch=2,
                base_sequence=INT32_WRAP - 2,
                transactional=True,
            ),
            enc.control_batch(
                "commit",
                base_offset=14,
                producer_id=4001,
                producer_epoch=2,
                coordinator_epoch=9,
                timestamp=1_790_000_000_200,
            ),
        ]
    plain = [enc.Record(r.key, r.value, r.timestamp) for r in ORACLE_RECORDS]
    return [enc.MessageSet(plain, magic=magic, base_offset=10, codec=codec)]


@pytest.mark.parametrize(("magic", "codec"), COMBOS)
def test_kafka_python_reads_what_the_encoder_writes(magic, codec):
    entries = _oracle_entries(magic, codec)
    seen = []
    batches = list(MemoryRecords(enc.encode_log(entries)))
    if magic < 2 and codec == "none":  # one log entry per message
        entries = entries * len(ORACLE_RECORDS)
    assert len(batches) == len(entries)
    for batch, entry in zip(batches, entries, strict=True):
        assert batch.validate_crc()
        assert batch.compression_type == enc.CODECS[entry.codec]
        if magic == 2:
            assert batch.producer_id == entry.producer_id
            assert batch.producer_epoch == entry.producer_epoch
            assert batch.base_sequence == entry.base_sequence
            assert batch.is_transactional == entry.transactional
            assert batch.is_control_batch == entry.control
        for record in batch:
            seen.append(record)
            if magic < 2:
                assert record.validate_crc()
    if magic == 2:
        assert seen[-1].commit
    want = [r for entry in _oracle_entries(magic, codec) for r in entry.records]
    assert [r.offset for r in seen] == list(range(10, 10 + len(want)))
    for got, expected in zip(seen, want, strict=True):
        assert (got.key, got.value) == (expected.key, expected.value)
        assert got.timestamp == (None if magic == 0 else expected.timestamp)
        if magic == 2:
            assert list(got.headers) == list(expected.headers)


# --- encoder input checks ------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        enc.MessageSet([enc.Record(value=b"x")], magic=1, codec="zstd"),
        enc.MessageSet([enc.Record(value=b"x")], magic=2),
        enc.MessageSet([enc.Record(value=b"x", headers=(("h", b"v"),))], magic=1),
        enc.MessageSet([], magic=1),
        enc.RecordBatch([enc.Record(value=b"x")], codec="brotli"),
        enc.RecordBatch([enc.Record(offset_delta=1), enc.Record(offset_delta=1)]),
        enc.RecordBatch([enc.Record(value=b"x")], codec="snappy", snappy_framing="hadoop"),
    ],
)
def test_encoder_rejects_what_kafka_cannot_hold(entry):
    with pytest.raises(ValueError):
        enc.encode(entry)

"""Every Kafka golden vector decodes to exactly what its sidecar says.

The sidecars (kafka-python's read-back, `tests/data/kafka/*.json.gz`) are the truth. The
intended divergences of vectors/README.md are applied to them here: a length of -2 is null
(Java), magic-0 timestamps are null, and the bytes after `valid_bytes` are a truncated tail
or, where the walk cannot trust the size field there, a quarantined region.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import struct
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import encode_varint

from wirecodecs.accounting import HEAD_BYTES, Quarantined
from wirecodecs.checksums import crc32c
from wirecodecs.kafka import KAFKA
from wirecodecs.kafka.decoder import topic_partition
from wirecodecs.kafka.schema import KAFKA_SCHEMA

KAFKA_DATA = Path(__file__).resolve().parents[2] / "data" / "kafka"
MANIFEST = json.loads((KAFKA_DATA / "MANIFEST.json").read_text())
SEGMENT_DIR = "segment_dir/orders-0"
SEGMENTS = [f"{SEGMENT_DIR}/{base}.log" for base in MANIFEST["segment_dir"]]
CASES = [*MANIFEST["files"], *SEGMENTS]
MAX_FRAME_BYTES = KAFKA.options().max_frame_bytes

TIMESTAMP_TYPES = {0: "create_time", 1: "log_append_time", None: None}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def sidecar(case: str) -> dict:
    with gzip.open((KAFKA_DATA / case).with_suffix(".json.gz")) as fh:
        return json.load(fh)


def b64(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


def sequence(batch: dict, record: dict) -> int | None:
    """baseSequence + offsetDelta, wrapping from 2**31 - 1 to 0 (docs/kafka.md §4)."""
    if batch["base_sequence"] == -1:
        return None
    value = (batch["base_sequence"] + record["offset"] - batch["base_offset"]) % 2**31
    if record["offset"] == batch["last_offset"]:
        assert value == batch["last_sequence"]
    return value


def coordinator_epoch(record: dict) -> int | None:
    """ABORT/COMMIT marker value: int16 version, int32 coordinatorEpoch (docs/kafka.md §2.8)."""
    if record["control"]["type_name"] not in ("abort", "commit"):
        return None
    return struct.unpack_from(">hi", b64(record["value_b64"]))[1]


def expected_rows(case: str, side: dict, source: str) -> list[dict]:
    topic, partition = ("orders", 0) if case.startswith(SEGMENT_DIR) else (None, None)
    rows = []
    for index, batch in enumerate(side["batches"]):
        if batch["records_error"]:
            continue
        legacy = batch["magic"] < 2
        wrapper = legacy and batch["compression"] != "none"
        for record in batch["records"]:
            if legacy and not wrapper:  # a plain message: its CRC is the entry's CRC
                assert (record["crc"], record["crc_valid"]) == (batch["crc"], batch["crc_valid"])
            value = b64(record["value_b64"])
            if "java_expected_value" in side and index == side["corrupted_batch_index"]:
                value = side["java_expected_value"]  # length -2: null, as in Java
            timestamp = record["timestamp"]
            control = record.get("control")
            rows.append(
                {
                    "source_file": source,
                    "byte_offset": batch["position"],
                    "crc_valid": batch["crc_valid"],
                    "event_time": (
                        None
                        if timestamp in (None, -1)
                        else EPOCH + timedelta(milliseconds=timestamp)
                    ),
                    "topic": topic,
                    "partition": partition,
                    "magic": batch["magic"],
                    "compression": batch["compression"],
                    "timestamp_type": TIMESTAMP_TYPES[record["timestamp_type"]],
                    "batch_base_offset": batch["base_offset"],
                    "batch_last_offset": batch["last_offset"],
                    "partition_leader_epoch": batch.get("partition_leader_epoch"),
                    "producer_id": batch.get("producer_id"),
                    "producer_epoch": batch.get("producer_epoch"),
                    "is_transactional": batch.get("is_transactional", False),
                    "is_control": batch.get("is_control", False),
                    "delete_horizon_ms": (
                        batch["first_timestamp"] if batch.get("has_delete_horizon") else None
                    ),
                    "offset": record["offset"],
                    "sequence": None if legacy else sequence(batch, record),
                    "timestamp_ms": timestamp,
                    "record_crc_valid": record["crc_valid"] if wrapper else None,
                    "key": b64(record["key_b64"]),
                    "value": value,
                    "headers": [{"key": k, "value": b64(v)} for k, v in record["headers"]],
                    "control_type": control["type_name"] if control else None,
                    "coordinator_epoch": coordinator_epoch(record) if control else None,
                }
            )
    return rows


def tail_outcome(data: bytes, side: dict) -> tuple[str, int, int]:
    """How the walk must end after the sidecar's whole batches: (stop_reason, truncated
    tail bytes, quarantined bytes). A size field below 14 or above max_frame_bytes cannot
    be walked past (quarantine); an incomplete entry is a truncated tail when what is left
    of it could start the next entry (its offset after the sidecar's last batch's,
    docs/kafka.md §3.3), else corruption."""
    valid_bytes = side["valid_bytes"]
    tail = len(data) - valid_bytes
    if tail == 0:
        return "eof", 0, 0
    if tail >= 17:
        (size,) = struct.unpack_from(">i", data, valid_bytes + 8)
        if size < 14:
            return "record_size_too_small", 0, tail
        if size > MAX_FRAME_BYTES:
            return "length_out_of_range", 0, tail
    if tail >= 8 and side["batches"]:
        (offset,) = struct.unpack_from(">q", data, valid_bytes)
        if offset <= side["batches"][-1]["last_offset"]:
            return "implausible_tail", 0, tail
    return "truncated_tail", tail, 0


def decode_case(decode, case: str, **options):
    path = KAFKA_DATA / case
    with path.open("rb") as fh:
        return decode(fh, source=str(path), **options)


def test_manifest_lists_every_data_file():
    on_disk = {p.name for p in KAFKA_DATA.iterdir() if p.suffix in (".log", ".bin")}
    assert on_disk == set(MANIFEST["files"])
    assert len(CASES) == 36


@pytest.mark.parametrize("case", MANIFEST["files"])
def test_data_files_are_the_vectors(case):
    side = sidecar(case)
    data = (KAFKA_DATA / case).read_bytes()
    assert (len(data), hashlib.sha256(data).hexdigest()) == (side["size"], side["sha256"])


@pytest.mark.parametrize("case", CASES)
def test_rows_match_sidecar(decode, case):
    got = decode_case(decode, case)
    expected = expected_rows(case, sidecar(case), str(KAFKA_DATA / case))
    rows = got.rows
    assert len(rows) == len(expected)
    for index, (row, want) in enumerate(zip(rows, expected, strict=True)):
        assert row == want, f"row {index}"
    assert all(batch.schema == KAFKA_SCHEMA for batch in got.batches)
    if not got.quarantined:  # small Kafka batches are accumulated, not yielded one by one
        assert len(got.batches) == (1 if rows else 0)


@pytest.mark.parametrize("case", CASES)
def test_bad_entries_and_regions_are_quarantined(decode, case):
    side = sidecar(case)
    data = (KAFKA_DATA / case).read_bytes()
    got = decode_case(decode, case)
    expected = [(b["position"], b["size"]) for b in side["batches"] if b["records_error"]]
    stop_reason, _, rest = tail_outcome(data, side)
    if rest:
        expected.append((side["valid_bytes"], rest))
    assert [(q.byte_offset, q.length) for q in got.quarantined] == expected
    for q in got.quarantined:
        assert q.source == str(KAFKA_DATA / case)
        assert q.head == data[q.byte_offset : q.byte_offset + min(q.length, HEAD_BYTES)]
    if rest:
        assert got.quarantined[-1].kind == stop_reason


@pytest.mark.parametrize("case", CASES)
def test_accounting_matches_sidecar(decode, case):
    side = sidecar(case)
    data = (KAFKA_DATA / case).read_bytes()
    acc = decode_case(decode, case).accounting
    bad = [b for b in side["batches"] if b["records_error"]]
    good = [b for b in side["batches"] if not b["records_error"]]
    stop_reason, tail, rest = tail_outcome(data, side)
    assert side["valid_bytes"] + side["trailing_bytes"] == len(data)
    assert acc.balanced
    assert acc.bytes_total == len(data)
    assert acc.bytes_decoded == sum(b["size"] for b in good)
    assert acc.bytes_decoded + sum(b["size"] for b in bad) == side["valid_bytes"]
    assert acc.bytes_quarantined == sum(b["size"] for b in bad) + rest
    assert acc.bytes_truncated_tail == tail
    assert tail + rest == side["trailing_bytes"]
    assert acc.bytes_skipped == 0
    assert acc.frames_good == len(good)
    assert acc.frames_bad == len(bad) + (1 if rest else 0)
    assert acc.records_good == sum(len(b["records"]) for b in good)
    assert acc.records_good == side.get("record_count", acc.records_good)
    assert acc.records_bad == sum(b["records_count"] for b in bad)
    assert acc.stop_reason == stop_reason


def test_corrupt_gzip_batch_is_one_quarantined_frame(decode):
    side = sidecar("corrupt_v2_gzip_payload.log")
    bad = side["batches"][side["corrupted_batch_index"]]
    assert bad["records_error"].startswith("BadGzipFile")
    (q,) = decode_case(decode, "corrupt_v2_gzip_payload.log").quarantined
    assert (q.byte_offset, q.length, q.kind) == (bad["position"], bad["size"], "decompress_failed")
    assert "gzip" in q.detail


def test_items_come_in_file_order(decode):
    got = decode_case(decode, "corrupt_v2_gzip_payload.log", batch_rows=16)
    offsets = []
    for item in got.items:
        if isinstance(item, Quarantined):
            offsets.append(item.byte_offset)
        else:
            offsets.extend(item.column("byte_offset").to_pylist())
    assert offsets == sorted(offsets)
    assert len(got.batches) > 2  # rows on both sides of the bad batch


@pytest.mark.parametrize("case", ["mixed_magic.log", "v2_transactions.log", SEGMENTS[0]])
def test_small_batch_rows_split_without_changing_rows(decode, case):
    got = decode_case(decode, case, batch_rows=7)
    assert all(batch.num_rows <= 7 for batch in got.batches)
    assert got.rows == expected_rows(case, sidecar(case), str(KAFKA_DATA / case))


def test_absurd_length_within_the_bound_is_a_truncated_tail(decode):
    """With max_frame_bytes raised past the garbage length, the walk sees what
    DumpLogSegments sees: an entry that runs past the end of the file."""
    side = sidecar("length_overrun_v2_none.log")
    acc = decode_case(decode, "length_overrun_v2_none.log", max_frame_bytes=2**31 - 1).accounting
    assert (acc.bytes_truncated_tail, acc.bytes_quarantined) == (side["trailing_bytes"], 0)
    assert acc.stop_reason == "truncated_tail"


@pytest.mark.parametrize("segment", SEGMENTS)
def test_segment_index_files_point_at_decoded_batches(decode, segment):
    """`.index` entries (relative last offset, position) and `.timeindex` entries (max
    timestamp so far, relative offset) agree with the decoded rows (docs/kafka.md §2.10)."""
    side = sidecar(segment)
    log = KAFKA_DATA / segment
    base = int(log.stem)
    index = list(struct.iter_unpack(">ii", log.with_suffix(".index").read_bytes()))
    timeindex = list(struct.iter_unpack(">qi", log.with_suffix(".timeindex").read_bytes()))
    assert [list(e) for e in index] == side["index_entries"]
    assert [list(e) for e in timeindex] == side["timeindex_entries"]

    rows = decode_case(decode, segment).rows
    last_offset_at = {row["byte_offset"]: row["batch_last_offset"] for row in rows}
    for relative, position in index:
        assert last_offset_at[position] == base + relative
    for timestamp, relative in timeindex:
        seen = [r["timestamp_ms"] for r in rows if r["batch_last_offset"] <= base + relative]
        assert max(seen) == timestamp


def test_topic_and_partition_come_from_the_folder(decode):
    plain = decode_case(decode, "v2_none.log").rows[0]
    segment = decode_case(decode, SEGMENTS[1]).rows[0]
    assert (plain["topic"], plain["partition"]) == (None, None)
    assert (segment["topic"], segment["partition"]) == ("orders", 0)


# ---- hand-made entries for rules the golden vectors do not reach -------------------------------
# Built with kafka-python's builders (an independent writer) or by hand from docs/kafka.md
# §2.5/§2.7; expected values come from that page.


def v2_entry(
    records: bytes, count: int, *, attributes: int = 0, base_offset: int = 0, timestamp: int = 0
) -> bytes:
    """A v2 batch around a hand-written records section (header per docs/kafka.md §2.5)."""
    body = struct.pack(">hiqqqhii", attributes, count - 1, timestamp, timestamp, -1, -1, -1, count)
    body += records
    crc = crc32c(body)
    return struct.pack(">qiibI", base_offset, len(body) + 9, 0, 2, crc) + body


def record(body: bytes) -> bytes:
    """A record: zig-zag varint length, then the body (attributes .. headers)."""
    return zigzag_varint(len(body)) + body


def zigzag_varint(value: int) -> bytes:
    out = bytearray()
    encode_varint(value, out.append)
    return bytes(out)


def legacy_wrapper(wrapper_offset: int) -> bytes:
    """A magic-1 gzip wrapper of three messages with relative offsets 0..2."""
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=1, batch_size=1 << 16)
    for i in range(3):
        builder.append(i, timestamp=1000 + i, key=None, value=b"v%d" % i)
    data = builder.build()
    struct.pack_into(">q", data, 0, wrapper_offset)  # outside the CRC, as a broker sets it
    return bytes(data)


def test_v1_wrapper_offsets_are_rebased_on_the_wrapper_offset(decode):
    assert [r["offset"] for r in decode(legacy_wrapper(1002)).rows] == [1000, 1001, 1002]
    assert [r["offset"] for r in decode(legacy_wrapper(0)).rows] == [0, 1, 2]  # librdkafka


def test_v1_wrapper_offset_below_the_last_inner_offset_is_invalid(decode):
    got = decode(legacy_wrapper(1) + legacy_wrapper(7))
    assert [(q.byte_offset, q.kind) for q in got.quarantined] == [(0, "invalid_record")]
    assert [r["offset"] for r in got.rows] == [5, 6, 7]


def test_control_records_of_every_type(decode):
    keys = [struct.pack(">hh", 0, t) for t in (0, 1, 2, 3, 4, 5, 6, 9)]
    values = [struct.pack(">hi", 0, 7), struct.pack(">hi", 3, 8)] + [b"{}"] * 6
    section = b"".join(
        record(b"\x00\x00" + zigzag_varint(i) + b"\x08" + k + zigzag_varint(len(v)) + v + b"\x00")
        for i, (k, v) in enumerate(zip(keys, values, strict=True))
    )
    rows = decode(v2_entry(section, len(keys), attributes=0x20)).rows
    assert [(r["control_type"], r["coordinator_epoch"], r["is_control"]) for r in rows] == [
        ("abort", 7, True),
        ("commit", 8, True),  # a higher marker version is read as version 0
        ("leader_change", None, True),
        ("snapshot_header", None, True),
        ("snapshot_footer", None, True),
        ("kraft_version", None, True),
        ("kraft_voters", None, True),
        ("unknown", None, True),
    ]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (struct.pack(">hh", -1, 0), struct.pack(">hi", 0, 1)),  # negative key version
        (b"\x00\x00\x00", struct.pack(">hi", 0, 1)),  # short key
        (struct.pack(">hh", 0, 1), b"\x00\x00\x00"),  # short COMMIT value
    ],
)
def test_malformed_control_records_are_quarantined(decode, key, value):
    section = record(
        b"\x00\x00\x00"
        + zigzag_varint(len(key))
        + key
        + zigzag_varint(len(value))
        + value
        + b"\x00"
    )
    (q,) = decode(v2_entry(section, 1, attributes=0x20)).quarantined
    assert q.kind == "invalid_control_record"


GOOD_RECORD = record(b"\x00\x00\x00\x01\x02v\x00")  # ts 0, offset 0, key null, value b"v"


@pytest.mark.parametrize(
    ("section", "count", "kind"),
    [
        (record(b"\x00\x00\x00\x01\x02v\x01"), 1, "invalid_record"),  # headersCount -1
        (record(b"\x00\x00\x00\x01\x02v\x02\x01"), 1, "invalid_record"),  # header key size -1
        (record(b"\x00" + b"\x80" * 10 + b"\x00\x00\x01\x02v\x00"), 1, "varint_too_long"),
        (record(b"\x00\x00" + b"\x80" * 5 + b"\x00\x01\x02v\x00"), 1, "varint_too_long"),
        (b"\x10" + GOOD_RECORD[1:], 1, "record_size_mismatch"),  # declared length 8, not 7
        (GOOD_RECORD + b"\x00", 1, "record_count_mismatch"),  # bytes after the last record
        (GOOD_RECORD, 2, "record_count_mismatch"),  # a count the section cannot hold
        (GOOD_RECORD * 2 + b"\x0e\x00\x00\x00\x01\x7ev\x00", 3, "truncated"),  # value 63 bytes
    ],
)
def test_damaged_records_quarantine_their_batch_only(decode, section, count, kind):
    good = v2_entry(GOOD_RECORD, 1, base_offset=10)
    got = decode(good + v2_entry(section, count) + good)
    assert [q.kind for q in got.quarantined] == [kind]
    assert [r["offset"] for r in got.rows] == [10, 10]
    assert got.accounting.records_bad == count


def test_negative_lengths_other_than_minus_one_are_null(decode):
    section = record(b"\x00\x00\x00\x03\x00" + b"\x02" + b"\x02k\x03")  # key -2, header value -2
    (row,) = decode(v2_entry(section, 1)).rows
    assert (row["key"], row["value"], row["headers"]) == (None, b"", [{"key": "k", "value": None}])


def test_header_keys_that_are_not_utf8_are_decoded_with_replacement_like_java(decode):
    section = record(b"\x00\x00\x00\x01\x01" + b"\x04" + b"\x04h\xff\x02v" + b"\x04\xc3\xa9\x00")
    (row,) = decode(v2_entry(section, 1)).rows
    assert row["headers"] == [{"key": "h\ufffd", "value": b"v"}, {"key": "é", "value": b""}]


def test_unknown_magic_and_codec_are_quarantined_and_the_walk_goes_on(decode):
    good = v2_entry(GOOD_RECORD, 1, base_offset=10)
    bad_magic = bytearray(good)
    bad_magic[16] = 3
    bad_codec = v2_entry(GOOD_RECORD, 1, attributes=5)
    got = decode(bytes(bad_magic) + bad_codec + good)
    assert [q.kind for q in got.quarantined] == ["unknown_magic", "unknown_codec"]
    assert [r["offset"] for r in got.rows] == [10]


def test_java_long_arithmetic_and_unrepresentable_event_times(decode):
    """baseOffset + delta and baseTimestamp + delta wrap like Java longs; a timestamp with
    no microsecond value keeps timestamp_ms and has a null event_time."""
    section = record(b"\x00" + zigzag_varint(5) + b"\x02\x01\x02v\x00")
    (row,) = decode(v2_entry(section, 1, base_offset=2**63 - 1, timestamp=2**63 - 2)).rows
    assert (row["offset"], row["timestamp_ms"]) == (-(2**63), -(2**63) + 3)
    assert row["event_time"] is None


@pytest.mark.parametrize(
    ("timestamp", "shown"),
    [
        (253402300799999, True),  # 9999-12-31T23:59:59.999Z, the last calendar millisecond
        (253402300800000, False),  # year 10000: no datetime, Spark or pandas value
        (-62135596800000, True),  # 0001-01-01T00:00:00Z
        (-62135596800001, False),
    ],
)
def test_event_time_only_inside_the_calendar(decode, timestamp, shown):
    section = record(b"\x00\x00\x00\x01\x02v\x00")
    (row,) = decode(v2_entry(section, 1, timestamp=timestamp)).rows
    assert row["timestamp_ms"] == timestamp
    assert (row["event_time"] is not None) == shown


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("/data/kafka/orders-0/00000000000000000000.log", ("orders", 0)),
        (
            "s3://bucket/landing/my.topic-with-dashes-12/00000000000000000042.log",
            ("my.topic-with-dashes", 12),
        ),
        ("C:\\dumps\\clicks-3\\00000000000000000000.log", ("clicks", 3)),
        ("/landing/dt=2024-03-01/00000000000000000000.log", (None, None)),
        ("/landing/2024-03-01/00000000000000000000.log", (None, None)),  # "01": no leading 0
        ("/landing/orders-99999999999/0.log", (None, None)),  # beyond int32
        ("00000000000000000000.log", (None, None)),
    ],
)
def test_topic_partition_from_source(source, expected):
    assert topic_partition(source) == expected

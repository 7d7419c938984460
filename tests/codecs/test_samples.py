"""The sample day: layout, determinism, and a decode that matches what the generator wrote."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import wirecodecs
from wirecodecs.kafka.schema import KAFKA_SCHEMA
from wirecodecs.samples import SUCCESS_MARKER, SampleFile, write_sample_day

DAY = dt.date(2026, 11, 3)
DAY_START = dt.datetime(2026, 11, 3, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    return write_sample_day("kafka", tmp_path_factory.mktemp("landing") / "dt=2026-11-03", DAY, 11)


@pytest.fixture(scope="module")
def decoded(day, decode):
    """Per written file (keyed by its partition folder): what was written, the decoded rows
    as a table, the quarantined frames and the accounting."""
    out = {}
    for item in day.files:
        with item.path.open("rb") as stream:
            got = decode(stream, source=str(item.path))
        rows = pa.Table.from_batches(got.batches, schema=KAFKA_SCHEMA)
        out[item.path.parent.name] = (item, rows, got.quarantined, got.accounting)
    return out


def test_layout_is_a_landed_kafka_day(day):
    root = day.marker.parent
    assert day.marker.name == SUCCESS_MARKER and day.marker.exists()
    assert day.paths[-1] == day.marker
    assert sorted(p.relative_to(root).as_posix() for p in day.paths[:-1]) == [
        "clicks-0/00000000000000000000.log",
        "orders-0/00000000000000000000.log",
        "orders-1/00000000000000000000.log",
        "payments-0/00000000000000000000.log",
    ]
    assert all(path.stat().st_size > 10_000 for path in day.paths[:-1])


def test_same_seed_same_bytes_other_seed_other_bytes(day, tmp_path):
    again = write_sample_day("kafka", tmp_path / "again", DAY, 11)
    other = write_sample_day("kafka", tmp_path / "other", DAY, 12)
    for first, second, third in zip(day.files, again.files, other.files, strict=True):
        assert first.path.read_bytes() == second.path.read_bytes()
        assert first.path.read_bytes() != third.path.read_bytes()
    assert again.totals() == day.totals()


def test_damage_is_present_and_small(day):
    totals = day.totals()
    assert totals["files"] == 4 and totals["damaged_files"] == 3
    assert totals["crc_invalid_frames"] == 1
    assert totals["undecodable_frames"] == 1
    assert totals["truncated_tail_bytes"] > 0
    bad = totals["crc_invalid_frames"] + totals["undecodable_frames"]
    assert bad / totals["frames"] < 0.01  # the demo's error budget is 5 %


def test_every_file_decodes_to_what_was_written(decoded):
    for item, rows, quarantined, accounting in decoded.values():
        assert isinstance(item, SampleFile)
        assert accounting.balanced, item.path
        assert accounting.bytes_total == item.path.stat().st_size
        assert rows.num_rows == item.decodable_records, item.path
        assert accounting.records_good == item.decodable_records
        assert accounting.records_bad == item.undecodable_records
        assert accounting.frames_good + accounting.frames_bad == item.frames
        assert len(quarantined) == item.undecodable_frames
        assert rows["crc_valid"].to_pylist().count(False) == item.crc_invalid_records
        assert accounting.bytes_truncated_tail == item.truncated_tail_bytes
        assert accounting.stop_reason == ("truncated_tail" if item.truncated_tail_bytes else "eof")


def test_topic_and_partition_come_from_the_folder(decoded):
    for name, (_, rows, _, _) in decoded.items():
        topic, partition = name.rsplit("-", 1)
        assert set(rows["topic"].to_pylist()) == {topic}
        assert set(rows["partition"].to_pylist()) == {int(partition)}


def test_timestamps_fall_inside_the_day(decoded):
    for _, rows, _, _ in decoded.values():
        magic = rows["magic"].to_pylist()
        for version, when in zip(magic, rows["event_time"].to_pylist(), strict=True):
            if version == 0:
                assert when is None  # magic 0 has no timestamp
            else:
                assert DAY_START <= when < DAY_START + dt.timedelta(days=1)


def test_the_day_covers_every_format_feature(decoded):
    rows = pa.concat_tables([rows for _, rows, _, _ in decoded.values()])
    pairs = set(zip(rows["magic"].to_pylist(), rows["compression"].to_pylist(), strict=True))
    legacy = {(m, c) for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")}
    v2 = {(2, c) for c in ("none", "gzip", "snappy", "lz4", "zstd")}
    assert legacy | v2 <= pairs
    assert {"commit", "abort"} <= set(rows["control_type"].to_pylist())
    assert any(rows["is_transactional"].to_pylist())
    stamped = zip(rows["magic"].to_pylist(), rows["timestamp_type"].to_pylist(), strict=True)
    assert {(1, "log_append_time"), (2, "log_append_time")} <= set(stamped)
    header_keys = [[h["key"] for h in hs] for hs in rows["headers"].to_pylist()]
    assert any(keys.count("retry") == 2 for keys in header_keys)  # repeated header keys
    assert None in rows["key"].to_pylist() and b"" in rows["key"].to_pylist()
    assert None in rows["value"].to_pylist() and b"" in rows["value"].to_pylist()


def test_unknown_sample_format_lists_the_known_ones(tmp_path):
    with pytest.raises(
        wirecodecs.UnknownFormatError,
        match=r"no sample writer for format .protobuf.; known: .*kafka",
    ):
        write_sample_day("protobuf", tmp_path, DAY, 0)
    assert not (tmp_path / SUCCESS_MARKER).exists()

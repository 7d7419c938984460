"""Every Hercules golden vector decodes to what its sidecar says (tests/data/hercules).

Valid files: every event's header fields, its typed tags (`tags_typed`, rebuilt from the
flat tag list) and its plain view (`tags`, against `tags_json`). Corrupt files: the events
the sidecar says decode before the error, then the rest of the file quarantined, cut
(truncated tail) or missing, as docs/hercules.md describes, with the typed error kind.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json

import pytest
from hercules_helpers import DATA, decode, decode_value, sidecar, typed, vector

from wirecodecs.accounting import HEAD_BYTES
from wirecodecs.errors import DecodeError
from wirecodecs.hercules.options import HerculesOptions

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
FRAMINGS = {"event": "events", "batch": "batch", "stream": "stream_read"}
VALID = sorted(
    path.name
    for path in DATA.iterdir()
    if path.suffix == ".bin" and not path.name.startswith("corrupt_")
)
README_SAMPLE = bytes.fromhex(  # the reference's own example event, typed in byte for byte
    "01"
    "0036462afd9ef800"
    "1120380063fd11e883e23a587d902000"
    "0002"
    "04" + b"host".hex() + "09" + "00000009" + b"localhost".hex()
    + "09" + b"timestamp".hex() + "05" + "00056d6ab2f64c00"
)  # fmt: skip


def framing(name: str) -> str:
    return FRAMINGS[name.split("_")[0]]


def check_event(row: dict, event: dict) -> None:
    assert row["byte_offset"] == event["offset"]
    assert row["size"] == event["size"]
    assert row["version"] == event["version"]
    assert row["timestamp"] == event["timestamp_ticks_100ns"]
    assert row["uuid"] == event["uuid"]
    assert row["tag_count"] == event["tag_count"]
    micros = event["timestamp_ticks_100ns"] // 10
    assert row["event_time"] == EPOCH + dt.timedelta(microseconds=micros)
    assert row["event_time"].strftime("%Y-%m-%dT%H:%M:%S.%f") == event["timestamp_utc"][:26]
    assert typed(row["tags"]) == event["tags_typed"]
    assert json.loads(row["tags_json"]) == event["tags"]


def test_the_copies_are_the_shared_vectors():
    for name in [*VALID, "batch_all.bin.lz4"]:
        assert hashlib.sha256(vector(name)).hexdigest() == sidecar(name)["sha256"]


@pytest.mark.parametrize("name", VALID)
def test_valid_vector_decodes_to_its_sidecar(name):
    truth = sidecar(name)
    got = decode(vector(name), source=name, framing=framing(name))
    assert got.quarantined == []
    assert len(got.rows) == len(truth["events"]) == truth.get("event_count", 1)
    for row, event in zip(got.rows, truth["events"], strict=True):
        assert row["source_file"] == name
        check_event(row, event)
    acc = got.accounting
    assert acc.balanced and acc.bytes_total == acc.bytes_decoded == truth["length"]
    assert (acc.records_good, acc.frames_good, acc.records_bad) == (len(got.rows),) * 2 + (0,)
    assert acc.stop_reason == "eof"


def test_readme_sample_decodes_exactly():
    assert vector("event_readme_sample.bin") == README_SAMPLE and len(README_SAMPLE) == 65
    (row,) = decode_value(README_SAMPLE, HerculesOptions())
    assert row["version"] == 1
    assert row["timestamp"] == 15_276_799_200_000_000
    assert row["event_time"] == dt.datetime(2018, 5, 30, 11, 32, tzinfo=dt.UTC)
    assert row["uuid"] == "11203800-63fd-11e8-83e2-3a587d902000"
    assert (row["size"], row["tag_count"]) == (65, 2)
    assert [(t["path"], t["type"], t["string_value"], t["int_value"]) for t in row["tags"]] == [
        ("host", "String", "localhost", None),
        ("timestamp", "Long", None, 1_527_679_920_000_000),
    ]
    assert json.loads(row["tags_json"]) == {"host": "localhost", "timestamp": 1527679920000000}
    (batch_row,) = decode(vector("batch_readme_sample.bin")).rows
    assert batch_row["byte_offset"] == 4 and batch_row["tags_json"] == row["tags_json"]


def test_lz4_body_decodes_like_the_plain_batch():
    truth = sidecar("batch_all.bin")
    assert sidecar("batch_all.bin.lz4")["original_content_length"] == truth["length"]
    got = decode(vector("batch_all.bin.lz4"), source="gate/batch_all.bin.lz4")
    assert got.quarantined == []
    for row, event in zip(got.rows, truth["events"], strict=True):
        check_event(row, event)
    assert len(got.rows) == 12
    acc = got.accounting
    assert acc.balanced and acc.bytes_decoded == len(vector("batch_all.bin.lz4"))
    forced = decode(vector("batch_all.bin.lz4"), source="no-suffix", compression="lz4").rows
    assert [(r["byte_offset"], r["uuid"], r["tags_json"], typed(r["tags"])) for r in forced] == [
        (r["byte_offset"], r["uuid"], r["tags_json"], typed(r["tags"])) for r in got.rows
    ]


def test_stream_read_state_is_read_past():
    truth = sidecar("stream_read_response.bin")
    got = decode(vector("stream_read_response.bin"), framing="stream_read")
    assert got.rows[0]["byte_offset"] == 4 + 12 * len(truth["read_state"]) + 4


def test_kafka_records_decode_as_payload_values():
    lines = gzip.decompress((DATA / "kafka_records.jsonl.gz").read_bytes()).splitlines()
    assert len(lines) == 12
    for line in lines:
        record = json.loads(line)
        (row,) = decode_value(bytes.fromhex(record["value_hex"]), HerculesOptions())
        event = {**record["event"], "offset": 0}
        check_event({**row, "byte_offset": 0}, event)
        assert record["key_hex"] == row["uuid"].replace("-", "")


# corrupt file -> (kind of the quarantined rest, or None when the file is cut instead)
CORRUPT = {
    "corrupt_count_too_large": None,  # count 3, two events: one record missing
    "corrupt_negative_count": "negative_count",
    "corrupt_negative_string_length": "negative_length",
    "corrupt_second_event_garbage": "invalid_event",  # 0xFF.. runs past the end
    "corrupt_trailing_bytes": "trailing_bytes",
    "corrupt_truncated_count": None,
    "corrupt_truncated_mid_event": None,
    "corrupt_type_zero": "invalid_type",
    "corrupt_unknown_type": "unknown_type",
    "corrupt_vector_length_overflow": "length_out_of_range",
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_vector_keeps_what_decodes_and_types_the_rest(case):
    name = f"{case}.bin"
    truth = sidecar(name)
    data = vector(name)
    assert truth["strict_reader_should_reject"]
    got = decode(data, source=name)
    good = truth["events_decodable_before_error"]
    for row, event in zip(got.rows, good, strict=True):
        check_event(row, event)
    rest = good[-1]["offset"] + good[-1]["size"] if good else min(4, len(data))
    if case == "corrupt_negative_count":
        rest = 0  # the count itself cannot be trusted
    acc = got.accounting
    assert acc.balanced and acc.bytes_total == len(data)
    assert acc.bytes_decoded == (rest if rest >= 4 else 0)
    kind = CORRUPT[case]
    if kind is None:
        assert got.quarantined == []
        assert acc.bytes_truncated_tail == len(data) - rest if rest >= 4 else len(data)
        assert acc.stop_reason == "truncated_tail"
    else:
        (item,) = got.quarantined
        assert (item.byte_offset, item.length, item.kind) == (rest, len(data) - rest, kind)
        assert item.head == data[rest : rest + HEAD_BYTES]
        assert acc.bytes_quarantined == len(data) - rest and acc.frames_bad == 1
    declared = int.from_bytes(data[:4], "big", signed=True) if len(data) >= 4 else 0
    assert acc.records_bad == max(declared - len(good), 0)


def test_vector_length_overflow_fails_before_allocating():
    data = vector("corrupt_vector_length_overflow.bin")[4:]
    with pytest.raises(DecodeError) as err:
        decode_value(data, HerculesOptions())
    assert err.value.kind == "length_out_of_range"
    assert "2147483647" in err.value.detail

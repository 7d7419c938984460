"""Round trips through our encoder (fastavro's container writer, pycernan's framing), the
typed-datum mode, event_time, options and the resync mode."""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from decimal import Decimal

import pyarrow as pa
import pytest
from budget import examples
from cernan_helpers import check_invariants, run, sidecar, vector
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecodecs.cernan import CERNAN, schema_for
from wirecodecs.cernan import encoder as enc
from wirecodecs.cernan.options import CernanOptions
from wirecodecs.cernan.packet import read_packet
from wirecodecs.cernan.schema import RECORDS_SCHEMA

pytestmark = pytest.mark.usefixtures("each_walk")  # each test on both walks (conftest.py)

EVENT = {
    "type": "record",
    "name": "Event",
    "namespace": "test.host-1",  # not a valid Avro name: producers send such namespaces
    "fields": [
        {"name": "ts", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "blob", "type": "bytes"},
        {"name": "score", "type": ["null", "double"]},
        {"name": "tags", "type": {"type": "array", "items": "int"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
    ],
}
U64 = st.integers(0, 2**64 - 1)
records_st = st.lists(
    st.fixed_dictionaries(
        {
            "ts": st.integers(-(2**63), 2**63 - 1),
            "name": st.text(max_size=20),
            "blob": st.binary(max_size=20),
            "score": st.none() | st.floats(allow_nan=False),
            "tags": st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4),
            "attrs": st.dictionaries(st.text(max_size=5), st.integers(-(2**63), 2**63 - 1)),
        }
    ),
    max_size=6,
)
kv_st = st.lists(st.tuples(st.binary(max_size=12), st.binary(max_size=40)), max_size=4)
packet_st = st.fixed_dictionaries(
    {
        "records": records_st,
        "version": st.sampled_from([1, 2]),
        "control": st.sampled_from([0, 1]),
        "id": U64,
        "shard_by": U64,
        "kv": kv_st,
        "codec": st.sampled_from(["null", "deflate", "snappy"]),
        "per_block": st.sampled_from([None, 1, 2]),
    }
)


def plain_json(record: dict) -> dict:
    """The record as the records table must render it: bytes as base64."""
    return {**record, "blob": base64.b64encode(record["blob"]).decode()}


def build(spec: dict) -> bytes:
    avro = enc.container(
        EVENT, spec["records"], codec=spec["codec"], records_per_block=spec["per_block"]
    )
    kv = spec["kv"] if spec["version"] == 2 else ()
    fields = {k: spec[k] for k in ("version", "control", "id", "shard_by")}
    return enc.frame(enc.Packet(avro, kv=kv, **fields))


@settings(max_examples=examples(0.6))
@given(st.lists(packet_st, max_size=5))
def test_any_dump_round_trips(packets):
    data = b"".join(build(spec) for spec in packets)
    result = run(data)
    check_invariants(result, len(data))
    assert result.accounting.frames_good == len(packets)
    assert [json.loads(row["record_json"]) for row in result.records] == [
        plain_json(record) for spec in packets for record in spec["records"]
    ]
    offset = 0
    for spec, row in zip(packets, result.packets, strict=True):
        assert row["byte_offset"] == offset
        offset += len(build(spec))
        assert (row["version"], row["control"], row["sync"]) == (
            spec["version"],
            spec["control"],
            bool(spec["control"]),
        )
        assert (row["id"], row["shard_by"]) == (Decimal(spec["id"]), Decimal(spec["shard_by"]))
        assert row["cernan_kafka_key"] == f"{spec['shard_by']:X}"
        assert row["codec"] == spec["codec"]
        assert row["record_count"] == row["declared_record_count"] == len(spec["records"])
        if spec["version"] == 1:
            assert row["kv"] is None
        else:
            assert [(kv["key_bytes"], kv["value"]) for kv in row["kv"]] == spec["kv"]
        assert row["schema_full_name"] == "test.host-1.Event"
        assert "schema_name_not_avro_spec_valid" in row["warnings"]


@pytest.mark.parametrize("batch_rows", [1, 5, 1000])
def test_batches_are_bounded_by_batch_rows(batch_rows):
    records = [
        {"ts": i, "name": "n", "blob": b"", "score": None, "tags": [], "attrs": {}}
        for i in range(21)
    ]
    spec = {"version": 2, "control": 1, "id": 1, "shard_by": 2, "kv": [], "per_block": 4}
    data = b"".join(
        build({**spec, "records": records[at : at + 7], "codec": "null"}) for at in (0, 7, 14)
    )
    result = run(data, batch_rows=batch_rows)
    assert all(batch.num_rows <= batch_rows for batch in result.batches)
    assert all(batch.schema == RECORDS_SCHEMA for batch in result.batches)
    assert [json.loads(row["record_json"])["ts"] for row in result.records] == list(range(21))
    assert [row["record_index_in_block"] for row in result.records[:7]] == [0, 1, 2, 3, 0, 1, 2]
    assert [row["block_index"] for row in result.records[:7]] == [0, 0, 0, 0, 1, 1, 1]


def test_event_time_from_a_datum_field():
    records = [
        {"ts": 1_700_000_000_123, "name": "a", "blob": b"", "score": None, "tags": [], "attrs": {}},
        {"ts": 2**62, "name": "far", "blob": b"", "score": None, "tags": [], "attrs": {}},
    ]
    spec = {"version": 2, "control": 0, "id": 0, "shard_by": 0, "kv": [], "per_block": None}
    data = build({**spec, "records": records, "codec": "deflate"})
    result = run(data, event_time_field="ts")
    first = dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)
    assert [row["event_time"] for row in result.records] == [first, None]  # out of range: null
    assert result.packets[0]["event_time"] == first
    seconds = run(data, event_time_field="ts", event_time_unit="s")
    assert seconds.records[0]["event_time"] is None  # 1.7e12 s is past year 9999
    missing = run(data, event_time_field="meta.ts")
    assert [row["event_time"] for row in missing.records] == [None, None]


def test_event_time_from_a_logical_timestamp():
    truth = sidecar("v2_schemas")
    result = run(vector("v2_schemas"), event_time_field="created_at")
    orders = [row for row in result.records if row["schema_full_name"].endswith("Order")]
    wanted = [
        dt.datetime.fromisoformat(row["record"]["created_at"].replace("Z", "+00:00"))
        for row in truth["expected"]["rows"]
        if row["schema_full_name"].endswith("Order")
    ]
    assert [row["event_time"] for row in orders] == wanted and len(wanted) == 2


def test_unknown_and_bad_options_are_refused():
    with pytest.raises(ValueError, match="unknown option"):
        run(b"", max_packet_byte=1)
    with pytest.raises(ValueError, match="event_time_unit"):
        run(b"", event_time_unit="minutes")
    with pytest.raises(ValueError, match="max_packet_bytes"):
        run(b"", max_packet_bytes=0)


# ---- typed datum (option datum_schema_file) --------------------------------------------------


def write_avsc(tmp_path, schema_json: str):
    path = tmp_path / "datum.avsc"
    path.write_text(schema_json)
    return str(path)


def test_typed_records_follow_the_expected_schema(tmp_path):
    truth = sidecar("v2_schemas")
    packets = truth["expected"]["packets"]
    avsc = write_avsc(tmp_path, packets[0]["avro"]["schema_json"])  # oracle.cernan.AllTypes
    result = run(vector("v2_schemas"), datum_schema_file=avsc)
    check_invariants(result, truth["size"])
    assert all(
        batch.schema == schema_for(CernanOptions(datum_schema_file=avsc))
        for batch in result.batches
    )
    assert schema_for(CernanOptions(datum_schema_file=avsc)).field("record").type.field(
        "i"
    ).type == (pa.int32())
    assert [p["status"] for p in result.packets] == ["ok"] * 3 + ["error"] * 7 + ["ok"] + [
        "error"
    ] * 2  # the zero-record packet is ok: nothing to resolve
    assert {p["error_code"] for p in result.packets if p["status"] == "error"} == {
        "avro_schema_mismatch"
    }
    wanted = [row["record"] for row in truth["expected"]["rows"] if row["packet_index"] < 3]
    assert len(result.records) == len(wanted) == 12
    for got, want in zip((row["record"] for row in result.records), wanted, strict=True):
        for name in ("i", "l", "f", "d", "b", "s", "nothing", "tags", "color", "point"):
            assert got[name] == want[name], name
        assert got["raw"] == base64.b64decode(want["raw"])
        assert got["digest"] == base64.b64decode(want["digest"])
        assert dict(got["attrs"]) == want["attrs"]
        assert from_json(got["choice"]) == want["choice"]  # a 3-branch union: JSON
        assert from_json(got["child"]) == want["child"]  # a recursive record: JSON


def from_json(text: str | None) -> object:
    return None if text is None else json.loads(text)


def test_typed_logical_types(tmp_path):
    truth = sidecar("v2_schemas")
    avsc = write_avsc(tmp_path, truth["expected"]["packets"][3]["avro"]["schema_json"])
    result = run(vector("v2_schemas"), datum_schema_file=avsc)
    wanted = [row["record"] for row in truth["expected"]["rows"] if row["packet_index"] == 3]
    got = [row["record"] for row in result.records]
    assert len(got) == len(wanted) == 2
    for row, want in zip(got, wanted, strict=True):
        assert row["order_id"] == want["order_id"]
        assert row["created_at"] == dt.datetime.fromisoformat(
            want["created_at"].replace("Z", "+00:00")
        )
        assert row["delivery_date"] == dt.date.fromisoformat(want["delivery_date"])
        hours, minutes, seconds = want["prep_time"].split(":")
        millis = round((int(hours) * 3600 + int(minutes) * 60 + float(seconds)) * 1000)
        assert row["prep_time"] == millis
        assert row["amount"] == Decimal(want["amount"])
        assert row["tip"] == Decimal(want["tip"])


def test_nan_and_infinities_are_kept():
    weird = [float("nan"), float("inf"), float("-inf"), None, 1e300]
    records = [
        {"ts": 0, "name": "x", "blob": b"", "score": score, "tags": [], "attrs": {}}
        for score in weird
    ]
    spec = {"version": 2, "control": 0, "id": 0, "shard_by": 0, "kv": [], "per_block": None}
    result = run(build({**spec, "records": records, "codec": "null"}))
    scores = [json.loads(row["record_json"])["score"] for row in result.records]
    assert math.isnan(scores[0]) and scores[1:] == weird[1:]


def test_default_schema_is_json():
    assert schema_for(CernanOptions()) == CERNAN.schema == RECORDS_SCHEMA
    assert CERNAN.tables["packets"].field("id").type == pa.decimal128(20, 0)


# ---- framing options -------------------------------------------------------------------------


def test_a_length_above_the_safety_bound_is_skipped_unread():
    good = vector("v2_basic")[:306]
    body = enc.payload(enc.Packet(good[4 + 24 + 1 :]))
    huge = enc.frame(enc.Packet(good[4 + 24 + 1 :]), length=5000) + bytes(5000 - len(body))
    data = good + huge + good
    result = run(data, max_packet_bytes=4096)
    check_invariants(result, len(data))
    assert [p["status"] for p in result.packets] == ["ok", "error", "ok"]
    bad = result.packets[1]
    assert (bad["error_stage"], bad["error_code"], bad["complete"]) == (
        "framing",
        "packet_too_large",
        True,
    )
    assert [(q.byte_offset, q.length, q.kind) for q in result.quarantined] == [
        (306, 5004, "packet_too_large")
    ]
    cut = run(good + huge[:1000], max_packet_bytes=4096)  # the file ends inside it
    assert cut.accounting.bytes_truncated_tail == 1000
    assert cut.packets[-1]["error_code"] == "truncated_packet"


@pytest.mark.parametrize("case", ["corrupt_length_overrun", "corrupt_length_underrun"])
def test_resync_recovers_packets_after_a_framing_error(case):
    truth = sidecar(case)
    data = vector(case)
    strict = run(data)
    result = run(data, resync=True)
    check_invariants(result, len(data))
    written = [w for w in truth["written"] if w["intent"] == "valid"]
    last = written[-1]  # the packet the strict walk loses
    assert last["offset"] not in [p["byte_offset"] for p in strict.packets]
    recovered = [p for p in result.packets if p["resynced"]]
    assert [p["byte_offset"] for p in recovered] == [last["offset"]]
    assert recovered[0]["status"] == "ok"
    framing = result.packets[-2]
    assert framing["error_stage"] == "framing" and not framing["complete"]
    acc = result.accounting
    assert acc.bytes_skipped == last["offset"] - framing["byte_offset"]
    assert acc.bytes_truncated_tail == 0 and acc.stop_reason == "eof"
    assert acc.frames_good == strict.accounting.frames_good + 1
    assert len(result.records) == len(strict.records) + 2


def test_resync_without_a_packet_after_the_damage_is_a_truncated_tail():
    data = vector("corrupt_truncated_tail")
    assert run(data, resync=True).accounting == run(data).accounting


@pytest.mark.parametrize("extra", [-30, -3, 0, 7, (1 << 20) + 1])
def test_resync_scans_long_garbage_in_steps(extra):
    """Garbage longer than one scan step (1 MiB), the packet after it at every side of a
    step boundary."""
    good = vector("v2_basic")[:306]
    garbage = b"\xff" * ((1 << 20) + extra)
    data = good + garbage + good
    result = run(data, resync=True)
    check_invariants(result, len(data))
    assert result.accounting.bytes_skipped == len(garbage)
    assert [p["status"] for p in result.packets] == ["ok", "error", "ok"]
    assert result.packets[2]["resynced"] and result.packets[2]["byte_offset"] == 306 + len(garbage)


def test_a_datum_that_cannot_be_rendered_fails_its_packet_only():
    frame = memoryview(vector("v2_basic")[:306])

    def boom(packet):
        raise RecursionError("too deep")

    packet = read_packet(frame, 0, render=boom)
    assert (packet.error.stage, packet.error.code) == ("avro_block", "avro_datum_render_failed")
    assert packet.error.lost == 1 and packet.datums == []
    assert read_packet(frame, 0).error is None

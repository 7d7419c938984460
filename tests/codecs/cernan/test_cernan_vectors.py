"""Every cernan golden vector decodes to what its sidecar says (packets, rows, stop,
accounting). The sidecars are the truth; the one planned difference: packets from the
pycernan unicode bug carry the sidecar's detail plus a note naming the bug."""

from __future__ import annotations

import base64
import hashlib
import json
from decimal import Decimal

import pytest
from cernan_helpers import DATA, check_invariants, run, same_values, sidecar, vector
from decoding import ChunkedReads

from wirecodecs.cernan import encoder as enc

pytestmark = pytest.mark.usefixtures("each_walk")  # each test on both walks (conftest.py)

MANIFEST = json.loads((DATA / "MANIFEST.json").read_text())
CASES = [item["file"][: -len(".bin")] for item in MANIFEST["files"] if "/" not in item["file"]]
PYCERNAN_NOTE = "written by the pycernan unicode bug"


def test_every_small_vector_is_here():
    assert sorted(CASES) == sorted(path.stem for path in DATA.glob("*.bin"))
    assert len(CASES) == 17


def expected_accounting(truth: dict) -> dict:
    packets = truth["expected"]["packets"]
    stop = truth["expected"]["stop"]
    complete = [p for p in packets if p["complete"]]
    return {
        "bytes_total": truth["size"],
        "bytes_decoded": sum(p["frame_size"] for p in complete if p["status"] == "ok"),
        "bytes_quarantined": sum(p["frame_size"] for p in complete if p["status"] == "error"),
        "bytes_truncated_tail": truth["size"] - stop["offset"],
        "bytes_skipped": 0,
        "frames_good": truth["expected"]["summary"]["ok_packets"],
        "frames_bad": len([p for p in complete if p["status"] == "error"]),
        "records_good": truth["expected"]["summary"]["rows"],
        "stop_reason": "eof" if stop["reason"] == "eof" else "truncated_tail",
    }


def check_packet(got: dict, want: dict, intent: str) -> None:
    assert got["packet_index"] == want["index"]
    assert got["byte_offset"] == want["offset"]
    assert got["packet_length"] == want["length"]
    assert got["complete"] == want["complete"]
    assert got["status"] == want["status"]
    assert got["resynced"] is False
    error = want["error"]
    if error is None:
        assert (got["error_stage"], got["error_code"], got["error_detail"]) == (None,) * 3
    else:
        assert (got["error_stage"], got["error_code"]) == (error["stage"], error["code"])
        if intent == "corrupt:pycernan_char_length_bug":
            assert got["error_detail"].startswith(error["detail"] + "; ")
            assert PYCERNAN_NOTE in got["error_detail"]
        else:
            assert got["error_detail"] == error["detail"]
    if not want["complete"]:
        assert got["record_count"] == 0 and got["version"] is None
        return
    assert got["warnings"] == want["warnings"]
    header = want["header"]
    if header is None:
        assert got["version"] is None and got["id"] is None
    else:
        for name in ("version", "control", "sync", "id_hex", "shard_by_hex", "cernan_kafka_key"):
            assert got[name] == header[name], name
        assert got["id"] == Decimal(header["id"]) and got["shard_by"] == Decimal(header["shard_by"])
    check_kv(got, want)
    check_avro(got, want.get("avro"))
    assert got["record_count"] == want.get("record_count", 0)
    assert got["records_before_error"] == want.get("records_before_error")


def check_kv(got: dict, want: dict) -> None:
    if want["kv"] is None:
        assert got["kv"] is None and got["kv_map"] is None
        return
    assert [(kv["key"], kv["key_bytes"].hex(), kv["value"].hex()) for kv in got["kv"]] == [
        (kv["key"], kv["key_hex"], kv["value_hex"]) for kv in want["kv"]
    ]
    last_wins = {kv["key"]: kv["value_utf8"] for kv in want["kv"] if kv["key"] is not None}
    assert dict(got["kv_map"]) == last_wins
    assert got["kv_section_length"] == want["kv_section_length"]


def check_avro(got: dict, avro: dict | None) -> None:
    if avro is None:
        assert got["avro_offset"] is None and got["schema_fingerprint"] is None
        return
    assert got["avro_offset"] == avro["offset"]
    assert got["avro_length"] == avro["length"]
    assert got["avro_sha256"] == avro["sha256"]
    if "codec" not in avro:  # the container header could not be read
        assert got["codec"] is None and got["schema_fingerprint"] is None
        return
    assert got["codec"] == avro["codec"]
    assert got["schema_json"] == avro["schema_json"]
    assert got["schema_full_name"] == avro["schema_full_name"]
    assert got["schema_fingerprint"] == avro["fingerprint_crc64_avro_le_hex"]
    assert got["ocf_sync"].hex() == avro["sync_hex"]
    assert {k: v.hex() for k, v in got["ocf_user_metadata"]} == avro["user_metadata_hex"]
    assert got["block_count"] == avro["block_count"]
    assert got["block_record_counts"] == avro["block_record_counts"]
    assert got["declared_record_count"] == sum(avro["block_record_counts"])


def check_row(got: dict, want: dict, source: str) -> None:
    assert got["source_file"] == source
    assert got["byte_offset"] == want["packet_offset"]
    assert got["packet_index"] == want["packet_index"]
    assert got["id"] == Decimal(want["id"]) and got["shard_by"] == Decimal(want["shard_by"])
    assert got["schema_fingerprint"] == want["schema_fingerprint"]
    assert got["schema_full_name"] == want["schema_full_name"]
    for name in ("block_index", "record_index_in_block", "record_index"):
        assert got[name] == want[name], name
    assert same_values(json.loads(got["record_json"])) == same_values(want["record"])
    assert got["event_time"] is None  # no event_time_field configured


@pytest.mark.parametrize("case", CASES)
def test_vector_decodes_as_its_sidecar_says(case):
    truth = sidecar(case)
    data = vector(case)
    assert hashlib.sha256(data).hexdigest() == truth["sha256"]  # the copy is the original
    result = run(data, source=case)
    check_invariants(result, len(data))
    assert {
        name: getattr(result.accounting, name) for name in expected_accounting(truth)
    } == expected_accounting(truth)
    expected = truth["expected"]
    intents = {w["offset"]: w["intent"] for w in truth["written"]}
    assert len(result.packets) == len(expected["packets"])
    for got, want in zip(result.packets, expected["packets"], strict=True):
        check_packet(got, want, intents.get(want["offset"], "valid"))
    assert len(result.records) == len(expected["rows"])
    for got, want in zip(result.records, expected["rows"], strict=True):
        check_row(got, want, case)
    quarantined = [p for p in expected["packets"] if p["status"] == "error" and p["complete"]]
    assert [(q.byte_offset, q.length, q.kind) for q in result.quarantined] == [
        (p["offset"], p["frame_size"], p["error"]["code"]) for p in quarantined
    ]


@pytest.mark.parametrize("case", ["v2_schemas", "corrupt_avro_block", "v2_kv_limits"])
@pytest.mark.parametrize("step", [1, 7, 4096])
def test_short_reads_change_nothing(case, step):
    data = vector(case)
    whole = run(data, source=case)
    trickled = run(ChunkedReads(data, [step]), source=case)
    assert trickled.records == whole.records
    assert trickled.packets == whole.packets
    assert trickled.accounting == whole.accounting


def test_yield_order_follows_the_file():
    """Rows and packets rows of a stretch come out before a later quarantined packet."""
    result = run(vector("corrupt_avro_header"), source="x")
    assert result.kinds[:3] == ["records", "packets", "quarantined"]
    offsets = [q.byte_offset for q in result.quarantined]
    assert offsets == sorted(offsets)


# ---- the ~1 MiB pair (vectors/cernan/large): generated here, checked against its sidecar's
# ---- facts (payload 1 048 576 bytes: no warning; 1 048 577: exceeds_cernan_max_payload) ----

BLOB = {
    "type": "record",
    "name": "Blob",
    "namespace": "oracle.cernan",
    "fields": [{"name": "data", "type": "bytes"}],
}


def sized_packet(payload_length: int) -> tuple[bytes, bytes]:
    """A v2 null-codec packet of one Blob whose payload is exactly `payload_length`."""
    data_len = payload_length - 200
    while True:
        blob = bytes(i % 251 for i in range(data_len))
        packet = enc.Packet(enc.container(BLOB, [{"data": blob}]), id=1, shard_by=1)
        size = len(enc.payload(packet))
        if size == payload_length:
            return enc.frame(packet), blob
        data_len += payload_length - size


@pytest.mark.parametrize(("length", "warnings"), [(1 << 20, []), ((1 << 20) + 1, None)])
def test_payloads_around_cernan_max_decode(length, warnings):
    warnings = ["exceeds_cernan_max_payload"] if warnings is None else warnings
    big, blob = sized_packet(length)
    tail = vector("v2_basic")[:306]  # its first packet, whole
    result = run(big + tail)
    check_invariants(result, len(big) + len(tail))
    assert [(p["packet_length"], p["warnings"]) for p in result.packets] == [
        (length, warnings),
        (302, []),
    ]
    assert result.records[0]["record_json"] == json.dumps(
        {"data": base64.b64encode(blob).decode()}, separators=(",", ":")
    )
    assert len(result.records) == 2

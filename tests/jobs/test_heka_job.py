"""The decode job end to end on local Spark for the `heka` source, against the sidecars.

One landing day built from the golden vectors (plain, gzip, snappy, signed with good and
bad digests, garbage between frames, undecodable bodies, a cut last record) is decoded
once with the signer table given as a keys file outside the landing; the tests read back
the Parquet rows, the quarantine and the manifest.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from jobrun import decoded_day

pytestmark = pytest.mark.spark

VECTORS = Path(__file__).resolve().parents[1] / "data" / "heka"
DAY = "2026-11-20"
LANDED = {  # landing path -> golden vector
    "web-01/basic.heka": "basic.heka",
    "web-01/garbage_between.heka": "garbage_between.heka",
    "web-02/basic_gzip.heka.gz": "basic_gzip.heka.gz",
    "web-02/snappy_mixed.heka": "snappy_mixed.heka",
    "pay-01/signed_mixed.heka": "signed_mixed.heka",
    "pay-01/bad_hmac.heka": "bad_hmac.heka",
    "pay-02/invalid_bodies.heka": "invalid_bodies.heka",
    "pay-02/truncated_in_body.heka": "truncated_in_body.heka",
    "bulk/many_records.heka": "many_records.heka",
}


def sidecar(vector: str) -> dict:
    return json.loads(gzip.decompress((VECTORS / f"{vector}.json.gz").read_bytes()))


def good(record: dict) -> bool:
    """A row: a complete frame whose message has a timestamp (any uuid, see uuid_valid)."""
    message = record["message"]
    return not record.get("truncated") and message is not None and message["timestamp"] is not None


def uuid_text(message: dict) -> str | None:
    """The sidecar's canonical uuid, else the bytes it records (`uuid_hex`) as text."""
    if message["uuid"] is not None or message["uuid_hex"] is None:
        return message["uuid"]
    return bytes.fromhex(message["uuid_hex"]).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("heka-decode")
    landing, warehouse = root / "landing", root / "warehouse"
    for landed, vector in LANDED.items():
        (landing / landed).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(VECTORS / vector, landing / landed)
    (landing / "_SUCCESS").write_text("")
    keys = root / "secrets" / "heka_hmac_keys.json"
    keys.parent.mkdir()
    keys.write_text(json.dumps(sidecar("basic.heka")["signers"]))
    args = ["--envelope", "heka", "--payload", "raw", "--max-error-rate", "0.01"]
    args += ["--options", json.dumps({"hmac_keys_file": str(keys)})]
    return {"landing": landing, **decoded_day(spark, "heka", DAY, landing, warehouse, *args)}


def test_rows_match_the_sidecars_file_by_file(run):
    assert run["code"] == 0
    rows = run["rows"].to_pylist()
    for landed, vector in LANDED.items():
        source = f"{run['landing']}/{landed}"
        mine = [r for r in rows if r["source_file"] == source]
        expected = [
            (
                r["offset"],
                uuid_text(r["message"]),
                r["message"]["uuid"] is not None,
                r["message"]["timestamp"],
                None if r["hmac_check"] == "unsigned" else r["hmac_check"],
                r["body_encoding"],
                [f["name"] for f in r["message"]["fields"]],
            )
            for r in sidecar(vector)["records"]
            if good(r)
        ]
        found = [
            (
                r["byte_offset"],
                r["uuid"],
                r["uuid_valid"],
                r["timestamp"],
                r["hmac_status"],
                r["body_encoding"],
                [f["name"] for f in r["fields"]],
            )
            for r in mine
        ]
        assert found == expected, landed


def test_typed_values_survive_parquet(run):
    rows = run["rows"]
    assert str(rows.schema.field("event_time").type) == "timestamp[us, tz=UTC]"
    assert str(rows.schema.field("timestamp").type) == "int64"
    basic = [r for r in rows.to_pylist() if r["source_file"].endswith("web-01/basic.heka")]
    extremes = {f["name"]: f for r in basic for f in r["fields"]}
    truth = {f["name"]: f for r in sidecar("basic.heka")["records"] for f in r["message"]["fields"]}
    for name, field in extremes.items():
        assert field["value_integer"] == truth[name]["value_integer"], name
        assert field["value_bool"] == truth[name]["value_bool"], name
        assert [v.hex() for v in field["value_bytes"]] == truth[name]["value_bytes_hex"], name


def test_bad_bodies_are_quarantined_with_kind_and_head(run):
    quarantine = run["quarantine"].to_pylist()
    source = f"{run['landing']}/pay-02/invalid_bodies.heka"
    data = (VECTORS / "invalid_bodies.heka").read_bytes()
    bad = [r for r in sidecar("invalid_bodies.heka")["records"] if not good(r)]
    assert [(q["source_file"], q["byte_offset"], q["length"], q["format"]) for q in quarantine] == [
        (source, r["offset"], r["framed_length"], "heka") for r in bad
    ]
    assert [q["error_kind"] for q in quarantine] == [
        "missing_timestamp",
        "invalid_protobuf",
        "invalid_protobuf",
    ]
    for q, record in zip(quarantine, bad, strict=True):  # a frame's first 64 bytes at most
        assert q["head"] == data[record["offset"] :][: min(record["framed_length"], 64)]


def test_manifest_accounts_for_every_byte(run):
    manifest = run["manifest"]
    files = {entry["source"]: entry for entry in manifest["files"]}
    assert set(files) == {f"{run['landing']}/{landed}" for landed in LANDED}
    for landed, vector in LANDED.items():
        entry = files[f"{run['landing']}/{landed}"]
        side = sidecar(vector)
        size = (VECTORS / vector).stat().st_size
        bad = [r for r in side["records"] if not good(r) and not r.get("truncated")]
        tail = side["truncated_tail"]["bytes_present"] if side["truncated_tail"] else 0
        expected = {
            "bytes_total": size,
            "bytes_skipped": sum(g["length"] for g in side["garbage"]),
            "bytes_truncated_tail": tail,
            "bytes_quarantined": sum(r["framed_length"] for r in bad),
            "frames_bad": len(bad),
            "records_good": sum(1 for r in side["records"] if good(r)),
        }
        expected["bytes_decoded"] = size - sum(
            expected[k] for k in ("bytes_skipped", "bytes_truncated_tail", "bytes_quarantined")
        )
        assert {key: entry[key] for key in expected} == expected, landed
        assert entry["rows"] == entry["records_good"]
    totals = manifest["totals"]
    assert totals["rows"] == run["rows"].num_rows == 5 + 5 + 5 + 5 + 4 + 6 + 3 + 2 + 1000
    assert totals["frames_bad"] == totals["quarantine_items"] == 3
    assert totals["truncated_tail_files"] == 1
    assert manifest["options"]["hmac_keys_file"].endswith("heka_hmac_keys.json")

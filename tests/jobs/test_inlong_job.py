"""The decode job on local Spark over a length-prefixed InLong landing built from the
golden vectors; the Parquet it writes is read back with pyarrow and checked against the
sidecars (bodies per message), the quarantine and the manifest against the vectors."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pytest
from jobrun import decoded_day

pytestmark = pytest.mark.spark

VECTORS = Path(__file__).resolve().parents[1] / "data" / "inlong"
CASES = sorted(path.stem for path in VECTORS.glob("*.bin"))
DAY = "2023-11-14"
CUT = ["v1_snappy_multi", "v4_snappy_by_sdk", "v3_plain"]  # the last frame of dp-1 is cut


def sidecar(case: str) -> dict:
    return json.loads(gzip.decompress((VECTORS / f"{case}.json.gz").read_bytes()))


def frames(cases: list[str]) -> tuple[bytes, dict[str, int]]:
    data, offsets = b"", {}
    for case in cases:
        body = (VECTORS / f"{case}.bin").read_bytes()
        offsets[case] = len(data)
        data += len(body).to_bytes(4, "big") + body
    return data, offsets


def reference(case: str) -> list[bytes] | None:
    """The item bodies a case holds in wire-group order (expected, else Java's parse when
    Java parsed it normally), None for the error cases."""
    side = sidecar(case)
    truth = side["expected"] or (
        side["java_parse"] if case.startswith(("ext_", "edge_v")) else None
    )
    if truth is None or case == "edge_v1_duplicate_attr":
        return None
    return sorted(
        base64.b64decode(item["b64"]) for attr in truth["attrs"] for item in attr["items"]
    )


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("inlong")
    landing, warehouse = root / "landing", root / "warehouse"
    all_data, all_offsets = frames(CASES)
    cut_data, _ = frames(CUT)
    (landing / "dp-0").mkdir(parents=True)
    (landing / "dp-1").mkdir()
    (landing / "dp-0" / "all.bin").write_bytes(all_data)
    (landing / "dp-1" / "cut.bin").write_bytes(cut_data[:-10])
    (landing / "_SUCCESS").write_text("")
    args = ["--envelope", "inlong", "--payload", "raw", "--max-error-rate", "0.5",
            "--max-bad-byte-rate", "0.5",
            "--options", '{"framing": "length_prefixed", "batch_rows": 5}']  # fmt: skip
    return {
        **decoded_day(spark, "inlong", DAY, landing, warehouse, *args),
        "landing": landing,
        "offsets": all_offsets,
        "sizes": (len(all_data), len(cut_data) - 10),
    }


def test_rows_match_the_sidecars_message_by_message(run):
    assert run["code"] == 0
    rows = run["rows"].to_pylist()
    source = str(run["landing"] / "dp-0" / "all.bin")
    for case, offset in run["offsets"].items():
        want = reference(case)
        if want is None:
            continue
        mine = [r for r in rows if r["source_file"] == source and r["byte_offset"] == offset]
        assert sorted(r["body"] for r in mine) == want, case
        assert sorted(r["item_index"] for r in mine) == list(range(len(mine)))
        version = (sidecar(case)["expected"] or sidecar(case)["java_parse"])["version"]
        assert {r["version"] for r in mine} == {version}


def test_cut_file_keeps_its_whole_frames(run):
    rows = run["rows"].to_pylist()
    source = str(run["landing"] / "dp-1" / "cut.bin")
    found = sorted(r["body"] for r in rows if r["source_file"] == source)
    assert found == sorted(reference(CUT[0]) + reference(CUT[1]))


def test_quarantine_and_manifest_account_for_every_byte(run):
    quarantine = run["quarantine"].to_pylist()
    errors = [
        case for case in CASES if reference(case) is None and case != "edge_v1_duplicate_attr"
    ]
    assert sorted(q["byte_offset"] for q in quarantine) == sorted(run["offsets"][c] for c in errors)
    assert {q["error_kind"] for q in quarantine} >= {
        "bad_magic",
        "decompress_failed",
        "invalid_attribute",
    }
    totals = run["manifest"]["totals"]
    assert totals["records_good"] == run["rows"].num_rows
    assert totals["frames_bad"] == len(errors)
    assert totals["frames_good"] == len(CASES) - len(errors) + 2
    files = {Path(entry["source"]).name: entry for entry in run["manifest"]["files"]}
    assert files["all.bin"]["bytes_total"] == run["sizes"][0]
    assert files["cut.bin"]["stop_reason"] == "truncated_tail"
    assert (
        files["cut.bin"]["bytes_truncated_tail"]
        == 4 + (VECTORS / "v3_plain.bin").stat().st_size - 10
    )


def test_maps_and_types_survive_in_parquet(run):
    schema = run["rows"].schema
    assert schema.field("attributes").type == pa.map_(pa.string(), pa.string())
    assert schema.field("body").type == pa.binary()
    assert schema.field("event_time").type == pa.timestamp("us", tz="UTC")
    row = next(
        r for r in run["rows"].to_pylist() if r["byte_offset"] == run["offsets"]["v4_private_attrs"]
    )
    assert dict(row["attributes"])["groupId"] == "g_demo" and row["private_attributes"]

"""The decode job on cernan dumps, on local Spark: records to <warehouse>/cernan, one row
per packet to <warehouse>/cernan_packets, quarantine and manifest, checked against the
golden sidecars. Two runs: the default JSON datum, and a typed datum (datum_schema_file)."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from jobrun import read_manifest, run_quietly

from jobs import lake

pytestmark = pytest.mark.spark

VECTORS = Path(__file__).resolve().parents[1] / "data" / "cernan"
DAY = "2024-03-01"
LANDED = {  # landing path -> golden vector
    "proxy-a/v2_basic.bin": "v2_basic",
    "proxy-a/v2_pycernan_style.bin": "v2_pycernan_style",
    "proxy-b/mixed_v1_v2.bin": "mixed_v1_v2",
    "proxy-b/corrupt_avro_block.bin": "corrupt_avro_block",
    "proxy-c/corrupt_pycernan_unicode_kv.bin": "corrupt_pycernan_unicode_kv",
    "proxy-c/corrupt_truncated_tail.bin": "corrupt_truncated_tail",
}


def sidecar(name: str) -> dict:
    return json.loads(gzip.decompress((VECTORS / f"{name}.json.gz").read_bytes()))


def read_table(warehouse: Path, name: str) -> pa.Table | None:
    return lake.read_day(str(warehouse / name), dt.date.fromisoformat(DAY))


def rows(table: pa.Table | None) -> list[dict]:
    return [] if table is None else table.to_pylist()


def run_job(spark, landing: Path, warehouse: Path, **options) -> dict:
    argv = ["--source", "cernan", "--envelope", "cernan", "--date", DAY]
    argv += ["--landing", str(landing), "--warehouse", str(warehouse)]
    argv += ["--reports", str(warehouse.parent / "reports")]
    argv += ["--max-error-rate", "0.5", "--max-bad-byte-rate", "0.5"]
    argv += ["--options", json.dumps(options)]
    code = run_quietly(spark, argv)
    records, packets = read_table(warehouse, "cernan"), read_table(warehouse, "cernan_packets")
    return {
        "code": code,
        "records": rows(records),
        "records_schema": records.schema,
        "packets": rows(packets),
        "packets_schema": packets.schema,
        "quarantine": rows(read_table(warehouse, "_quarantine/cernan")),
        "manifest": read_manifest(warehouse, "cernan", DAY),
    }


@pytest.fixture(scope="module")
def day(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("cernan")
    landing = root / "landing"
    for landed, vector in LANDED.items():
        (landing / landed).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(VECTORS / f"{vector}.bin", landing / landed)
    (landing / "_SUCCESS").write_text("")
    typed_landing = root / "typed"
    typed_landing.mkdir()
    shutil.copyfile(VECTORS / "v2_basic.bin", typed_landing / "v2_basic.bin")
    avsc = root / "user.avsc"
    avsc.write_text(sidecar("v2_basic")["expected"]["packets"][0]["avro"]["schema_json"])
    return {
        "landing": landing,
        "json": run_job(spark, landing, root / "warehouse"),
        "typed": run_job(
            spark, typed_landing, root / "warehouse-typed", datum_schema_file=str(avsc)
        ),
        "typed_landing": typed_landing,
    }


def test_records_match_the_sidecars(day):
    run = day["json"]
    assert run["code"] == 0
    got = sorted(
        (
            r["source_file"],
            r["byte_offset"],
            r["record_index"],
            r["id"],
            json.loads(r["record_json"]),
        )
        for r in run["records"]
    )
    want = sorted(
        (
            f"{day['landing']}/{landed}",
            row["packet_offset"],
            row["record_index"],
            Decimal(row["id"]),
            row["record"],
        )
        for landed, vector in LANDED.items()
        for row in sidecar(vector)["expected"]["rows"]
    )
    assert got == want
    assert run["records_schema"].field("id").type == pa.decimal128(20, 0)


def test_packets_table_has_one_row_per_frame(day):
    run = day["json"]
    got = sorted(
        (p["source_file"], p["byte_offset"], p["status"], p["error_code"], p["complete"], p["id"])
        for p in run["packets"]
    )
    want = sorted(
        (
            f"{day['landing']}/{landed}",
            p["offset"],
            p["status"],
            p["error"] and p["error"]["code"],
            p["complete"],
            None if not p.get("header") else Decimal(p["header"]["id"]),
        )
        for landed, vector in LANDED.items()
        for p in sidecar(vector)["expected"]["packets"]
    )
    assert got == want
    assert Decimal(2**64 - 1) in {p["shard_by"] for p in run["packets"]}  # exact u64
    schema = run["packets_schema"]
    assert schema.field("shard_by").type == pa.decimal128(20, 0)
    assert schema.field("kv_map").type == pa.map_(pa.string(), pa.string())


def test_quarantine_and_manifest_reconcile(day):
    run = day["json"]
    bad = sorted(
        (f"{day['landing']}/{landed}", p["offset"], p["frame_size"], p["error"]["code"])
        for landed, vector in LANDED.items()
        for p in sidecar(vector)["expected"]["packets"]
        if p["status"] == "error" and p["complete"]
    )
    got = sorted(
        (q["source_file"], q["byte_offset"], q["length"], q["error_kind"])
        for q in run["quarantine"]
    )
    assert got == bad
    totals = run["manifest"]["totals"]
    assert totals["records_good"] == len(run["records"])
    assert totals["table_rows"]["packets"] == len(run["packets"])
    assert totals["frames_bad"] == len(bad)
    assert totals["bytes_total"] == sum(
        (VECTORS / f"{v}.bin").stat().st_size for v in LANDED.values()
    )


def test_typed_datum_run(day):
    run = day["typed"]
    assert run["code"] == 0
    record_type = run["records_schema"].field("record").type
    assert [f.name for f in record_type] == ["name", "favorite_number", "favorite_color"]
    assert record_type.field("favorite_number").type == pa.int32()
    want = [row["record"] for row in sidecar("v2_basic")["expected"]["rows"]]
    got = [
        r["record"]
        for r in sorted(run["records"], key=lambda r: (r["byte_offset"], r["record_index"]))
    ]
    assert got == want

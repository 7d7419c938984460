"""The cernan suites with real Great Expectations on Spark: records (`cernan`) and packets
(`cernan_packets`, table "packets"), on rows built from the golden sidecars (event times
written by the test), then on the same rows doctored; and the validate job on packets."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from suite_run import failed, land_day, manifest, validate_rows

from expectations import registry, runner
from expectations.checks import RunFacts
from jobs import validate
from wirecodecs.cernan.schema import PACKETS_SCHEMA, RECORDS_SCHEMA

VECTORS = Path(__file__).resolve().parents[1] / "data" / "cernan"
DAY = dt.date(2024, 3, 1)
CASES = ["v2_basic", "mixed_v1_v2", "corrupt_avro_block", "corrupt_truncated_tail"]


def sidecar(name: str) -> dict:
    return json.loads(gzip.decompress((VECTORS / f"{name}.json.gz").read_bytes()))


def record_rows() -> list[dict]:
    rows = []
    for case in CASES:
        for row in sidecar(case)["expected"]["rows"]:
            rows.append(
                {
                    "source_file": f"/landing/{case}.bin",
                    "byte_offset": row["packet_offset"],
                    "event_time": dt.datetime.combine(DAY, dt.time(), dt.UTC)
                    + dt.timedelta(minutes=len(rows)),
                    "packet_index": row["packet_index"],
                    "id": Decimal(row["id"]),
                    "shard_by": Decimal(row["shard_by"]),
                    "schema_fingerprint": row["schema_fingerprint"],
                    "schema_full_name": row["schema_full_name"],
                    "block_index": row["block_index"],
                    "record_index_in_block": row["record_index_in_block"],
                    "record_index": row["record_index"],
                    "record_json": json.dumps(row["record"]),
                }
            )
    return rows


def packet_rows() -> list[dict]:
    rows = []
    for case in CASES:
        for packet in sidecar(case)["expected"]["packets"]:
            avro = packet.get("avro") or {}
            counts = avro.get("block_record_counts")
            rows.append(
                {
                    "source_file": f"/landing/{case}.bin",
                    "byte_offset": packet["offset"],
                    "packet_index": packet["index"],
                    "packet_length": packet["length"],
                    "complete": packet["complete"],
                    "resynced": False,
                    "status": packet["status"],
                    "error_code": packet["error"] and packet["error"]["code"],
                    "warnings": packet.get("warnings") or [],
                    "schema_fingerprint": avro.get("fingerprint_crc64_avro_le_hex"),
                    "block_record_counts": counts,
                    "declared_record_count": None if counts is None else sum(counts),
                    "record_count": packet.get("record_count", 0),
                }
            )
    return rows


def fingerprints(rows: list[dict]) -> str:
    return ",".join(
        sorted({row["schema_fingerprint"] for row in rows if row["schema_fingerprint"]})
    )


def cernan_manifest(records_good: int, packets: int) -> dict:
    return manifest("cernan", DAY, records_good, table_rows={"packets": packets})


def run_suite(spark, name, rows, schema, facts_manifest, tmp_path, **params) -> runner.Outcome:
    facts = RunFacts(DAY, facts_manifest)
    return validate_rows(spark, name, rows, schema, facts, tmp_path, **params)


def test_packets_suite_reads_the_companion_table():
    assert registry.get("cernan_packets").table == "packets"
    assert registry.get("cernan").table is None
    with pytest.raises(ValueError, match="packet_error_budget"):
        registry.get("cernan_packets").resolve({"packet_error_budget": "lots"})


@pytest.mark.spark
def test_records_suite_passes_then_fails_when_doctored(spark, tmp_path):
    rows = record_rows()
    packets = packet_rows()
    good = run_suite(
        spark, "cernan", rows, RECORDS_SCHEMA, cernan_manifest(len(rows), len(packets)), tmp_path
    )
    assert good.failures == []
    doctored = [dict(row) for row in rows]
    doctored[3]["event_time"] = dt.datetime(2024, 3, 5, tzinfo=dt.UTC)  # four days late
    doctored.append(dict(doctored[5]))  # a replayed datum
    doctored[7]["event_time"] = None  # the datum lacks its event_time field
    bad = run_suite(
        spark,
        "cernan",
        doctored,
        RECORDS_SCHEMA,
        cernan_manifest(len(rows), len(packets)),
        tmp_path,
    )
    failures = failed(bad.failures)
    assert set(failures) == {
        ("expect_column_values_to_be_between", "event_time"),
        ("expect_compound_columns_to_be_unique", "['source_file', 'packet_index', 'record_index']"),
        ("expect_table_row_count_to_equal", "None"),
        ("expect_column_values_to_not_be_null", "event_time"),
    }
    assert [f["critical"] for f in bad.failures].count(False) == 1  # the missing event_time
    late = failures[("expect_column_values_to_be_between", "event_time")]
    assert late["unexpected_count"] == 1


@pytest.mark.spark
def test_packets_suite_passes_then_fails_when_doctored(spark, tmp_path):
    rows = packet_rows()
    records = sum(row["record_count"] for row in rows)
    facts = cernan_manifest(records, len(rows))
    allowed = fingerprints(rows)
    errors = sum(row["status"] == "error" for row in rows) / len(rows)
    params = {"allowed_fingerprints": allowed, "packet_error_budget": errors}
    good = run_suite(spark, "cernan_packets", rows, PACKETS_SCHEMA, facts, tmp_path, **params)
    assert good.failures == []
    doctored = [dict(row) for row in rows]
    ok = [row for row in doctored if row["status"] == "ok"]
    ok[0]["record_count"] += 1  # a packet whose rows disagree with its blocks (and the sum)
    ok[1]["schema_fingerprint"] = "0123456789abcdef"  # a schema nobody approved
    bad = run_suite(spark, "cernan_packets", doctored, PACKETS_SCHEMA, facts, tmp_path, **params)
    failures = failed(bad.failures)
    assert set(failures) == {
        ("expect_column_pair_values_to_be_equal", "record_count"),
        ("expect_column_sum_to_be_between", "record_count"),
        ("expect_column_values_to_be_in_set", "schema_fingerprint"),
    }
    assert all(f["critical"] for f in bad.failures)
    assert failures[("expect_column_values_to_be_in_set", "schema_fingerprint")][
        "partial_unexpected_list"
    ] == ["0123456789abcdef"]
    strict = run_suite(
        spark, "cernan_packets", rows, PACKETS_SCHEMA, facts, tmp_path, allowed_fingerprints=allowed
    )
    assert set(failed(strict.failures)) == {("expect_column_values_to_be_in_set", "status")}


@pytest.mark.spark
def test_validate_job_checks_the_packets_table(spark, tmp_path):
    rows = packet_rows()
    warehouse = tmp_path / "warehouse"
    records = sum(row["record_count"] for row in rows)
    packets = pa.Table.from_pylist(rows, schema=PACKETS_SCHEMA)
    land_day(warehouse, "cernan_packets", packets, cernan_manifest(records, len(rows)))
    argv = ["--source", "cernan", "--suite", "cernan_packets", "--date", DAY.isoformat()]
    argv += ["--warehouse", str(warehouse), "--reports", str(tmp_path / "reports")]
    argv += [
        "--param",
        f"allowed_fingerprints={fingerprints(rows)}",
        "--param",
        "packet_error_budget=0.5",
    ]
    assert validate.main(argv, spark=spark) == 0
    report_dir = tmp_path / "reports" / "cernan_packets" / f"dt={DAY}"
    report = json.loads((report_dir / "validation.json").read_text())
    assert (report["success"], report["table"]) == (True, "cernan_packets")

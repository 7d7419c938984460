"""The main command end to end: sample day -> `airflow dags test` -> Parquet, quarantine,
manifest, validation results and Data Docs, all read back from disk.

Runs real Airflow (SQLite in a temporary AIRFLOW_HOME), real spark-submit on local Spark and
real Great Expectations, exactly as `./wirelake demo` does. Expected counts come from what
the sample generator says it wrote, never from the decoder.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import pyarrow.dataset as ds
import pytest

from jobs import layout
from wirecodecs import samples

DAY = dt.date(2026, 11, 20)
SEED = 7


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(root / "airflow"),
        "WIRELAKE_DATA": str(root / "data"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "jobs.demo", "--date", DAY.isoformat(), "--seed", str(SEED)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    written = samples.write_sample_day("kafka", root / "expected", DAY, seed=SEED).totals()
    return root / "data", result, written


def test_demo_succeeds_and_says_what_it_produced(demo_run):
    _, result, _ = demo_run
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "wirelake_kafka succeeded" in result.stdout
    assert "rows written" in result.stdout and "expectations" in result.stdout


def test_rows_and_quarantine_match_what_was_written(demo_run):
    data, _, written = demo_run
    warehouse = str(data / "warehouse")
    rows = ds.dataset(layout.partition_dir(warehouse, "kafka", DAY), format="parquet").to_table()
    assert rows.num_rows == written["records"] - written["undecodable_records"]
    assert rows.column("crc_valid").to_pylist().count(False) == written["crc_invalid_records"]
    assert set(rows.column("topic").to_pylist()) >= {"orders", "clicks", "payments"}
    quarantine = ds.dataset(layout.quarantine_dir(warehouse, "kafka", DAY), format="parquet")
    assert quarantine.count_rows() == written["undecodable_frames"]


def test_manifest_accounts_for_every_byte(demo_run):
    data, _, written = demo_run
    manifest_path = layout.manifest_path(str(data / "warehouse"), "kafka", DAY)
    with open(manifest_path) as handle:
        manifest = json.load(handle)
    totals = manifest["totals"]
    landed = sum(
        path.stat().st_size for path in (data / "landing" / "kafka" / f"dt={DAY}").rglob("*.log")
    )
    assert totals["bytes_total"] == landed
    assert (
        totals["bytes_decoded"]
        + totals["bytes_quarantined"]
        + totals["bytes_truncated_tail"]
        + totals["bytes_skipped"]
        == landed
    )
    assert totals["bytes_truncated_tail"] == written["truncated_tail_bytes"]
    assert totals["frames_bad"] == written["undecodable_frames"]


def test_validation_results_and_data_docs_are_published(demo_run):
    data, _, _ = demo_run
    reports = str(data / "reports")
    with open(layout.validation_path(reports, "kafka", DAY)) as handle:
        result = json.load(handle)
    assert result["success"] is True
    assert len(result["results"]) >= 6
    docs = os.path.join(layout.data_docs_dir(reports, "kafka", DAY), "index.html")
    assert os.path.getsize(docs) > 0

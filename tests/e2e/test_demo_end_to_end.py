"""The main command end to end: sample day -> `airflow dags test` -> Parquet, quarantine,
manifest, validation results and Data Docs, all read back from disk.

Runs real Airflow (SQLite in a temporary AIRFLOW_HOME), real spark-submit and real Great
Expectations, exactly as `./wirelake demo` does: once on local Spark (the default
connection) and once on a Spark standalone cluster, changing only AIRFLOW_CONN_SPARK_DEFAULT.
Expected counts come from what the sample generator says it wrote, never from the decoder.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pyarrow.dataset as ds
import pytest

from jobs import layout
from wirecodecs import samples

pytestmark = pytest.mark.e2e  # about 2 min: deselect with -m "not e2e" while iterating

DAY = dt.date(2026, 11, 20)
SEED = 7


class DemoRun(NamedTuple):
    data: Path  # WIRELAKE_DATA of the run
    result: subprocess.CompletedProcess
    written: dict  # what the sample generator says it wrote (same date and seed)
    cluster: dict | None  # the standalone master, or None on local Spark


@pytest.fixture(scope="module", params=["local", "standalone"])
def demo_run(request, tmp_path_factory) -> DemoRun:
    root = tmp_path_factory.mktemp(f"demo-{request.param}")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(root / "airflow"),
        "WIRELAKE_DATA": str(root / "data"),
    }
    cluster = None
    if request.param == "standalone":
        cluster = request.getfixturevalue("standalone_master")
        connection = {"conn_type": "spark", "host": cluster["host"], "port": cluster["port"]}
        env["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps(connection)
    result = subprocess.run(
        [sys.executable, "-m", "jobs.demo", "--date", DAY.isoformat(), "--seed", str(SEED)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    written = samples.write_sample_day("kafka", root / "expected", DAY, seed=SEED).totals()
    return DemoRun(root / "data", result, written, cluster)


def test_demo_succeeds_and_says_what_it_produced(demo_run):
    out = demo_run.result.stdout
    assert demo_run.result.returncode == 0, out[-3000:] + demo_run.result.stderr[-3000:]
    assert "wirelake_kafka succeeded" in out
    assert "rows written" in out and "expectations" in out


def test_jobs_ran_on_the_master_the_connection_names(demo_run):
    log = next((demo_run.data / "logs" / "demo").rglob("wirelake_kafka.log")).read_text()
    if demo_run.cluster is None:
        assert "spark-submit --master local[2] " in log
    else:
        assert f"spark-submit --master spark://127.0.0.1:{demo_run.cluster['port']} " in log
        registered = demo_run.cluster["log"].read_text()
        assert f"Registering app wirelake-decode-kafka-{DAY}" in registered
        assert f"Registering app wirelake-validate-kafka-{DAY}" in registered


def test_rows_and_quarantine_match_what_was_written(demo_run):
    warehouse, written = str(demo_run.data / "warehouse"), demo_run.written
    rows = ds.dataset(layout.partition_dir(warehouse, "kafka", DAY), format="parquet").to_table()
    assert rows.num_rows == written["records"] - written["undecodable_records"]
    assert rows.column("crc_valid").to_pylist().count(False) == written["crc_invalid_records"]
    assert set(rows.column("topic").to_pylist()) >= {"orders", "clicks", "payments"}
    quarantine = ds.dataset(layout.quarantine_dir(warehouse, "kafka", DAY), format="parquet")
    assert quarantine.count_rows() == written["undecodable_frames"]


def test_manifest_accounts_for_every_byte(demo_run):
    manifest_path = layout.manifest_path(str(demo_run.data / "warehouse"), "kafka", DAY)
    with open(manifest_path) as handle:
        totals = json.load(handle)["totals"]
    landing = demo_run.data / "landing" / "kafka" / f"dt={DAY}"
    landed = sum(path.stat().st_size for path in landing.rglob("*.log"))
    assert totals["bytes_total"] == landed
    accounted = ("bytes_decoded", "bytes_quarantined", "bytes_truncated_tail", "bytes_skipped")
    assert sum(totals[key] for key in accounted) == landed
    assert totals["bytes_truncated_tail"] == demo_run.written["truncated_tail_bytes"]
    assert totals["frames_bad"] == demo_run.written["undecodable_frames"]


def test_validation_results_and_data_docs_are_published(demo_run):
    reports = str(demo_run.data / "reports")
    with open(layout.validation_path(reports, "kafka", DAY)) as handle:
        validation = json.load(handle)
    assert validation["success"] is True
    assert len(validation["results"]) >= 6
    docs = os.path.join(layout.data_docs_dir(reports, "kafka", DAY), "index.html")
    assert os.path.getsize(docs) > 0

"""The main command end to end: sample day -> `airflow dags test` -> Parquet, quarantine,
manifest, validation results and Data Docs, all read back from disk.

Runs real Airflow (SQLite in a temporary AIRFLOW_HOME), real spark-submit and real Great
Expectations, exactly as `./wirelake demo` does: every sample source on local Spark (the
default connection), and one of them on a Spark standalone cluster, changing only
AIRFLOW_CONN_SPARK_DEFAULT.
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

import pytest

from jobs import lake, layout
from wirecodecs import samples

pytestmark = pytest.mark.e2e  # a few minutes: deselect with -m "not e2e" while iterating

DAY = dt.date(2026, 11, 20)
SEED = 7
# Local Spark runs every sample source; the cluster run takes one carried payload (Kafka
# record values holding InLong messages), which is what can differ between local and
# cluster: executors importing the decoders of two formats and the carried format.
SOURCES = {"local": samples.formats(), "standalone": ["inlong_kafka"]}


class DemoRun(NamedTuple):
    data: Path  # WIRELAKE_DATA of the run
    result: subprocess.CompletedProcess
    written: dict[str, samples.SampleDay]  # what the generator says it wrote, per source
    cluster: dict | None  # the standalone master, or None on local Spark


@pytest.fixture(scope="module", params=list(SOURCES))
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
    sources = SOURCES[request.param]
    result = subprocess.run(
        [sys.executable, "-m", "operations.demo", "--date", DAY.isoformat(), "--seed", str(SEED),
         "--sources", ",".join(sources)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )  # fmt: skip
    written = {
        source: samples.write_sample_day(source, root / "expected" / source, DAY, seed=SEED)
        for source in sources
    }
    return DemoRun(root / "data", result, written, cluster)


def sources(run: DemoRun) -> list[str]:
    return list(run.written)


def manifest(run: DemoRun, source: str) -> dict:
    with open(layout.manifest_path(str(run.data / "warehouse"), source, DAY)) as handle:
        return json.load(handle)


def test_demo_succeeds_and_says_what_it_produced(demo_run):
    out = demo_run.result.stdout
    assert demo_run.result.returncode == 0, out[-3000:] + demo_run.result.stderr[-3000:]
    for source in sources(demo_run):
        assert f"wirelake_{source} succeeded" in out
    assert "rows written" in out and "expectations" in out


def test_jobs_ran_on_the_master_the_connection_names(demo_run):
    for source in sources(demo_run):
        log = next((demo_run.data / "logs" / "demo").rglob(f"wirelake_{source}.log")).read_text()
        if demo_run.cluster is None:
            assert "spark-submit --master local[2] " in log
        else:
            assert f"spark-submit --master spark://127.0.0.1:{demo_run.cluster['port']} " in log
            registered = demo_run.cluster["log"].read_text()
            assert f"Registering app wirelake-decode-{source}-{DAY}" in registered
            assert f"Registering app wirelake-validate-{source}-{DAY}" in registered


def test_rows_and_quarantine_match_what_was_written(demo_run):
    warehouse = str(demo_run.data / "warehouse")
    for source, day in demo_run.written.items():
        written = day.totals()
        rows = lake.day_rows(layout.table_dir(warehouse, source), DAY)
        assert rows == written["records"] - written["undecodable_records"], source
        bad = lake.day_rows(layout.quarantine_table_dir(warehouse, source), DAY) or 0
        assert bad == written["undecodable_frames"], source


@pytest.mark.parametrize("demo_run", ["local"], indirect=True)  # the run with source kafka
def test_kafka_checksums_and_partitions_come_through(demo_run):
    warehouse, written = str(demo_run.data / "warehouse"), demo_run.written["kafka"].totals()
    rows = lake.read_day(layout.table_dir(warehouse, "kafka"), DAY)
    assert rows.column("crc_valid").to_pylist().count(False) == written["crc_invalid_records"]
    assert set(rows.column("topic").to_pylist()) >= {"orders", "clicks", "payments"}


def test_manifest_accounts_for_every_byte(demo_run):
    for source, day in demo_run.written.items():
        totals, written = manifest(demo_run, source)["totals"], day.totals()
        landing = demo_run.data / "landing" / source / f"dt={DAY}"
        landed = sum(
            (landing / item.path.relative_to(day.marker.parent)).stat().st_size
            for item in day.files
        )
        assert totals["bytes_total"] == landed, source
        accounted = ("bytes_decoded", "bytes_quarantined", "bytes_truncated_tail", "bytes_skipped")
        assert sum(totals[key] for key in accounted) == landed, source
        assert totals["bytes_truncated_tail"] == written["truncated_tail_bytes"], source


def test_validation_results_and_data_docs_are_published(demo_run):
    reports = str(demo_run.data / "reports")
    for source in sources(demo_run):
        tables = [source] + [
            layout.table_name(source, table)
            for table in manifest(demo_run, source)["outputs"]["tables"]
        ]
        for table in tables:
            with open(layout.validation_path(reports, table, DAY)) as handle:
                validation = json.load(handle)
            assert validation["success"] is True, (table, validation["failures"])
            assert len(validation["results"]) >= 4, table
            docs = os.path.join(layout.data_docs_dir(reports, table, DAY), "index.html")
            assert os.path.getsize(docs) > 0, table

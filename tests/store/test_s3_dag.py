"""A source's DAG with its whole lake on S3 (moto on loopback), run by `airflow dags test`,
the credentials and endpoint only in an Airflow connection (`paths.store_conn_id`), none
in the tasks' environment: the landing check finds the day's marker on S3, the decode and
validate jobs read and write there, and the server's secret key is in no task log. Through
the workers' AWS_* environment instead, under the scheduler: tests/scheduling/
test_s3_backfill.py."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pytest
import yaml
from airflowrun import project_airflow, sqlite_url, task_instances
from s3jobs import upload
from s3server import moto_server

from jobs import lake
from wirecodecs import samples

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "dags"))
from wirelake_tasks import landing_complete  # noqa: E402  (a DAG-folder module)

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.service]

DAY = "2026-11-20"
BUCKET = "lake"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with moto_server(str(tmp_path_factory.mktemp("moto") / "moto.log")) as started:
        started.filesystem().create_dir(BUCKET)
        yield started


def test_the_landing_check_finds_the_marker_on_s3(server, tmp_path, monkeypatch):
    for key, value in server.environment().items():
        monkeypatch.setenv(key, value)
    landing = f"s3://{BUCKET}/check/kafka/dt={DAY}"
    server.filesystem().create_dir(landing.removeprefix("s3://"))
    assert not landing_complete(landing, "_SUCCESS")
    (tmp_path / "_SUCCESS").touch()
    upload(tmp_path, server.filesystem(), landing.removeprefix("s3://"))
    assert landing_complete(landing, "_SUCCESS")


def connection(server) -> dict[str, str]:
    """The Airflow connection `lake_store` (as an AIRFLOW_CONN_ variable) of the server."""
    extra = {"endpoint_url": server.endpoint, "region_name": "us-east-1"}
    value = {"conn_type": "aws", "login": server.access_key, "password": server.secret_key}
    return {"AIRFLOW_CONN_LAKE_STORE": json.dumps({**value, "extra": extra})}


def test_a_kafka_day_runs_through_its_dag_on_s3_with_a_connection(server, tmp_path, monkeypatch):
    lake_root = BUCKET
    config = yaml.safe_load((ROOT / "dags" / "sources.yaml").read_text())
    config["sources"] = {"kafka": config["sources"]["kafka"]}
    config["paths"] = {
        "landing": f"s3://{lake_root}/landing/{{source}}/dt={{ds}}",
        "warehouse": f"s3://{lake_root}/warehouse",
        "reports": f"s3://{lake_root}/reports",
        "store_conn_id": "lake_store",
    }
    for name in server.environment():  # none of them in the tasks' environment
        monkeypatch.delenv(name, raising=False)
    config["defaults"].update(retries=0, start_date="2020-01-01")
    local = tmp_path / "landing"
    samples.write_sample_day("kafka", local, DAY)  # with its _SUCCESS marker
    upload(local, server.filesystem(), f"{lake_root}/landing/kafka/dt={DAY}")
    with project_airflow(tmp_path, config, tmp_path / "data", connection(server), {}) as airflow:
        done = airflow("dags", "test", "wirelake_kafka", DAY)
    assert done.returncode == 0, done.stdout[-3000:]
    runs = task_instances(sqlite_url(tmp_path / "airflow"), "wirelake_kafka")
    states = {task: ti["state"] for (day, task), ti in runs.items() if day == DAY}
    assert states == {"wait_for_landing": "success", "decode": "success", "validate": "success"}
    client = server.filesystem()
    with client.open_input_stream(f"{lake_root}/reports/kafka/dt={DAY}/validation.json") as stream:
        assert json.loads(stream.read())["critical_success"] is True
    for key, value in server.environment().items():
        monkeypatch.setenv(key, value)
    rows = lake.read_day(f"s3://{lake_root}/warehouse/kafka", dt.date.fromisoformat(DAY))
    manifest = f"{lake_root}/warehouse/_manifests/kafka/dt={DAY}/manifest.json"
    with client.open_input_stream(manifest) as stream:
        assert rows.num_rows == json.loads(stream.read())["totals"]["rows"] > 0
    secret = server.secret_key
    assert secret not in done.stdout
    for path in (tmp_path / "airflow").rglob("*"):  # task logs, the metadata database
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path

"""`./wirelake backfill` of a day of a source whose whole lake is on S3 (moto on loopback),
the server's endpoint and credentials only in the stack's AWS_* environment: the command
starts the stack, the scheduler runs the day's DAG run there (the landing check finds the
marker on S3, the decode and validate jobs read and write there), and the closing table
reads the day's rows, manifest and validation there; the rows it shows are the rows of the
day's table and of its manifest, and the secret key is in nothing the command printed nor
in the Airflow home (task logs). A backfill of several days: tests/scheduling/
test_stack.py; credentials only from an Airflow connection: tests/store/test_s3_dag.py."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
from pathlib import Path

import pytest
import yaml
from airflowrun import ProjectLake, sqlite_url, task_instances

from jobs import lake
from wirecodecs import samples

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "store"))
from s3jobs import upload  # noqa: E402  (the store tests' helpers)
from s3server import moto_server  # noqa: E402

pytestmark = [pytest.mark.airflow, pytest.mark.service]  # the stack, an S3 server
DAY = "2026-11-25"
BUCKET = "lake"
MANIFEST = f"{BUCKET}/warehouse/_manifests/kafka/dt={DAY}/manifest.json"
VALIDATION = f"{BUCKET}/reports/kafka/dt={DAY}/validation.json"


def test_a_backfill_on_an_s3_lake(tmp_path, metadata_db, monkeypatch):
    with moto_server(str(tmp_path / "moto.log")) as server:
        client = server.filesystem()
        client.create_dir(BUCKET)
        local = tmp_path / "landing" / DAY
        samples.write_sample_day("kafka", local, DAY)
        upload(local, client, f"{BUCKET}/landing/kafka/dt={DAY}")
        config = yaml.safe_load((ROOT / "dags" / "sources.yaml").read_text())
        config["sources"] = {"kafka": config["sources"]["kafka"]}
        config["defaults"].update(catchup=False, retries=0)
        config["paths"] = {
            "landing": f"s3://{BUCKET}/landing/{{source}}/dt={{ds}}",
            "warehouse": f"s3://{BUCKET}/warehouse",
            "reports": f"s3://{BUCKET}/reports",
        }
        (tmp_path / "sources.yaml").write_text(yaml.safe_dump(config))
        home = tmp_path / "airflow"
        env = {
            **{key: value for key, value in os.environ.items() if not key.startswith("AWS_")},
            **server.environment(),
            "AIRFLOW_HOME": str(home),
            "WIRELAKE_DATA": str(tmp_path / "data"),
            "WIRELAKE_CONFIG": str(tmp_path / "sources.yaml"),
        }
        for name in ("AIRFLOW__CORE__DAGS_FOLDER", "WIRELAKE_RETRIES", "WIRELAKE_DB"):
            env.pop(name, None)
        if metadata_db:
            env["WIRELAKE_DB"] = metadata_db
        stack = ProjectLake(home, tmp_path / "data", env, metadata_db or sqlite_url(home))

        done = stack.wirelake("backfill", "kafka", "--from", DAY, "--to", DAY)
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-5000:]
        for key, value in server.environment().items():
            monkeypatch.setenv(key, value)
        shown = re.search(rf"^kafka\s+{DAY}\s+success\s+([\d,]+)\s", done.stdout, re.M)
        assert shown, output[-5000:]
        runs = task_instances(stack.database, "wirelake_kafka")
        states = {task: ti["state"] for (day, task), ti in runs.items() if day == DAY}
        assert states == dict.fromkeys(("wait_for_landing", "decode", "validate"), "success")
        rows = lake.day_rows(f"s3://{BUCKET}/warehouse/kafka", dt.date.fromisoformat(DAY))
        assert int(shown.group(1).replace(",", "")) == rows > 0
        assert rows == json.loads(read(client, MANIFEST))["totals"]["rows"]
        assert json.loads(read(client, VALIDATION))["critical_success"] is True
        assert server.secret_key not in output
        for path in home.rglob("*"):  # task logs, the SQLite metadata database if it is one
            if path.is_file():
                assert server.secret_key.encode() not in path.read_bytes(), path


def read(client, path: str) -> bytes:
    with client.open_input_stream(path) as stream:
        return stream.read()

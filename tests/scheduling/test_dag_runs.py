"""Scheduling behaviour through real `airflow dags test` runs (SQLite in a temporary
AIRFLOW_HOME, real spark-submit): a past day without landing ends at once as "no landing",
a gate failure fails its task once without retries and alerts through the alert log, a
local SMTP server and a local HTTP receiver, and a good day's decode triggers a DAG
scheduled on the table's Asset.

The DAG folder is the project's (symlinked) plus one consumer DAG; the sources config is a
temporary one passed through $WIRELAKE_CONFIG.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from airflowrun import ALERTS, project_airflow, sqlite_url, task_instances

from wirecodecs import samples

pytestmark = pytest.mark.e2e  # real Airflow runs, two of them with Spark: a few minutes

ROOT = Path(__file__).resolve().parents[2]
DAY = "2026-11-20"
PAST = "2020-01-02"  # a day long past, never landed
CONSUMER = """
from airflow.sdk import DAG, Asset
from airflow.providers.standard.operators.empty import EmptyOperator

with DAG(dag_id="kafka_table_consumer", schedule=[Asset(name="wirelake_kafka",
         uri="wirelake://kafka/kafka")]):
    EmptyOperator(task_id="report")
"""


@pytest.fixture(scope="module")
def airflow(tmp_path_factory, alerting):
    """A project Airflow with a temporary config and DB; a runner of `airflow` commands."""
    config = yaml.safe_load((ROOT / "dags" / "sources.yaml").read_text())
    kafka = config["sources"]["kafka"]
    strict = json.loads(json.dumps(kafka))
    strict["decode"]["max_error_rate"] = 0  # the sample's undecodable frame fails the gate
    config["sources"] = {"kafka": kafka, "kafka_strict": strict}
    config["defaults"].update(retries=2, retry_delay_minutes=0, start_date="2020-01-01")
    config["alerts"] = ALERTS
    root = tmp_path_factory.mktemp("scheduling")
    data = root / "data"
    for source in ("kafka", "kafka_strict"):
        samples.write_sample_day("kafka", data / "landing" / source / f"dt={DAY}", DAY, seed=7)
    with project_airflow(root, config, data, alerting.env(), {"consumer.py": CONSUMER}) as run:
        run.data = data
        yield run


def task_states(db: Path, dag_id: str, day: str) -> dict[str, tuple[str, int]]:
    return {
        task: (ti["state"], ti["try_number"])
        for (ti_day, task), ti in task_instances(sqlite_url(db.parent), dag_id).items()
        if ti_day == day
    }


def test_past_day_without_landing_ends_at_once_as_no_landing(airflow):
    started = dt.datetime.now()
    result = airflow("dags", "test", "wirelake_kafka", PAST)
    assert result.returncode == 0, result.stdout[-3000:]
    assert (dt.datetime.now() - started).total_seconds() < 300  # not a 14-hour wait
    states = task_states(airflow.db, "wirelake_kafka", PAST)
    assert states == {
        "wait_for_landing": ("skipped", 1),
        "decode": ("skipped", 0),
        "validate": ("skipped", 0),
    }
    landing = airflow.data / "landing" / "kafka" / f"dt={PAST}"
    assert f"no landing at {landing} (marker _SUCCESS)" in result.stdout


def test_gate_failure_fails_once_and_alerts_everywhere(airflow, alerting):
    smtp, http = alerting.smtp, alerting.http
    result = airflow("dags", "test", "wirelake_kafka_strict", DAY)
    output = result.stdout
    assert result.returncode != 0, output[-3000:]
    states = task_states(airflow.db, "wirelake_kafka_strict", DAY)
    assert states["decode"] == ("failed", 1), output[-3000:]  # retries: 2, none taken
    assert "exit code 1" in output
    # the alert log (default notifier) under the reports folder
    lines = (airflow.data / "reports" / "_alerts" / "alerts.jsonl").read_text().splitlines()
    alerts = [json.loads(line) for line in lines]
    assert [(a["source"], a["day"], a["task_id"]) for a in alerts] == [
        ("kafka_strict", DAY, "decode")
    ]
    reason = alerts[0]["reason"]
    assert reason.startswith(f"decode kafka_strict dt={DAY} failed: ")
    assert "@" in reason  # the first bad frames as file@offset kind
    # the mail and the webhook carry the same facts
    assert len(smtp.messages) == 1
    mail = smtp.messages[0]
    assert mail["To"] == "oncall@example.com"
    assert f"kafka_strict {DAY} task decode failed" in mail["Subject"]
    body = mail.get_payload(0).get_payload(decode=True).decode()
    assert reason.splitlines()[0].replace("<", "&lt;").replace(">", "&gt;") in body
    assert len(http.bodies) == 1
    assert set(http.bodies[0]) == {"text"}
    assert f"kafka_strict {DAY} task decode failed" in http.bodies[0]["text"]
    assert reason in http.bodies[0]["text"]


def test_decoded_table_triggers_a_dag_scheduled_on_its_asset(airflow):
    result = airflow("dags", "test", "wirelake_kafka", DAY)
    assert result.returncode == 0, result.stdout[-3000:]
    with sqlite3.connect(airflow.db) as connection:
        events = connection.execute(
            "SELECT a.uri FROM asset_event e JOIN asset a ON a.id = e.asset_id"
        ).fetchall()
        queued = connection.execute(
            "SELECT q.target_dag_id, a.uri FROM asset_dag_run_queue q"
            " JOIN asset a ON a.id = q.asset_id ORDER BY 1, 2"
        ).fetchall()
    assert ("wirelake://kafka/kafka",) in events
    assert ("wirelake://kafka/kafka/validated",) in events
    # the scheduler turns these queue entries into runs: the consumer's at once, the daily
    # report's once every source's validated Asset is queued (kafka_strict's is not yet)
    assert queued == [
        ("kafka_table_consumer", "wirelake://kafka/kafka"),
        ("wirelake_report", "wirelake://kafka/kafka/validated"),
    ]

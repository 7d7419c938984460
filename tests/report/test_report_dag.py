"""The report DAG through real `airflow dags test` runs (SQLite in a temporary AIRFLOW_HOME)
over the generated lake, with a sources config of its Kafka source only: a day with an
anomaly reaches a loopback SMTP server and webhook in words with the page's location, a day
without sends nothing, and an event on the source's validated Asset queues a report run.
"""

from __future__ import annotations

import sqlite3
import statistics
from pathlib import Path

import pytest
import yaml
from airflowrun import ALERTS, project_airflow
from report_lake import DAYS, HALF_DAY, INJECTED

from jobs import lake

pytestmark = pytest.mark.e2e  # real Airflow runs, no Spark: about a minute

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "kafka"
QUIET_DAY = DAYS[6]  # seven days of the lake before it, none of them troubled
# A stand-in for the source DAG's validate task: the same Assets (dag_factory's), no Spark.
# That the source DAG's validate task emits them is tests/scheduling/test_dag_runs.py's.
PRODUCER = """
from airflow.sdk import DAG
from airflow.providers.standard.operators.empty import EmptyOperator
from dag_factory import DEFAULT_CONFIG, load_config, validated_assets

with DAG(dag_id="validated_producer", schedule=None):
    EmptyOperator(task_id="validate", outlets=validated_assets(load_config(DEFAULT_CONFIG)))
"""


@pytest.fixture(scope="module")
def airflow(tmp_path_factory, lake_root, alerting):
    """A project Airflow over the lake with a one-source config and alerts to the receivers;
    a runner of `airflow` commands."""
    config = yaml.safe_load((ROOT / "dags" / "sources.yaml").read_text())
    config["sources"] = {SOURCE: config["sources"][SOURCE]}
    config["alerts"] = ALERTS
    root = tmp_path_factory.mktemp("report_dag")
    with project_airflow(
        root, config, lake_root, alerting.env(), {"producer.py": PRODUCER}, timeout=600
    ) as run:
        yield run


def rows(lake_root: Path, day) -> int:
    return lake.day_rows(str(lake_root / "warehouse" / SOURCE), day)


def test_anomalies_reach_mail_and_webhook_with_the_page(airflow, alerting, lake_root):
    assert INJECTED[HALF_DAY] == {(SOURCE, "volume")}
    mails, posts = len(alerting.smtp.messages), len(alerting.http.bodies)
    result = airflow("dags", "test", "wirelake_report", HALF_DAY.isoformat())
    assert result.returncode == 0, result.stdout[-3000:]
    page = lake_root / "reports" / "_daily" / f"dt={HALF_DAY}" / "index.html"
    assert page.is_file()
    today = rows(lake_root, HALF_DAY)
    median = statistics.median(rows(lake_root, day) for day in DAYS[:7])
    title = f"wirelake: daily report {HALF_DAY}: 1 anomaly"
    anomaly = (
        f"{SOURCE}: {today:,} rows, {today / median - 1:+.0%} against the trailing 7-day "
        f"median {median:,.0f}"
    )

    (mail,) = alerting.smtp.messages[mails:]
    assert mail["To"] == "oncall@example.com" and mail["Subject"] == title
    body = mail.get_payload(0).get_payload(decode=True).decode()
    assert anomaly in body and str(page) in body
    (post,) = alerting.http.bodies[posts:]
    lines = post["text"].splitlines()
    assert lines[0] == title and lines[1].startswith(anomaly) and len(lines) == 3
    assert lines[2].startswith("report: ") and lines[2].endswith(str(page))


def test_a_day_without_anomalies_sends_nothing(airflow, alerting, lake_root):
    assert QUIET_DAY not in INJECTED
    mails, posts = len(alerting.smtp.messages), len(alerting.http.bodies)
    result = airflow("dags", "test", "wirelake_report", QUIET_DAY.isoformat())
    assert result.returncode == 0, result.stdout[-3000:]
    assert (lake_root / "reports" / "_daily" / f"dt={QUIET_DAY}" / "index.html").is_file()
    assert alerting.smtp.messages[mails:] == [] and alerting.http.bodies[posts:] == []


def test_the_sources_validated_asset_queues_a_report_run(airflow):
    result = airflow("dags", "test", "validated_producer", QUIET_DAY.isoformat())
    assert result.returncode == 0, result.stdout[-3000:]
    with sqlite3.connect(airflow.db) as connection:
        queued = connection.execute(
            "SELECT q.target_dag_id, a.uri FROM asset_dag_run_queue q"
            " JOIN asset a ON a.id = q.asset_id"
        ).fetchall()
    # one source: AssetAll of the report's schedule is this Asset alone, so the scheduler
    # turns this entry into a report run
    assert queued == [("wirelake_report", f"wirelake://{SOURCE}/{SOURCE}/validated")]

"""Builds the daily report DAG, `wirelake_report`, from dags/sources.yaml.

It runs when every source's checked tables have a new validated partition (their
`.../validated` Assets), and in any case daily at `report.schedule` (so a day on which a
source never landed still gets its page). Its one task runs `python -m jobs.report` in a
subprocess (the DAG folder imports neither pyarrow nor matplotlib) and sends the report's
anomalies, with the page's location, through the notifiers of `alerts:`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from typing import Any

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import (
    DAG,
    AssetAll,
    AssetOrTimeSchedule,
    CronDataIntervalTimetable,
)
from dag_factory import DEFAULT_CONFIG, PROJECT_ROOT, load_config, source_paths, validated_assets
from wirelake_alerts import anomalies_alert, notifiers
from wirelake_tasks import environment, read_text, store_environment

from jobs import layout

DEFAULT_SCHEDULE = "0 6 * * *"  # data intervals: the run at D+1 06:00 UTC reports day D


def report_day(context: Any) -> str:
    """Day D: the newest day whose validation triggered the run, else the run's own day."""
    days = [
        event.source_dag_run.logical_date.date().isoformat()
        for events in (context.get("triggering_asset_events") or {}).values()
        for event in events
        if event.source_dag_run is not None and event.source_dag_run.logical_date is not None
    ]
    return max(days) if days else context["ds"]


def run_report(config_path: str, **context: Any) -> None:
    """Write the day's page, then send its anomalies through the notifiers."""
    config = load_config(config_path)
    day = report_day(context)
    command = [sys.executable, "-m", "jobs.report", "--date", day, "--config", str(config_path)]
    paths = source_paths(config, "-")
    store = store_environment(paths["store_conn_id"])  # {}: the worker's own environment
    subprocess.run(command, cwd=PROJECT_ROOT, check=True, env={**os.environ, **store})
    reports = paths["reports"]
    folder = layout.join(reports, "_daily", f"dt={day}")
    with environment(store):
        anomalies = json.loads(read_text(layout.join(folder, "report.json")))["anomalies"]
    if anomalies:
        facts = anomalies_alert(day, anomalies, layout.join(folder, "index.html"))
        for notifier in notifiers(config.get("alerts"), facts["source"], reports):
            notifier.send(facts)


def build_report_dag(config_path=DEFAULT_CONFIG) -> DAG:
    config = load_config(config_path)
    settings = config.get("defaults", {})
    schedule = config.get("report", {}).get("schedule", DEFAULT_SCHEDULE)
    reports = source_paths(config, "-")["reports"]
    with DAG(
        dag_id="wirelake_report",
        description="The daily data-quality page across every source",
        doc_md=__doc__,
        schedule=AssetOrTimeSchedule(
            timetable=CronDataIntervalTimetable(schedule, timezone="UTC"),
            assets=AssetAll(*validated_assets(config)),
        ),
        start_date=dt.datetime.fromisoformat(str(settings["start_date"])).replace(tzinfo=dt.UTC),
        catchup=False,  # past days get their page from the Asset events of their validations
        max_active_runs=1,
        default_args={
            "owner": settings.get("owner", "data-platform"),
            "retries": 1,
            "retry_delay": dt.timedelta(minutes=5),
            "execution_timeout": dt.timedelta(minutes=30),
            "on_failure_callback": notifiers(config.get("alerts"), "report", reports),
        },
        tags=["wirelake", "report"],
    ) as dag:
        PythonOperator(task_id="report", python_callable=run_report, op_args=[str(config_path)])
    return dag

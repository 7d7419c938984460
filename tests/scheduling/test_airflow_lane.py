"""Airflow commands in one lane process (operations/airflow_lane.py) answer what the same
commands answer as `airflow ...`: each its own exit code (a success, a usage error, a
command that raises) and its own output in its own log, the lane going on after a failure."""

from __future__ import annotations

import os
import subprocess

import pytest

from operations.airflow_lane import Lane

pytestmark = pytest.mark.airflow


def test_each_command_answers_its_own_code_and_output(tmp_path):
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "airflow")}
    version = subprocess.run(["airflow", "version"], env=env, capture_output=True, text=True)
    lane = Lane(env, tmp_path / "lane.log")
    try:
        answers = {
            name: lane.run(tmp_path / f"{name}.log", *args)[0]
            for name, args in {
                "version": ["version"],
                "usage": ["dags", "no-such-command"],
                "migrate": ["db", "migrate"],
                "raises": ["dags", "test", "no_such_dag", "2026-11-20"],
                "again": ["version"],
            }.items()
        }
    finally:
        lane.close()
    assert answers == {"version": 0, "usage": 2, "migrate": 0, "raises": 1, "again": 0}
    assert lane.process.returncode == 0
    assert (tmp_path / "version.log").read_text() == version.stdout
    assert "invalid choice: 'no-such-command'" in (tmp_path / "usage.log").read_text()
    raised = (tmp_path / "raises.log").read_text()
    assert "Dag 'no_such_dag' could not be found" in raised and "invalid choice" not in raised

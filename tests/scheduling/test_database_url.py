"""The metadata database URL of the stack commands: shown without its password, refused
when it is not a URL (no Airflow process needed)."""

from __future__ import annotations

import pytest

from operations import stack


def test_a_password_is_never_shown():
    url = "postgresql://airflow:s3cr3t@db.example:5432/airflow"
    assert stack.redacted(url) == "postgresql://airflow:***@db.example:5432/airflow"
    assert stack.redacted("postgresql://airflow@db/airflow") == "postgresql://airflow@db/airflow"


def test_the_database_reaches_every_component(monkeypatch):
    monkeypatch.setenv("WIRELAKE_DB", "postgresql://airflow:pw@127.0.0.1/airflow")
    env = stack.stack_env("http://127.0.0.1:8080")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == "postgresql://airflow:pw@127.0.0.1/airflow"
    monkeypatch.delenv("WIRELAKE_DB")
    assert "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" not in stack.stack_env("http://127.0.0.1:8080")


def test_a_database_that_is_not_a_url_is_refused_without_echoing_it(monkeypatch):
    monkeypatch.setenv("WIRELAKE_DB", "airflow:s3cr3t@db")
    with pytest.raises(SystemExit, match="not a database URL") as refused:
        stack.database_url()
    assert "s3cr3t" not in str(refused.value)

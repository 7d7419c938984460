"""The compose file's metadata database service, as its image runs it
(docker/postgres/start.sh on Debian's postgresql package), outside Docker: the first start
makes user and database `airflow` with the password given at run time, which then logs
in over TCP while a wrong one is refused; a second start keeps the cluster."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pgserver
import pytest
import sqlalchemy

START = Path(__file__).resolve().parents[2] / "docker" / "postgres" / "start.sh"

pytestmark = [
    pytest.mark.service,  # a PostgreSQL server, started twice
    pytest.mark.skipif(
        not pgserver.wanted(), reason="no PostgreSQL server installed (.ci/run installs it)"
    ),
]


def answers(url: str) -> bool:
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.execute(sqlalchemy.text("select current_user")).scalar() == "airflow"
    finally:
        engine.dispose()


def start(env: dict[str, str], url: str) -> subprocess.Popen:
    run_as = "postgres" if os.geteuid() == 0 else None
    server = subprocess.Popen([str(START)], env=env, user=run_as, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while True:
        try:
            if answers(url):
                return server
        except sqlalchemy.exc.OperationalError:
            assert server.poll() is None, server.stderr.read().decode()
            assert time.monotonic() < deadline, "the database did not answer in 120 s"
            time.sleep(1)


def test_the_service_starts_with_the_run_time_password_and_keeps_its_cluster():
    folder = Path(tempfile.mkdtemp(prefix="wirelake-pgservice-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    password, port = secrets.token_hex(8), pgserver.free_port()
    env = {
        "PATH": os.environ["PATH"],
        "WIRELAKE_DB_PASSWORD": password,
        "WIRELAKE_DB_DATA": str(folder / "data"),
        "WIRELAKE_DB_PORT": str(port),
        "WIRELAKE_DB_LISTEN": "127.0.0.1",
    }
    url = f"postgresql://airflow:{password}@127.0.0.1:{port}/airflow"
    try:
        for _ in range(2):  # the first start makes the cluster, the second finds it
            server = start(env, url)
            with pytest.raises(sqlalchemy.exc.OperationalError, match="password"):
                answers(f"postgresql://airflow:wrong@127.0.0.1:{port}/airflow")
            server.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
            assert server.wait(60) == 0
        conf = (folder / "data" / "postgresql.conf").read_text()
        assert password not in conf + (folder / "data" / "pg_hba.conf").read_text()
    finally:
        shutil.rmtree(folder, ignore_errors=True)

"""Helpers of the tests that run Airflow (tests/scheduling, tests/report): a loopback SMTP
server and HTTP receiver that alerts are sent to (each arrival timed, for alert latency),
the alert config and environment that point a project Airflow at them, a project Airflow
in a temporary folder, and task instances read from Airflow's SQLite metadata database.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email
import hashlib
import itertools
import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import psutil
import sqlalchemy
import yaml

from jobs import lake
from operations.airflow_lane import Lane

ROOT = Path(__file__).resolve().parents[1]

# The `alerts:` of a test sources config: the alert log, a mail through Airflow connection
# smtp_test, a webhook whose URL is in $TEST_WEBHOOK_URL (both set by Alerting.env).
ALERTS = [
    {"type": "log"},
    {"type": "email", "to": ["oncall@example.com"], "conn_id": "smtp_test"},
    {"type": "webhook", "url_env": "TEST_WEBHOOK_URL"},
]


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class SmtpReceiver:
    """A minimal SMTP server on loopback (EHLO, MAIL, RCPT, DATA, QUIT): keeps each mail and
    when it arrived."""

    def __init__(self) -> None:
        self.messages: list[email.message.Message] = []
        self.arrivals: list[dt.datetime] = []
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._session, "127.0.0.1", 0)
        )
        self.port = self.server.sockets[0].getsockname()[1]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    async def _session(self, reader, writer) -> None:
        writer.write(b"220 localhost test SMTP\r\n")
        while line := await reader.readline():
            verb = line[:4].upper()
            if verb == b"DATA":
                writer.write(b"354 end with <CRLF>.<CRLF>\r\n")
                await writer.drain()
                data = await reader.readuntil(b"\r\n.\r\n")
                self.arrivals.append(now())
                self.messages.append(email.message_from_bytes(data[:-5]))
                writer.write(b"250 queued\r\n")
            elif verb == b"QUIT":
                writer.write(b"221 bye\r\n")
                await writer.drain()
                break
            else:  # EHLO/HELO, MAIL, RCPT, RSET, NOOP
                writer.write(b"250 ok\r\n")
            await writer.drain()
        writer.close()

    def stop(self) -> None:
        self.server.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class HttpReceiver:
    """An HTTP server on loopback that keeps every POSTed JSON body and when it arrived."""

    def __init__(self) -> None:
        bodies, arrivals = self.bodies, self.arrivals = [], []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                arrivals.append(now())
                bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Alerting:
    smtp: SmtpReceiver
    http: HttpReceiver

    def env(self) -> dict[str, str]:
        """The environment that makes ALERTS reach the two receivers."""
        extra = {"from_email": "wirelake@example.com", "disable_ssl": True, "disable_tls": True}
        smtp = {"conn_type": "smtp", "host": "127.0.0.1", "port": self.smtp.port, "extra": extra}
        return {"AIRFLOW_CONN_SMTP_TEST": json.dumps(smtp), "TEST_WEBHOOK_URL": self.http.url}


@contextmanager
def receivers() -> Iterator[Alerting]:
    alerting = Alerting(SmtpReceiver(), HttpReceiver())
    try:
        yield alerting
    finally:
        alerting.smtp.stop()
        alerting.http.stop()


def _utc(value: dt.datetime | str | None) -> dt.datetime | None:
    """A datetime column as the database returns it: PostgreSQL an aware datetime, SQLite
    text (UTC, with or without an offset)."""
    if value is None or isinstance(value, dt.datetime):
        return value
    return dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC)


@dataclass
class ProjectLake:
    """A test's data root, Airflow home and metadata database (SQLAlchemy URL); runs the
    project's own commands on them."""

    home: Path
    data: Path
    env: dict[str, str]
    database: str

    def wirelake(self, *args: str, timeout: float = 15 * 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(ROOT / "wirelake"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def day_digest(warehouse: Path, table: str, day: str | dt.date) -> str:
    """A hash of a table's day as the lake's readers see it, independent of file and row
    order; the day must have rows."""
    rows = lake.read_day(str(warehouse / table), dt.date.fromisoformat(str(day)))
    assert rows is not None and rows.num_rows > 0, f"{table} has no rows on {day}"
    lines = sorted(repr(sorted(row.items())) for row in rows.to_pylist())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def home_processes(home: Path, last_word: str | None = None) -> list[psutil.Process]:
    """Every live process whose environment names the Airflow home `home` (and whose
    command line ends with `last_word`, if given: "scheduler", say)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("AIRFLOW_HOME") != str(home):
                continue
            if last_word is None or process.cmdline()[-1:] == [last_word]:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def sqlite_url(home: Path) -> str:
    """The SQLAlchemy URL of an Airflow home's default SQLite metadata database."""
    return f"sqlite:///{home / 'airflow.db'}"


def query(database: str, statement: str, **params) -> list[tuple]:
    """The rows of one statement on Airflow's metadata database (a SQLAlchemy URL),
    committed."""
    engine = sqlalchemy.create_engine(database, connect_args=_connect_args(database))
    try:
        with engine.begin() as connection:
            return [tuple(row) for row in connection.execute(sqlalchemy.text(statement), params)]
    finally:
        engine.dispose()


def _connect_args(database: str) -> dict:
    return {"timeout": 60} if database.startswith("sqlite") else {}


def task_instances(database: str, dag_id: str) -> dict[tuple[str, str], dict]:
    """(day, task_id) -> state, try_number, start and end of every task instance of a DAG,
    with its run's id and state; the day is the run's logical date (a scheduled run's id
    names the end of its data interval instead)."""
    rows = query(
        database,
        "SELECT dr.logical_date, ti.task_id, ti.state, ti.try_number, ti.start_date,"
        " ti.end_date, dr.run_id, dr.state FROM task_instance ti"
        " JOIN dag_run dr ON dr.run_id = ti.run_id AND dr.dag_id = ti.dag_id"
        " WHERE ti.dag_id = :dag_id",
        dag_id=dag_id,
    )
    return {
        (str(_utc(day).date()), task): {
            "state": state,
            "try_number": tries,
            "start": _utc(start),
            "end": _utc(end),
            "run_id": run_id,
            "run_state": run_state,
        }
        for day, task, state, tries, start, end, run_id, run_state in rows
    }


@contextmanager
def project_airflow(
    root: Path,
    config: dict,
    data: Path,
    env: Mapping[str, str],
    extra_dags: Mapping[str, str],
    timeout: float = 900,
) -> Iterator[Callable[..., subprocess.CompletedProcess]]:
    """An Airflow in `root` (SQLite, migrated) whose DAG folder is the project's (symlinked)
    plus `extra_dags` (file name -> source), reading the sources config `config` through
    $WIRELAKE_CONFIG and the lake under `data`; yields a runner of `airflow` commands, with
    the metadata database's path as its `db`. The commands run one after another in one
    Airflow process, as the demo runs its own (operations/airflow_lane.py); a command's
    result has its output, both streams, as `stdout`."""
    dags = root / "dags"
    dags.mkdir()
    for path in (ROOT / "dags").glob("*.py"):
        (dags / path.name).symlink_to(path)
    for name, source in extra_dags.items():
        (dags / name).write_text(source)
    (root / "sources.yaml").write_text(yaml.safe_dump(config))
    environment = {
        **os.environ,
        "AIRFLOW_HOME": str(root / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",  # a paused DAG queues nothing
        "WIRELAKE_CONFIG": str(root / "sources.yaml"),
        "WIRELAKE_DATA": str(data),
        **env,
    }
    environment.pop("WIRELAKE_RETRIES", None)  # the config's retries, not the demo's
    lane = Lane(environment, root / "logs" / "lane.log")
    commands = itertools.count()

    def run(*args: str) -> subprocess.CompletedProcess:
        log = root / "logs" / f"{next(commands):02d}-{'-'.join(args[:2])}.log"
        code, _ = lane.run(log, *args, timeout=timeout)
        return subprocess.CompletedProcess(["airflow", *args], code, log.read_text(), "")

    try:
        migrated = run("db", "migrate")
        assert migrated.returncode == 0, migrated.stdout[-3000:]
        run.db = root / "airflow" / "airflow.db"
        yield run
    finally:
        lane.close()

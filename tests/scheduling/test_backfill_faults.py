"""`./wirelake backfill` never wedges a DAG, whatever the API server answers or whatever
part of the stack dies, on the real scheduler, API server and metadata database
(PostgreSQL where installed: tests/pgserver.py), in this order:

- two backfills of the same source back to back (two days, then one of them again), each
  starting and stopping a stack of its own (the second is the one that used to fail with a
  409 for ever);
- the API server killed (SIGKILL) during a backfill whose stack the command started: it
  says so, exits non-zero and leaves no unfinished backfill;
- with `./wirelake up`, through a loopback proxy in front of the real API server that
  injects one fault into the first POST of a backfill: a 503 after the server made the
  backfill whole (the command follows that backfill, makes no second one), and a 503 after
  only the backfill's row was written, as Airflow leaves it when its run creation fails
  (the command cancels that row and creates the backfill again);
- another range's unfinished backfill in the way: the command names it and how to cancel
  it, and `./wirelake backfill --cancel` does;
- the scheduler killed (SIGKILL) in the middle of a backfill's decode and started again
  (by the backfill command, which restarts a dead component of the project's stack, or by
  `./wirelake up`, one at a time): the tasks its orphaned workers ran are killed before it
  starts, the backfill completes, and the day's rows equal an undisturbed run's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
import sqlalchemy
import yaml
from airflowrun import (
    ProjectLake,
    day_digest,
    home_processes,
    query,
    sqlite_url,
    task_instances,
)

from wirecodecs import samples

pytestmark = pytest.mark.e2e  # real Airflow stacks and a dozen spark-submit runs: minutes

ROOT = Path(__file__).resolve().parents[2]
DAYS = ["2026-10-05", "2026-10-06"]  # landed; the source has no catchup
DAG = "wirelake_kafka"
BOUND_SECONDS = 15 * 60
REFERENCE: dict[str, str] = {}  # each day's rows after the undisturbed backfill of the first test
LOCKED = (
    "Database is locked. Backfill creation is not supported on SQLite under concurrent "
    "access. Please use PostgreSQL or MySQL."
)  # the detail of Airflow's own 503


class Lake(ProjectLake):
    """The module's lake: commands in the background, its backfills, runs and rows."""

    def start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [str(ROOT / "wirelake"), *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def backfills(self) -> list[tuple]:
        """(id, from day, to day, reprocess, completed) of every backfill of the DAG (none
        before the first stack has created the database's tables)."""
        if not self.migrated():
            return []
        rows = query(
            self.database,
            "SELECT id, from_date, to_date, reprocess_behavior, completed_at FROM backfill"
            " WHERE dag_id = :dag ORDER BY id",
            dag=DAG,
        )
        return [(i, str(f)[:10], str(t)[:10], r, c is not None) for i, f, t, r, c in rows]

    def unfinished_runs(self) -> list[tuple]:
        return query(
            self.database,
            "SELECT run_id, state FROM dag_run WHERE dag_id = :dag"
            " AND state IN ('queued', 'running')",
            dag=DAG,
        )

    def migrated(self) -> bool:
        engine = sqlalchemy.create_engine(self.database)
        try:
            return sqlalchemy.inspect(engine).has_table("backfill")
        finally:
            engine.dispose()

    def stack_state(self) -> dict | None:
        path = self.home / "stack.json"
        return json.loads(path.read_text()) if path.exists() else None

    def rows(self, day: str) -> str:
        return day_digest(self.data / "warehouse", "kafka", day)


@pytest.fixture(scope="module")
def lake(tmp_path_factory, metadata_db) -> Lake:
    root = tmp_path_factory.mktemp("faults")
    config = yaml.safe_load((ROOT / "dags" / "sources.yaml").read_text())
    config["sources"] = {"kafka": config["sources"]["kafka"]}
    config["defaults"].update(catchup=False, retries=2, retry_delay_minutes=0)
    # the scheduled run an unpause makes (yesterday's, never landed) is skipped at its
    # first poke, at any hour: with the default window it would wait until 14:00 UTC,
    # and the stack fixture waits for every run to end
    config["defaults"]["landing_check"].update(lateness_hours=0, timeout_hours=0)
    (root / "sources.yaml").write_text(yaml.safe_dump(config))
    home, data = root / "airflow", root / "data"
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "WIRELAKE_DATA": str(data),
        "WIRELAKE_CONFIG": str(root / "sources.yaml"),
        # a killed scheduler's tasks are found and rerun within about a minute
        "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "15",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "15",
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "45",
    }
    for name in ("AIRFLOW__CORE__DAGS_FOLDER", "WIRELAKE_RETRIES", "WIRELAKE_DB"):
        env.pop(name, None)
    if metadata_db:
        env["WIRELAKE_DB"] = metadata_db
    for day in DAYS:
        samples.write_sample_day("kafka", data / "landing" / "kafka" / f"dt={day}", day)
    return Lake(home, data, env, metadata_db or sqlite_url(home))


def wait_for(predicate, what: str, timeout: float = BOUND_SECONDS):
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"not seen in {timeout} s: {what}"
        time.sleep(1)
    return found


def decode_running(lake: Lake) -> bool:
    return lake.migrated() and any(
        task == "decode" and ti["state"] == "running"
        for (_, task), ti in task_instances(lake.database, DAG).items()
    )


def output(process: subprocess.Popen) -> tuple[int, str, str]:
    stdout, stderr = process.communicate(timeout=BOUND_SECONDS)
    return process.returncode, stdout, stderr


class FaultProxy:
    """A loopback HTTP proxy in front of the real API server that answers the first POST of
    a backfill with Airflow's own 503 after `fault` (called with the request body) and
    passes every other request through unchanged."""

    def __init__(self, upstream: str, fault) -> None:
        target = urlsplit(upstream)
        armed = [fault]

        class Handler(BaseHTTPRequestHandler):
            def relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "POST" and self.path == "/api/v2/backfills" and armed:
                    armed.pop()(body, lambda: self.forward(body))
                    self.answer(503, json.dumps({"detail": LOCKED}).encode())
                    return
                status, answer = self.forward(body)
                self.answer(status, answer)

            def forward(self, body: bytes) -> tuple[int, bytes]:
                connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                connection.request(self.command, self.path, body or None, headers)
                response = connection.getresponse()
                return response.status, response.read()

            def answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = relay

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.armed = armed
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def write_half_made(lake: Lake, body: bytes) -> None:
    """The backfill row alone, as Airflow's create leaves it when the creation of its runs
    fails after the row was committed (no runs, no completed_at)."""
    request = json.loads(body)
    day = dt.datetime.fromisoformat(request["from_date"].replace("Z", "+00:00"))
    last = dt.datetime.fromisoformat(request["to_date"].replace("Z", "+00:00"))
    now = dt.datetime.now(dt.UTC)
    if lake.database.startswith("sqlite"):  # Airflow keeps naive UTC text in SQLite
        day, last, now = (moment.replace(tzinfo=None) for moment in (day, last, now))
    query(
        lake.database,
        "INSERT INTO backfill (dag_id, from_date, to_date, dag_run_conf, is_paused,"
        " reprocess_behavior, max_active_runs, created_at, updated_at, triggering_user_name)"
        " VALUES (:dag, :start, :end, '{}', false, :reprocess, 10, :now, :now, 'admin')"
        " RETURNING id",
        dag=DAG,
        start=day,
        end=last,
        reprocess=request["reprocess_behavior"],
        now=now,
    )


def test_two_backfills_back_to_back_each_with_its_own_stack(lake):
    first = lake.wirelake("backfill", "kafka", "--from", DAYS[0], "--to", DAYS[1])
    assert first.returncode == 0, (first.stdout + first.stderr)[-5000:]
    assert "started the Airflow stack" in first.stdout
    assert f"unpaused {DAG} for the backfill" in first.stdout
    assert "stopped the Airflow stack" in first.stdout
    REFERENCE.update({day: lake.rows(day) for day in DAYS})
    second = lake.wirelake("backfill", "kafka", "--from", DAYS[0], "--to", DAYS[0], "--rerun")
    output = second.stdout + second.stderr
    assert second.returncode == 0, output[-5000:]
    assert "started the Airflow stack" in second.stdout
    assert re.search(rf"^kafka\s+{DAYS[0]}\s+success\s+[\d,]+\s", second.stdout, re.M), output
    assert "409" not in output
    backfills = lake.backfills()
    assert [(f, t, r, done) for _, f, t, r, done in backfills] == [
        (DAYS[0], DAYS[1], "none", True),
        (DAYS[0], DAYS[0], "completed", True),
    ]
    assert lake.stack_state() is None
    assert home_processes(lake.home) == []
    assert lake.rows(DAYS[0]) == REFERENCE[DAYS[0]]


def test_api_server_killed_during_a_backfill_leaves_no_backfill_behind(lake):
    before = lake.backfills()
    command = lake.start(
        "backfill", "kafka", "--from", DAYS[0], "--to", DAYS[0], "--rerun", "--api-wait", "10"
    )
    wait_for(lambda: decode_running(lake), "a decode task running")
    api_server = lake.stack_state()["components"]["api-server"]
    os.killpg(api_server["pgid"], signal.SIGKILL)
    code, stdout, stderr = output(command)
    said = stdout + stderr
    assert code == 1, said
    assert "the Airflow API server at http://127.0.0.1:" in stderr, said
    assert "did not answer" in stderr, said
    assert "restarting the stack's dead components" in stdout, said
    made = lake.backfills()[len(before) :]
    assert len(made) == 1 and made[0][4], (made, said)  # completed: cancelled
    assert f"cancelled backfill {made[0][0]} of {DAG}" in stdout
    assert lake.stack_state() is None
    assert home_processes(lake.home) == []


@pytest.fixture(scope="module")
def stack(lake):
    started = lake.wirelake("up")
    assert started.returncode == 0, started.stdout + started.stderr[-5000:]
    # each test below starts from a quiet DAG: runs a stopped stack left unfinished are
    # ended by this scheduler (the DAG unpaused for it) first
    unpaused = lake.wirelake("run", "airflow", "dags", "unpause", DAG)
    assert unpaused.returncode == 0, unpaused.stdout + unpaused.stderr
    wait_for(lambda: not lake.unfinished_runs(), "the runs left by a stopped stack finished")
    yield lake.stack_state()
    lake.wirelake("down")


def rerun_through_fault(lake: Lake, stack: dict, day: str, fault):
    """`backfill --rerun` of one day through a FaultProxy injecting `fault`: the command's
    result (it succeeded, after Airflow's 503) and the backfills made meanwhile."""
    proxy = FaultProxy(stack["url"], fault)
    try:
        before = lake.backfills()
        result = lake.wirelake(
            "backfill", "kafka", "--from", day, "--to", day, "--rerun", "--api", proxy.url
        )
    finally:
        proxy.close()
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert not proxy.armed, "the fault was not injected"
    assert "HTTP 503" in output and LOCKED in output
    return result, lake.backfills()[len(before) :]


def test_a_503_after_the_backfill_was_made_is_followed_not_repeated(lake, stack):
    result, made = rerun_through_fault(lake, stack, DAYS[0], lambda body, forward: forward())
    assert [(f, t, r, done) for _, f, t, r, done in made] == [(DAYS[0], DAYS[0], "completed", True)]
    assert f"following backfill {made[0][0]} of {DAG}" in result.stdout
    assert lake.rows(DAYS[0]) == REFERENCE[DAYS[0]]


def test_a_503_after_a_half_made_backfill_cancels_it_and_creates_it_again(lake, stack):
    result, made = rerun_through_fault(
        lake, stack, DAYS[1], lambda body, forward: write_half_made(lake, body)
    )
    output = result.stdout + result.stderr
    assert [(f, t, r, done) for _, f, t, r, done in made] == 2 * [
        (DAYS[1], DAYS[1], "completed", True)
    ]
    half_made, remade = made[0][0], made[1][0]
    assert re.search(rf"cancelled backfill {half_made} of {DAG} .*: made half-way", output)
    assert f"backfill {remade} of {DAG} {DAYS[1]}..{DAYS[1]} created" in result.stdout
    assert re.search(rf"^kafka\s+{DAYS[1]}\s+success\s", result.stdout, re.M)
    assert lake.rows(DAYS[1]) == REFERENCE[DAYS[1]]


def test_a_backfill_in_the_way_is_named_and_cancel_clears_it(lake, stack):
    body = {"from_date": "2026-10-01T00:00:00Z", "to_date": "2026-10-02T00:00:00Z"}
    write_half_made(lake, json.dumps({**body, "reprocess_behavior": "none"}).encode())
    blocker = lake.backfills()[-1][0]
    result = lake.wirelake("backfill", "kafka", "--from", DAYS[0], "--to", DAYS[0])
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        f"backfill {blocker} of {DAG} (2026-10-01..2026-10-02, reprocess none, created "
        in result.stderr
    )
    assert "cancel it with ./wirelake backfill --cancel kafka" in result.stderr
    cancelled = lake.wirelake("backfill", "kafka", "--cancel")
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert f"cancelled backfill {blocker} of {DAG}" in cancelled.stdout
    assert all(done for *_, done in lake.backfills())
    again = lake.wirelake("backfill", "kafka", "--cancel")
    assert f"{DAG}: no unfinished backfill" in again.stdout


def test_scheduler_killed_mid_backfill_restarts_and_the_backfill_completes(lake, stack):
    command = lake.start("backfill", "kafka", "--from", DAYS[1], "--to", DAYS[1], "--rerun")
    scheduler = psutil.Process(lake.stack_state()["components"]["scheduler"]["pid"])
    orphans = wait_for(lambda: decoding(scheduler), "a decode's spark-submit under the scheduler")
    scheduler.send_signal(signal.SIGKILL)
    scheduler.wait(30)
    # the backfill command sees the dead scheduler at its next poll and restarts it, or the
    # user's `up` does first: either way one scheduler runs again
    restarted = lake.wirelake("up")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    assert re.search(r"\(restarted: scheduler\)|already running", restarted.stdout)
    schedulers = [process.pid for process in home_processes(lake.home, "scheduler")]
    assert schedulers == [lake.stack_state()["components"]["scheduler"]["pid"]]
    # the killed scheduler's workers, their tasks and spark-submit went before a new
    # scheduler could run any task again: no day is decoded twice at once
    assert not [p for p in orphans if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    code, stdout, stderr = output(command)
    assert code == 0, (stdout + stderr)[-5000:]
    assert re.search(rf"^kafka\s+{DAYS[1]}\s+success\s", stdout, re.M), stdout
    assert lake.rows(DAYS[1]) == REFERENCE[DAYS[1]]


def decoding(scheduler: psutil.Process) -> list[psutil.Process]:
    """The scheduler's descendants once one of them is a decode's spark-submit."""
    try:
        processes = scheduler.children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    commands = []
    for process in processes:
        with contextlib.suppress(psutil.Error):  # one gone, or a zombie: look at the others
            commands.append(" ".join(process.cmdline()))
    return processes if any("jobs/decode.py" in command for command in commands) else []

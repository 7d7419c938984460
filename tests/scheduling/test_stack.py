"""The project's own commands through the real scheduler, all on one stack (temporary
AIRFLOW_HOME, WIRELAKE_DATA and sources config; the API server on a free loopback port;
alerts to a loopback SMTP server and HTTP receiver), in this order:

- `./wirelake up` and `status`, on PostgreSQL where it is installed (tests/pgserver.py);
- `./wirelake backfill` of a day that never landed: the table shows it as "no landing"
  (a backfill that starts and stops a stack of its own: tests/scheduling/
  test_backfill_faults.py);
- unpausing source kafka, whose start_date makes catchup cover 7 past days: 5 never landed,
  then 2 landed. The 2 succeed within a bound; the 5 are skipped at their first poke as
  "no landing" and hold no run slot;
- `./wirelake backfill --rerun` of the 2 days: rows identical to the scheduled runs';
- one of them corrupted past the byte gate and rerun: decode fails at once (no retry), the
  alert reaches the SMTP server and the HTTP receiver with file@offset, and the day's
  previous partition is unchanged;
- `./wirelake down` leaves no process of the stack behind.

Durations (unpause to 3 days done, backfill of 3 days, alert latency) are printed (`-s`).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import re
import time
from pathlib import Path

import pytest
import yaml
from airflowrun import (
    ALERTS,
    ProjectLake,
    day_digest,
    home_processes,
    now,
    sqlite_url,
    task_instances,
)

from wirecodecs import samples

pytestmark = pytest.mark.e2e  # a real Airflow stack and 9 spark-submit runs: minutes

ROOT = Path(__file__).resolve().parents[2]
YESTERDAY = dt.datetime.now(dt.UTC).date() - dt.timedelta(1)  # the last day catchup runs
EMPTY = [str(YESTERDAY - dt.timedelta(n)) for n in range(6, 1, -1)]  # never landed
LANDED = [str(YESTERDAY - dt.timedelta(n)) for n in range(1, -1, -1)]
TASKS = ("wait_for_landing", "decode", "validate")
BOUND_SECONDS = 15 * 60  # "does not stall", with a wide margin for a loaded 2-core machine
CORRUPTED = "clicks-0/00000000000000000000.log"  # a file of the kafka sample day


class Lake(ProjectLake):
    """The test's lake; the kafka DAG's task instances and logs."""

    def kafka_runs(self) -> dict[tuple[str, str], dict]:
        return task_instances(self.database, "wirelake_kafka")

    def kafka_log(self, ti: dict, task: str) -> Path:
        """The log of a task instance's last try (Airflow's default log file layout)."""
        run = self.home / "logs" / "dag_id=wirelake_kafka" / f"run_id={ti['run_id']}"
        return run / f"task_id={task}" / f"attempt={ti['try_number']}.log"


@pytest.fixture(scope="module")
def lake(tmp_path_factory, alerting, metadata_db) -> Lake:
    """Source kafka starting 7 days ago with its last 2 days landed, and source idle (no
    catchup, nothing landed, a missing day skipped at once) for a backfill of a day that
    never landed."""
    root = tmp_path_factory.mktemp("stack")
    config = yaml.safe_load((ROOT / "dags" / "sources.yaml").read_text())
    kafka = config["sources"]["kafka"]
    # idle's scheduled run (yesterday's, never landed), made when the backfill unpauses it,
    # is skipped at its first poke instead of waiting for the landing window to close
    at_once = {**config["defaults"]["landing_check"], "lateness_hours": 0, "timeout_hours": 0}
    config["sources"] = {
        "kafka": kafka,
        "idle": {**copy.deepcopy(kafka), "defaults": {"catchup": False, "landing_check": at_once}},
    }
    config["defaults"].update(start_date=EMPTY[0], retries=2, retry_delay_minutes=10)
    config["alerts"] = ALERTS
    (root / "sources.yaml").write_text(yaml.safe_dump(config))
    home, data = root / "airflow", root / "data"
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "WIRELAKE_DATA": str(data),
        "WIRELAKE_CONFIG": str(root / "sources.yaml"),
        **alerting.env(),
    }
    for name in ("AIRFLOW__CORE__DAGS_FOLDER", "WIRELAKE_RETRIES", "WIRELAKE_DB"):
        env.pop(name, None)
    if metadata_db:
        env["WIRELAKE_DB"] = metadata_db
    lake = Lake(home, data, env, metadata_db or sqlite_url(home))
    for day in LANDED:
        samples.write_sample_day("kafka", lake.data / "landing" / "kafka" / f"dt={day}", day)
    return lake


@pytest.fixture(scope="module")
def stack(lake):
    """`./wirelake up` once for the tests below; `down` at the end whatever happened."""
    started = lake.wirelake("up")
    assert started.returncode == 0, started.stdout + started.stderr[-5000:]
    yield started
    lake.wirelake("down")


@pytest.fixture(scope="module")
def caught_up(lake, stack) -> float:
    """Unpause kafka and wait until its 8 runs are done; the seconds from the unpause to the
    last landed day's validate task done."""
    deadline = time.monotonic() + BOUND_SECONDS
    while True:
        unpaused_at = now()
        unpaused = lake.wirelake("run", "airflow", "dags", "unpause", "wirelake_kafka")
        if unpaused.returncode == 0:
            break
        assert time.monotonic() < deadline, unpaused.stdout + unpaused.stderr[-3000:]
        time.sleep(5)  # the DAG processor has not stored the DAG yet
    days = set(EMPTY + LANDED)
    while True:
        runs = lake.kafka_runs()
        states = {day: ti["run_state"] for (day, _), ti in runs.items()}
        if set(states) >= days and all(states[day] in ("success", "failed") for day in days):
            break
        assert time.monotonic() < deadline, f"catchup not done in {BOUND_SECONDS} s: {states}"
        time.sleep(5)
    done = max(runs[day, "validate"]["end"] for day in LANDED)
    seconds = (done - unpaused_at).total_seconds()
    print(f"\nunpause to {len(LANDED)} landed days done: {seconds:.0f} s")
    return seconds


def rows_hash(warehouse: Path) -> str:
    """A hash of the kafka table's rows for LANDED, independent of file and row order."""
    return "".join(day_digest(warehouse, "kafka", day) for day in LANDED)


def files(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file()
    }


def frame_start(segment: bytes, at_least: int) -> int:
    """The offset of the first Kafka log entry (8-byte offset, int32 size, size bytes) that
    starts at or after `at_least`: walked here, independently of the decoder."""
    position = 0
    while position < at_least:
        position += 12 + int.from_bytes(segment[position + 8 : position + 12], "big")
    return position


def failed_at(log: Path) -> dt.datetime:
    """When a task's log (JSON lines) says it failed."""
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record["event"] == "Task failed with exception":
            return dt.datetime.fromisoformat(record["timestamp"])
    raise AssertionError(f"no failure logged in {log}")


def test_up_and_status(lake, stack):
    url = re.search(r"Airflow UI: (http://127\.0\.0\.1:\d+)", stack.stdout).group(1)
    assert str(lake.home / "simple_auth_manager_passwords.json.generated") in stack.stdout
    status = lake.wirelake("status")
    assert status.returncode == 0, status.stdout
    assert f"{url} (healthy)" in status.stdout
    if lake.env.get("WIRELAKE_DB"):  # named, its password not shown
        password = re.search(r":([^:@/]+)@", lake.env["WIRELAKE_DB"]).group(1)
        assert "metadata database: postgresql://airflow:***@127.0.0.1:" in status.stdout
        assert password not in status.stdout + stack.stdout
        assert password not in (lake.home / "stack.json").read_text()
    else:
        assert f"metadata database: SQLite in {lake.home}" in status.stdout
    for component in ("scheduler", "dag-processor", "triggerer", "api-server"):
        assert re.search(rf"^\s+{component}\s+pid \d+\s+alive$", status.stdout, re.M)


def test_a_backfill_shows_a_day_that_never_landed(lake, stack):
    unknown = lake.wirelake("backfill", "nosuch", "--from", EMPTY[0], "--to", EMPTY[0])
    assert unknown.returncode == 2
    assert "unknown source(s) ['nosuch']" in unknown.stdout
    result = lake.wirelake("backfill", "idle", "--from", EMPTY[0], "--to", EMPTY[0])
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    assert re.search(rf"^idle\s+{EMPTY[0]}\s+no landing\s+-\s+-\s+-\s+-\s+-$", result.stdout, re.M)


def test_unpause_runs_landed_days_and_skips_the_others_at_once(lake, caught_up):
    assert caught_up < BOUND_SECONDS
    runs = lake.kafka_runs()
    assert sorted({day for day, _ in runs}) == EMPTY + LANDED
    for day in LANDED:
        assert {task: runs[day, task]["state"] for task in TASKS} == dict.fromkeys(TASKS, "success")
    for day in EMPTY:
        assert runs[day, "wait_for_landing"]["run_state"] == "success"
        assert {task: runs[day, task]["state"] for task in TASKS} == dict.fromkeys(TASKS, "skipped")
        sensor = runs[day, "wait_for_landing"]
        # answered at its first poke: a reschedule would add the 300 s poke interval
        assert sensor["try_number"] == 1
        assert sensor["end"] - sensor["start"] < dt.timedelta(seconds=60)
        landing = lake.data / "landing" / "kafka" / f"dt={day}"
        log = lake.kafka_log(sensor, "wait_for_landing").read_text()
        assert f"no landing at {landing} (marker _SUCCESS)" in log


def test_backfill_rerun_leaves_identical_rows(lake, caught_up):
    scheduled = rows_hash(lake.data / "warehouse")
    started = time.monotonic()
    result = lake.wirelake("backfill", "kafka", "--from", LANDED[0], "--to", LANDED[-1], "--rerun")
    print(f"\nbackfill --rerun of {len(LANDED)} days: {time.monotonic() - started:.0f} s")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert "started the Airflow stack" not in result.stdout
    assert re.search(r"^source\s+day\s+state\s+rows\s+quarantined", result.stdout, re.M)
    for day in LANDED:
        line = re.search(rf"^kafka\s+{day}\s+success\s+([\d,]+)\s+(\d+)\s.*\s(\S+)$", output, re.M)
        assert line, output[-5000:]
        assert int(line.group(1).replace(",", "")) > 0
        assert Path(line.group(3), "validation.json").exists()
        assert re.search(rf"^\s+\S+\s+kafka\s+{day}\s+running$", output, re.M)  # progress
    assert rows_hash(lake.data / "warehouse") == scheduled


def test_byte_gate_failure_alerts_at_once_and_keeps_the_previous_day(lake, caught_up, alerting):
    day = LANDED[-1]
    warehouse = lake.data / "warehouse"
    kept = [
        warehouse / "kafka" / f"dt={day}",
        warehouse / "kafka" / "_delta_log",  # no commit
        warehouse / "_manifests" / "kafka" / f"dt={day}",
    ]
    before = [files(folder) for folder in kept]
    assert all(before)
    tries = lake.kafka_runs()[day, "decode"]["try_number"]
    segment = lake.data / "landing" / "kafka" / f"dt={day}" / CORRUPTED
    content = segment.read_bytes()
    offset = frame_start(content, len(content) // 4)  # the rest: about 14% of the day's bytes
    segment.write_bytes(content[:offset] + b"\xff" * (len(content) - offset))

    result = lake.wirelake("backfill", "kafka", "--from", day, "--to", day, "--rerun")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-5000:]
    assert re.search(rf"^kafka\s+{day}\s+failed\s", result.stdout, re.M), output[-5000:]
    decode = lake.kafka_runs()[day, "decode"]
    assert (decode["state"], decode["try_number"]) == ("failed", tries + 1)  # retries: 2
    assert [files(folder) for folder in kept] == before

    smtp, http = alerting.smtp, alerting.http
    deadline = time.monotonic() + 120
    while not (smtp.messages and http.bodies) and time.monotonic() < deadline:
        time.sleep(1)
    assert (len(smtp.messages), len(http.bodies)) == (1, 1)
    mail = smtp.messages[0]
    body = mail.get_payload(0).get_payload(decode=True).decode()
    for message in (mail["Subject"], http.bodies[0]["text"]):
        assert f"kafka {day} task decode failed" in message
    for message in (body, http.bodies[0]["text"]):
        assert "above --max-bad-byte-rate" in message
        assert f"{CORRUPTED}@{offset} " in message
    # from the moment the task runner logged the failure (Airflow records the task's end
    # only once its process has exited, after the callbacks)
    failed = failed_at(lake.kafka_log(decode, "decode"))
    latencies = [(arrival - failed).total_seconds() for arrival in smtp.arrivals + http.arrivals]
    shown = ", ".join(f"{latency:.2f} s" for latency in latencies)
    print(f"\nalert latency, decode failed to mail and webhook received: {shown}")
    assert all(0 <= latency < 120 for latency in latencies)


def test_down_leaves_no_process(lake, stack):
    stopped = lake.wirelake("down")
    assert stopped.returncode == 0, stopped.stderr
    assert "Airflow stack stopped" in stopped.stdout
    assert home_processes(lake.home) == []
    status = lake.wirelake("status")
    assert (status.returncode, status.stdout.strip()) == (3, "Airflow stack: not running")

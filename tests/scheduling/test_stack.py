"""The project's own commands through the real scheduler: `./wirelake backfill` of two
landed kafka days (starting and stopping the stack itself), `./wirelake up` and `status`,
the same backfill with `--rerun` on the running stack (identical rows), and
`./wirelake down` leaving no process of the stack behind. Temporary AIRFLOW_HOME and
WIRELAKE_DATA; the API server on a free loopback port.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import psutil
import pyarrow.dataset as ds
import pytest

pytestmark = pytest.mark.e2e  # a real Airflow stack and four spark-submit runs: minutes

ROOT = Path(__file__).resolve().parents[2]
EMPTY, DAYS = "2026-11-17", ("2026-11-18", "2026-11-19")  # a past day never landed, two landed


def stack_processes(home: Path) -> list[psutil.Process]:
    """Every live process whose environment names this test's AIRFLOW_HOME."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("AIRFLOW_HOME") == str(home):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def rows_hash(warehouse: Path) -> str:
    """A hash of the kafka table's rows for DAYS, independent of file and row order."""
    digest = hashlib.sha256()
    for day in DAYS:
        rows = ds.dataset(warehouse / "kafka" / f"dt={day}", format="parquet").to_table()
        for line in sorted(repr(sorted(row.items())) for row in rows.to_pylist()):
            digest.update(line.encode())
    return digest.hexdigest()


def assert_days_succeeded(result: subprocess.CompletedProcess) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert re.search(r"^source\s+day\s+state\s+rows\s+quarantined", result.stdout, re.M)
    for day in DAYS:
        line = re.search(rf"^kafka\s+{day}\s+success\s+([\d,]+)\s+(\d+)\s.*\s(\S+)$", output, re.M)
        assert line, output[-5000:]
        assert int(line.group(1).replace(",", "")) > 0
        assert Path(line.group(3), "validation.json").exists()
        assert re.search(rf"^\s+\S+\s+kafka\s+{day}\s+running$", output, re.M)  # progress
    assert re.search(rf"^kafka\s+{EMPTY}\s+no landing\s+-\s+-\s+-\s+-\s+-$", output, re.M)


def test_up_status_backfill_rerun_down(tmp_path):
    home, data = tmp_path / "airflow", tmp_path / "data"
    env = {**os.environ, "AIRFLOW_HOME": str(home), "WIRELAKE_DATA": str(data)}
    for name in ("WIRELAKE_CONFIG", "AIRFLOW__CORE__DAGS_FOLDER", "WIRELAKE_RETRIES"):
        env.pop(name, None)

    def wirelake(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(ROOT / "wirelake"), *args], env=env, capture_output=True, text=True, timeout=900
        )

    unknown = wirelake("backfill", "nosuch", "--from", EMPTY, "--to", DAYS[1])
    assert unknown.returncode == 2
    assert "unknown source(s) ['nosuch']" in unknown.stdout
    for day in DAYS:
        landing = data / "landing" / "kafka" / f"dt={day}"
        sample = wirelake(
            "run", "python", "-m", "wirecodecs", "sample", "kafka", str(landing), "--date", day
        )
        assert sample.returncode == 0, sample.stderr

    try:
        # no stack yet: the backfill starts one for its duration and stops it afterwards
        first = wirelake("backfill", "kafka", "--from", EMPTY, "--to", DAYS[1])
        assert_days_succeeded(first)
        assert "started the Airflow stack" in first.stdout
        assert not (home / "stack.json").exists()
        assert stack_processes(home) == []
        before = rows_hash(data / "warehouse")

        started = wirelake("up")
        assert started.returncode == 0, started.stderr[-5000:]
        url = re.search(r"Airflow UI: (http://127\.0\.0\.1:\d+)", started.stdout).group(1)
        assert str(home / "simple_auth_manager_passwords.json.generated") in started.stdout
        status = wirelake("status")
        assert status.returncode == 0, status.stdout
        assert f"{url} (healthy)" in status.stdout
        for component in ("scheduler", "dag-processor", "triggerer", "api-server"):
            assert re.search(rf"^\s+{component}\s+pid \d+\s+alive$", status.stdout, re.M)
        state = json.loads((home / "stack.json").read_text())
        assert state["url"] == url

        rerun = wirelake("backfill", "kafka", "--from", EMPTY, "--to", DAYS[1], "--rerun")
        assert_days_succeeded(rerun)
        assert "started the Airflow stack" not in rerun.stdout
        assert rows_hash(data / "warehouse") == before
    finally:
        stopped = wirelake("down")
    assert stopped.returncode == 0, stopped.stderr
    assert "Airflow stack stopped" in stopped.stdout
    assert stack_processes(home) == []
    status = wirelake("status")
    assert (status.returncode, status.stdout.strip()) == (3, "Airflow stack: not running")

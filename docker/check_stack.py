"""The HTTP side of docker/check.sh, run on the host with the standard library only.

    python3 check_stack.py free-port
    python3 check_stack.py healthy AIRFLOW_URL SPARK_UI_URL TIMEOUT_S
    python3 check_stack.py ui AIRFLOW_URL TIMEOUT_S   (password: $AIRFLOW_ADMIN_PASSWORD)
    python3 check_stack.py run-day AIRFLOW_URL DAY TIMEOUT_S SOURCE...
    python3 check_stack.py spark-apps SPARK_UI_URL MIN_APPS

Each prints what it saw and exits non-zero when the stack is not as it should be.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request

DONE = {"success", "failed"}


def get(url: str, token: str | None = None, method: str = "GET", body: dict | None = None):
    request = urllib.request.Request(
        url, method=method, data=None if body is None else json.dumps(body).encode()
    )
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.headers.get("Content-Type", ""), response.read()


def get_json(url: str, token: str | None = None, method: str = "GET", body: dict | None = None):
    return json.loads(get(url, token, method, body)[2] or b"{}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        print(probe.getsockname()[1])
    return 0


def healthy(airflow: str, spark: str, timeout: float) -> int:
    """Airflow's four components healthy and one alive Spark worker registered."""
    deadline, airflow_ok, workers = time.monotonic() + timeout, {}, -1
    while time.monotonic() < deadline:
        try:
            report = get_json(f"{airflow}/api/v2/monitor/health")
            keys = ("metadatabase", "scheduler", "triggerer", "dag_processor")
            airflow_ok = {key: report.get(key, {}).get("status") for key in keys}
        except (OSError, ValueError):
            pass
        with contextlib.suppress(OSError, ValueError):
            workers = get_json(f"{spark}/json/").get("aliveworkers", 0)
        if airflow_ok and all(s == "healthy" for s in airflow_ok.values()) and workers >= 1:
            print(f"    airflow {airflow_ok}; spark master: {workers} alive worker(s)")
            return 0
        time.sleep(3)
    print(f"    not healthy after {timeout:.0f} s: airflow {airflow_ok or 'no answer'}, "
          f"spark workers {workers if workers >= 0 else 'no answer'}")  # fmt: skip
    return 1


def login(airflow: str) -> str:
    body = {"username": "admin", "password": os.environ["AIRFLOW_ADMIN_PASSWORD"]}
    return get_json(f"{airflow}/auth/token", method="POST", body=body)["access_token"]


def ui(airflow: str, timeout: float) -> int:
    """The UI page answers, the admin logs in with the run-time password, the DAGs are parsed."""
    status, kind, page = get(f"{airflow}/")
    if status != 200 or "text/html" not in kind:
        print(f"    GET / -> {status} {kind}")
        return 1
    print(f"    GET {airflow}/ -> {status} {kind}, {len(page):,} bytes")
    try:
        get_json(
            f"{airflow}/auth/token", method="POST", body={"username": "admin", "password": "x"}
        )
        print("    a wrong password was accepted")
        return 1
    except urllib.error.HTTPError as error:
        print(f"    wrong password refused ({error.code})")
    token = login(airflow)
    deadline = time.monotonic() + timeout
    while True:
        dags = get_json(f"{airflow}/api/v2/dags?limit=100", token)
        names = sorted(dag["dag_id"] for dag in dags.get("dags", []))
        if any(name.startswith("wirelake_") for name in names) or time.monotonic() > deadline:
            break
        time.sleep(3)
    print(f"    logged in as admin; {len(names)} DAGs parsed: {', '.join(names)}")
    return 0 if names else 1


def run_day(airflow: str, day: str, timeout: float, sources: list[str]) -> int:
    """Unpause each source's DAG (its start_date is DAY: the scheduler creates exactly that
    day's run) and wait for the runs; every task must succeed."""
    token = login(airflow)
    dag_ids = [f"wirelake_{source}" for source in sources]
    deadline = time.monotonic() + timeout
    for dag_id in dag_ids:
        while True:
            try:
                get_json(f"{airflow}/api/v2/dags/{dag_id}", token)
                break
            except urllib.error.HTTPError:
                if time.monotonic() > deadline:
                    print(f"    {dag_id} never parsed")
                    return 1
                time.sleep(3)
        get_json(f"{airflow}/api/v2/dags/{dag_id}", token, "PATCH", {"is_paused": False})
        print(f"    {time.strftime('%H:%M:%S')}  unpaused {dag_id}", flush=True)
    started, seen, runs = time.monotonic(), {}, {}
    query = f"logical_date_gte={day}T00:00:00Z&logical_date_lte={day}T00:00:00Z"
    while True:
        for dag_id in dag_ids:
            found = get_json(f"{airflow}/api/v2/dags/{dag_id}/dagRuns?{query}", token)["dag_runs"]
            if found:
                runs[dag_id] = found[0]
                if seen.get(dag_id) != found[0]["state"]:
                    seen[dag_id] = found[0]["state"]
                    took = time.monotonic() - started
                    print(f"    {time.strftime('%H:%M:%S')}  {dag_id} {day}: {seen[dag_id]} "
                          f"(+{took:.0f} s)", flush=True)  # fmt: skip
        if len(runs) == len(dag_ids) and all(run["state"] in DONE for run in runs.values()):
            break
        if time.monotonic() > deadline:
            print(f"    runs not done after {timeout:.0f} s: {seen}")
            return 1
        time.sleep(5)
    failed = 0
    for dag_id, run in runs.items():
        run_id = urllib.request.quote(run["dag_run_id"], safe="")
        tasks = get_json(f"{airflow}/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances", token)
        states = {task["task_id"]: task["state"] for task in tasks["task_instances"]}
        durations = {t["task_id"]: t.get("duration") or 0 for t in tasks["task_instances"]}
        text = ", ".join(
            f"{task} {state} {durations[task]:.0f} s" for task, state in states.items()
        )
        print(f"    {dag_id}: run {run['state']}; {text}")
        failed += run["state"] != "success" or any(s != "success" for s in states.values())
    return 1 if failed else 0


def spark_apps(spark: str, minimum: int) -> int:
    """The Spark applications the DAG submitted ran on the cluster's worker."""
    state = get_json(f"{spark}/json/")
    apps = state.get("completedapps", []) + state.get("activeapps", [])
    for app in apps:
        print(f"    spark app {app['id']} {app['name']}: {app['state']}, "
              f"{app.get('cores', 0)} cores, {app['duration'] / 1000:.0f} s")  # fmt: skip
    workers = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
    print(
        f"    {len(workers)} alive worker(s): "
        + ", ".join(f"{w['host']} {w['cores']} cores {w['memory']} MB" for w in workers)
    )
    finished = [app for app in apps if app["state"] == "FINISHED"]
    if len(finished) < minimum:
        print(f"    expected at least {minimum} finished applications, found {len(finished)}")
        return 1
    return 0


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "free-port":
        return free_port()
    if command == "healthy":
        return healthy(args[0], args[1], float(args[2]))
    if command == "ui":
        return ui(args[0], float(args[1]))
    if command == "run-day":
        return run_day(args[0], args[1], float(args[2]), args[3:])
    if command == "spark-apps":
        return spark_apps(args[0], int(args[1]))
    print(f"unknown command {command}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

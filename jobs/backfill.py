"""`./wirelake backfill SOURCE[,SOURCE...] --from D1 --to D2 [--rerun]`: Airflow's own
backfill of days D1..D2 through the project's stack, with progress per day and a closing
table read back from the lake (manifest and validation report of each day).

The stack is started for the backfill's duration when it does not run. The scheduler only
runs a backfill's runs while its DAG is unpaused, so a paused DAG is unpaused for the
duration and paused again afterwards (its own catchup runs may start meanwhile).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pyarrow.dataset as ds

from jobs import layout, stack

sys.path.insert(0, str(stack.ROOT / "dags"))
from dag_factory import load_config, source_paths

DONE = {"success", "failed"}
BUSY_WAIT_SECONDS = 120  # how long a busy metadata database is waited for, per call


class Api:
    """A minimal client of the Airflow REST API, logged in as the simple auth manager's user."""

    def __init__(self, url: str) -> None:
        self.url = url
        password = json.loads(stack.password_file().read_text())[stack.USER]
        login = {"username": stack.USER, "password": password}
        self.token = self.call("POST", "/auth/token", login, auth=False)["access_token"]

    def call(self, method: str, path: str, body: dict | None = None, auth: bool = True) -> dict:
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        if auth:
            request.add_header("Authorization", f"Bearer {self.token}")
        waited = 0.0
        while True:
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return json.loads(response.read() or b"{}")
            except urllib.error.HTTPError as error:
                detail = error.read().decode(errors="replace")
                # 503 while another Airflow process holds SQLite's write lock: try again
                if error.code != 503 or waited >= BUSY_WAIT_SECONDS:
                    raise RuntimeError(f"{method} {path}: HTTP {error.code}: {detail}") from None
            time.sleep(2)
            waited += 2


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="./wirelake backfill", description=__doc__.split("\n")[0])
    parser.add_argument("sources", help="source name(s) from sources.yaml, comma-separated")
    parser.add_argument("--from", dest="start", type=dt.date.fromisoformat, required=True)
    parser.add_argument("--to", dest="end", type=dt.date.fromisoformat, required=True)
    parser.add_argument(
        "--rerun", action="store_true", help="also rerun days that already succeeded"
    )
    parser.add_argument("--poll-seconds", type=float, default=5, help="progress poll interval")
    parser.add_argument(
        "--timeout-minutes", type=float, default=180, help="give up (and fail) after this long"
    )
    return parser.parse_args(argv)


def wait_for_dag(api: Api, dag_id: str, timeout: float = 300) -> dict:
    """The DAG as the API knows it, once the DAG processor has parsed it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return api.call("GET", f"/api/v2/dags/{dag_id}")
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def day_runs(api: Api, dag_id: str, start: dt.date, end: dt.date) -> dict[str, dict]:
    """Each day's run in D1..D2 (its logical date is the day: data intervals)."""
    query = (
        f"logical_date_gte={start.isoformat()}T00:00:00Z"
        f"&logical_date_lte={end.isoformat()}T00:00:00Z&limit=1000&order_by=run_after"
    )
    runs = api.call("GET", f"/api/v2/dags/{dag_id}/dagRuns?{query}")["dag_runs"]
    return {run["logical_date"][:10]: run for run in runs}


def outcome(api: Api, dag_id: str, run: dict) -> str:
    """A run's state, or "no landing" for a successful run whose landing check skipped the
    day (its decode never ran)."""
    if run["state"] != "success":
        return run["state"]
    path = f"/api/v2/dags/{dag_id}/dagRuns/{quote(run['dag_run_id'], safe='')}"
    landing = api.call("GET", f"{path}/taskInstances/wait_for_landing")["state"]
    return "no landing" if landing == "skipped" else "success"


def backfill(api: Api, sources: list[str], args: argparse.Namespace) -> dict[tuple, str]:
    """Create one backfill per source, print each day's state changes; return the last
    state of every (source, day) once all backfills have completed."""
    created, paused = {}, []
    for source in sources:
        dag_id = f"wirelake_{source}"
        if wait_for_dag(api, dag_id)["is_paused"]:
            api.call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
            paused.append(dag_id)
        body = {
            "dag_id": dag_id,
            "from_date": f"{args.start.isoformat()}T00:00:00Z",
            "to_date": f"{args.end.isoformat()}T00:00:00Z",
            "reprocess_behavior": "completed" if args.rerun else "none",
        }
        created[source] = api.call("POST", "/api/v2/backfills", body)["id"]
        print(
            f"backfill {created[source]} of {dag_id} {args.start}..{args.end} created", flush=True
        )
    states: dict[tuple, str] = {}  # shown state of each (source, day)
    seen: dict[tuple, str] = {}  # the run's own state when last polled
    deadline = time.monotonic() + args.timeout_minutes * 60
    try:
        while created:
            for source, backfill_id in list(created.items()):
                dag_id = f"wirelake_{source}"
                runs = day_runs(api, dag_id, args.start, args.end)
                for day, run in sorted(runs.items()):
                    if seen.get((source, day)) != run["state"]:
                        seen[source, day] = run["state"]
                        state = outcome(api, dag_id, run) if run["state"] in DONE else run["state"]
                        states[source, day] = state
                        stamp = dt.datetime.now().strftime("%H:%M:%S")
                        print(f"  {stamp}  {source:<16} {day}  {state}", flush=True)
                finished = api.call("GET", f"/api/v2/backfills/{backfill_id}")["completed_at"]
                if finished and all(run["state"] in DONE for run in runs.values()):
                    del created[source]
            if created and time.monotonic() > deadline:
                raise SystemExit(f"wirelake: backfill not done after {args.timeout_minutes} min")
            if created:
                time.sleep(args.poll_seconds)
    finally:
        for dag_id in paused:
            api.call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": True})
    return states


def day_row(config: dict, source: str, day: str, state: str) -> list[str]:
    """One line of the closing table, read from the day's manifest and validation report."""
    paths = source_paths(config, source)
    date = dt.date.fromisoformat(day)
    manifest_path = Path(layout.manifest_path(paths["warehouse"], source, date))
    report_path = Path(layout.validation_path(paths["reports"], source, date))
    partition = Path(layout.partition_dir(paths["warehouse"], source, date))
    rows = ds.dataset(partition, format="parquet").count_rows() if partition.exists() else None
    totals = json.loads(manifest_path.read_text())["totals"] if manifest_path.exists() else {}
    outcomes = []
    if report_path.exists():
        outcomes = [item["success"] for item in json.loads(report_path.read_text())["results"]]
    return [
        source,
        day,
        state,
        "-" if rows is None else f"{rows:,}",
        f"{totals['frames_bad']:,}" if totals else "-",
        f"{totals['bad_byte_rate']:.2%}" if totals else "-",
        f"{outcomes.count(True)}/{outcomes.count(False)}" if outcomes else "-",
        str(report_path.parent) if report_path.exists() else "-",
    ]


def table(lines: list[list[str]]) -> str:
    header = ["source", "day", "state", "rows", "quarantined", "bad bytes", "exp ok/failed"]
    header.append("reports")
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *lines]
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = load_config()
    sources = [name.strip() for name in args.sources.split(",") if name.strip()]
    unknown = sorted(set(sources) - set(config["sources"])) or ([] if sources else ["(none)"])
    if unknown:
        print(f"wirelake: unknown source(s) {unknown}; known: {sorted(config['sources'])}")
        return 2
    if args.end < args.start:
        print("wirelake: --to is before --from")
        return 2
    started_here = stack.read_state() is None
    began = time.monotonic()
    state = stack.up()
    if started_here:
        print(f"started the Airflow stack for this backfill ({time.monotonic() - began:.0f} s)")
    try:
        states = backfill(Api(state["url"]), sources, args)
    except RuntimeError as error:  # the API refused, e.g. a backfill of the DAG still runs
        print(f"wirelake: {error}", file=sys.stderr)
        return 1
    finally:
        if started_here:
            stack.down()
            print("stopped the Airflow stack")
    print(f"backfill done in {time.monotonic() - began:.0f} s")
    lines = [day_row(config, src, day, st) for (src, day), st in sorted(states.items())]
    print(table(lines))
    ok = {"success", "no landing"}
    return 0 if lines and all(line[2] in ok for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())

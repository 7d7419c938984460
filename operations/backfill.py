"""`./wirelake backfill SOURCE[,SOURCE...] --from D1 --to D2 [--rerun]`: Airflow's own
backfill of days D1..D2 through the project's stack, with progress per day and a closing
table read back from the lake (manifest and validation report of each day);
`./wirelake backfill --cancel SOURCE[,...]` cancels a source's unfinished backfill.

Creating a backfill is not idempotent (Airflow allows one unfinished backfill per DAG), so
the command never repeats a POST blindly: after a 5xx, a timeout or a 409 it looks up the
DAG's unfinished backfills and adopts the one its request made (or one covering the same
days and reprocess behaviour), cancels one of its own that got no runs, and otherwise names
the backfill in the way and how to cancel it. A backfill this command made is never left
behind in a stack it stops: the stack is stopped only once each has completed or was
cancelled.

The stack is started for the backfill's duration when it does not run. The scheduler only
runs a backfill's runs while its DAG is unpaused, so a paused DAG is unpaused for the
duration (its catchup runs start too, and are shown) and paused again afterwards.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import quote

from jobs import lake, layout, storage
from operations import stack

sys.path.insert(0, str(stack.ROOT / "dags"))
from dag_factory import load_config, source_paths

DONE = {"success", "failed"}
REQUEST_TIMEOUT_SECONDS = 30
CREATE_ATTEMPTS = 3  # POSTs of one backfill, each only after a look-up found none made


class ApiError(RuntimeError):
    """A request the API refused (`status`), or one it did not answer (`status` None)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Blocked(RuntimeError):
    """Another unfinished backfill of the DAG stands in the way."""


class TimedOut(RuntimeError):
    """The backfills did not finish within --timeout-minutes."""


class Api:
    """A minimal client of the Airflow REST API, logged in as the simple auth manager's user.

    Requests that are safe to repeat (GET, PUT, PATCH, a dry run) are retried while the
    server answers 503 (SQLite's write lock) or does not answer, for up to `wait` seconds; a
    POST that makes something is sent once and its failure is left to the caller, who knows
    how to find out what it did.
    """

    def __init__(self, url: str, wait: float) -> None:
        self.url, self.wait = url, wait
        self.token = ""
        self.gone = False  # it stopped answering: each later request is tried once
        self.login()

    def login(self) -> None:
        """Log in as $WIRELAKE_API_USER with $WIRELAKE_API_PASSWORD, or as the simple auth
        manager's user of the project's stack with its generated password."""
        user = os.environ.get("WIRELAKE_API_USER", stack.USER)
        password = os.environ.get("WIRELAKE_API_PASSWORD")
        if password is None:
            password = json.loads(stack.password_file().read_text())[user]
        body = {"username": user, "password": password}
        self.token = self.call("POST", "/auth/token", body, auth=False)["access_token"]

    def call(
        self,
        method: str,
        path: str,
        body: dict | None = None,
        auth: bool = True,
        retry: bool | None = None,
    ) -> dict:
        """The answer's JSON; `retry` (default: for all but POST) repeats the request while
        the server is busy or away."""
        retry = method != "POST" if retry is None else retry
        deadline = time.monotonic() + (0 if self.gone else self.wait)
        warned = False
        while True:
            try:
                answer = self._send(method, path, body, auth)
                self.gone = False
                return answer
            except ApiError as error:
                if auth and error.status == 401:  # an API server restarted with a new key
                    self.login()
                    continue
                transient = error.status is None or error.status == 503
                if not retry or not transient or time.monotonic() > deadline:
                    self.gone = error.status is None
                    raise
                if not warned:
                    print(
                        f"wirelake: {error}; trying again for up to {self.wait:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
                    warned = True
            time.sleep(2)

    def _send(self, method: str, path: str, body: dict | None, auth: bool) -> dict:
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        if auth:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            raise ApiError(f"{method} {path}: HTTP {error.code}: {detail}", error.code) from None
        except (OSError, http.client.HTTPException) as error:  # refused, reset, timed out
            reason = getattr(error, "reason", None) or error
            raise ApiError(
                f"{method} {path}: the Airflow API server at {self.url} did not answer ({reason})"
            ) from None


@dataclass
class Backfill:
    """One source's backfill as this command follows it."""

    source: str
    id: int
    made_here: bool  # created by this command (else adopted: left as it was found)
    created_at: str
    done: bool = False
    cancelled: bool = False
    runs: dict[str, dict] = field(default_factory=dict)

    @property
    def dag_id(self) -> str:
        return dag_id(self.source)


def dag_id(source: str) -> str:
    return f"wirelake_{source}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="./wirelake backfill", description=__doc__.split("\n")[0])
    parser.add_argument("sources", help="source name(s) from sources.yaml, comma-separated")
    parser.add_argument("--from", dest="start", type=dt.date.fromisoformat)
    parser.add_argument("--to", dest="end", type=dt.date.fromisoformat)
    parser.add_argument(
        "--rerun", action="store_true", help="also rerun days that already succeeded"
    )
    parser.add_argument(
        "--cancel", action="store_true", help="cancel the sources' unfinished backfills instead"
    )
    parser.add_argument("--db", help=stack.DB_HELP)
    parser.add_argument(
        "--api",
        help="URL of a running Airflow's API server to use instead of the project's stack "
        "(login from $WIRELAKE_API_USER and $WIRELAKE_API_PASSWORD)",
    )
    parser.add_argument(
        "--api-wait",
        type=float,
        default=60,
        help="seconds to keep trying while the API server is busy or does not answer",
    )
    parser.add_argument("--poll-seconds", type=float, default=5, help="progress poll interval")
    parser.add_argument(
        "--timeout-minutes", type=float, default=180, help="give up (and fail) after this long"
    )
    args = parser.parse_args(argv)
    if not args.cancel and (args.start is None or args.end is None):
        parser.error("--from and --to are required (or --cancel)")
    if not args.cancel and args.end < args.start:
        parser.error("--to is before --from")
    return args


def wait_for_dag(api: Api, dag: str, timeout: float = 300) -> dict:
    """The DAG as the API knows it, once the DAG processor has parsed it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return api.call("GET", f"/api/v2/dags/{dag}")
        except ApiError as error:
            if error.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(2)


def unfinished(api: Api, dag: str) -> list[dict]:
    """The DAG's backfills without completed_at (Airflow lets one exist at a time)."""
    found = api.call("GET", f"/api/v2/backfills?dag_id={quote(dag)}&limit=100")["backfills"]
    return [backfill for backfill in found if backfill["completed_at"] is None]


def same_request(backfill: dict, request: dict) -> bool:
    """The backfill covers the request's days with its reprocess behaviour."""
    return (
        backfill["reprocess_behavior"] == request["reprocess_behavior"]
        and _instant(backfill["from_date"]) == _instant(request["from_date"])
        and _instant(backfill["to_date"]) == _instant(request["to_date"])
    )


def _instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def describe(backfill: dict) -> str:
    return (
        f"backfill {backfill['id']} of {backfill['dag_id']} ({backfill['from_date'][:10]}.."
        f"{backfill['to_date'][:10]}, reprocess {backfill['reprocess_behavior']}, created "
        f"{backfill['created_at'][:19]})"
    )


def queued_days(api: Api, backfill: dict) -> set[str]:
    """The days whose run the backfill queued (created, or cleared to run again, after the
    backfill was made)."""
    runs = day_runs(
        api,
        backfill["dag_id"],
        _instant(backfill["from_date"]).date(),
        _instant(backfill["to_date"]).date(),
    )
    made = _instant(backfill["created_at"]) - dt.timedelta(seconds=1)
    return {
        day
        for day, run in runs.items()
        if run["run_type"] == "backfill" and run["queued_at"] and _instant(run["queued_at"]) >= made
    }


def planned_days(api: Api, request: dict) -> set[str]:
    """The days a backfill of `request` would run now (Airflow's dry run: days whose run is
    in flight, or done without --rerun, get none)."""
    answer = api.call("POST", "/api/v2/backfills/dry_run", request, retry=True)
    return {item["logical_date"][:10] for item in answer["backfills"]}


def whole(api: Api, backfill: dict, planned: set[str], wait: float = 0) -> bool:
    """The backfill queued a run for every planned day: its creation did not fail half-way
    (Airflow commits a backfill's row before its runs: a failure in between leaves a row
    that the scheduler never runs anything for). Asked again for `wait` seconds: a request
    that timed out may still be creating the runs when a look-up sees the row."""
    deadline = time.monotonic() + wait
    while not planned <= queued_days(api, backfill):
        if time.monotonic() > deadline:
            return False
        time.sleep(2)
    return True


def cancel(api: Api, backfill_id: int) -> None:
    """Cancel a backfill (its queued runs fail); one that completed meanwhile is left."""
    try:
        api.call("PUT", f"/api/v2/backfills/{backfill_id}/cancel")
    except ApiError as error:
        if error.status != 409:  # 409: already completed
            raise


def create(api: Api, source: str, request: dict) -> Backfill:
    """The backfill of `request`: created once, or adopted, whatever the server answers."""
    dag = dag_id(source)
    planned = planned_days(api, request)
    before = unfinished(api, dag)
    for backfill in [b for b in before if same_request(b, request)]:
        if whole(api, backfill, planned):
            print(f"adopting {describe(backfill)}: it is still running", flush=True)
            return Backfill(source, backfill["id"], False, backfill["created_at"])
        cancel(api, backfill["id"])
        print(f"cancelled {describe(backfill)}: left half-made, without its runs", flush=True)
    others = [b for b in before if not same_request(b, request)]
    if others:
        raise Blocked(blocked_message(source, others[0]))
    known = {backfill["id"] for backfill in before}
    for _ in range(CREATE_ATTEMPTS):
        try:
            made = api.call("POST", "/api/v2/backfills", request)
            return Backfill(source, made["id"], True, made["created_at"])
        except ApiError as error:
            if error.status is not None and error.status < 500 and error.status != 409:
                raise
            print(f"{error}; looking up {dag}'s unfinished backfills", flush=True)
        after = unfinished(api, dag)
        mine = [b for b in after if b["id"] not in known and same_request(b, request)]
        if mine:
            backfill = mine[0]
            if whole(api, backfill, planned, wait=10):
                print(f"following {describe(backfill)}: made by this request", flush=True)
                return Backfill(source, backfill["id"], True, backfill["created_at"])
            cancel(api, backfill["id"])
            print(f"cancelled {describe(backfill)}: made half-way, without its runs", flush=True)
            known.add(backfill["id"])
        elif [b for b in after if b["id"] not in known]:
            raise Blocked(blocked_message(source, after[0]))
    raise ApiError(f"{dag}: no backfill could be created in {CREATE_ATTEMPTS} attempts")


def blocked_message(source: str, backfill: dict) -> str:
    return (
        f"{describe(backfill)} has not finished, and Airflow runs one backfill per DAG at a "
        f"time: wait for it, or cancel it with ./wirelake backfill --cancel {source}"
    )


def day_runs(api: Api, dag: str, start: dt.date, end: dt.date) -> dict[str, dict]:
    """Each day's run in D1..D2 (its logical date is the day: data intervals)."""
    query = (
        f"logical_date_gte={start.isoformat()}T00:00:00Z"
        f"&logical_date_lte={end.isoformat()}T00:00:00Z&limit=1000&order_by=run_after"
    )
    runs = api.call("GET", f"/api/v2/dags/{dag}/dagRuns?{query}")["dag_runs"]
    return {run["logical_date"][:10]: run for run in runs}


def started_since(api: Api, dag: str, since: str) -> dict[str, dict]:
    """The DAG's scheduled runs started since `since` (catchup set off by the unpause)."""
    query = f"run_type=scheduled&start_date_gte={quote(since)}&limit=1000"
    runs = api.call("GET", f"/api/v2/dags/{dag}/dagRuns?{query}")["dag_runs"]
    return {run["logical_date"][:10]: run for run in runs}


def outcome(api: Api, dag: str, run: dict) -> str:
    """A run's state, or "no landing" for a successful run whose landing check skipped the
    day (its decode never ran)."""
    if run["state"] != "success":
        return run["state"]
    path = f"/api/v2/dags/{dag}/dagRuns/{quote(run['dag_run_id'], safe='')}"
    landing = api.call("GET", f"{path}/taskInstances/wait_for_landing")["state"]
    return "no landing" if landing == "skipped" else "success"


def unpause(api: Api, sources: list[str], paused: list[str]) -> None:
    """Unpause the sources' paused DAGs, saying so; add them to `paused` (to pause again)."""
    for source in sources:
        dag = dag_id(source)
        if wait_for_dag(api, dag)["is_paused"]:
            api.call("PATCH", f"/api/v2/dags/{dag}", {"is_paused": False})
            paused.append(dag)
            print(
                f"unpaused {dag} for the backfill (Airflow runs backfill runs only of unpaused "
                "DAGs): its scheduled catchup runs may start too and are shown below; paused "
                "again at the end unless those still run",
                flush=True,
            )


def follow(api: Api, backfills: list[Backfill], args: argparse.Namespace, since: str) -> None:
    """Print each day's state changes, and the scheduled runs the unpause started, until
    every backfill has completed and its runs are done."""
    seen: dict[tuple, str] = {}
    deadline = time.monotonic() + args.timeout_minutes * 60
    while not all(backfill.done for backfill in backfills):
        if not args.api:
            revive_stack()
        for backfill in (b for b in backfills if not b.done):
            runs = day_runs(api, backfill.dag_id, args.start, args.end)
            scheduled = started_since(api, backfill.dag_id, since)
            shown = [(day, run, "") for day, run in runs.items()]
            shown += [(d, r, " (scheduled)") for d, r in scheduled.items() if d not in runs]
            for day, run, kind in sorted(shown, key=lambda item: item[0]):
                key = (backfill.source, day, kind)
                if seen.get(key) != run["state"]:
                    seen[key] = run["state"]
                    state = (
                        outcome(api, backfill.dag_id, run) if run["state"] in DONE else run["state"]
                    )
                    stamp = dt.datetime.now().strftime("%H:%M:%S")
                    print(f"  {stamp}  {backfill.source:<16} {day}  {state}{kind}", flush=True)
            backfill.runs = runs
            finished = api.call("GET", f"/api/v2/backfills/{backfill.id}")["completed_at"]
            backfill.done = bool(finished) and all(run["state"] in DONE for run in runs.values())
        if time.monotonic() > deadline:
            raise TimedOut(f"backfill not done after {args.timeout_minutes} min")
        if not all(backfill.done for backfill in backfills):
            time.sleep(args.poll_seconds)


def revive_stack() -> None:
    """Restart a background component of the project's stack that died (the scheduler,
    say), so that no run waits for ever on it. Not the API server: losing it, this command
    can no longer follow what it made, and says so instead."""
    state = stack.read_state()
    dead = [
        name
        for name, entry in (state or {}).get("components", {}).items()
        if name != "api-server" and not stack.alive(entry)
    ]
    if dead:
        print(
            f"wirelake: the stack's {', '.join(dead)} stopped (logs: {state['logs']}/); "
            "restarting it",
            file=sys.stderr,
            flush=True,
        )
        stack.up()


@dataclass
class Made:
    """What this command made and changed in Airflow, to be put right when it ends."""

    backfills: list[Backfill] = field(default_factory=list)
    paused: list[str] = field(default_factory=list)  # DAGs it unpaused


def wind_down(api: Api, made: Made, stopping: bool) -> None:
    """Pause again the DAGs this command unpaused, and cancel its unfinished backfills
    that have no runs, or all of them when the stack is about to stop; say what goes on."""
    for backfill in made.backfills:
        if backfill.done or backfill.cancelled or not backfill.made_here:
            continue
        current = api.call("GET", f"/api/v2/backfills/{backfill.id}")
        if stopping or not queued_days(api, current):
            cancel(api, backfill.id)
            backfill.cancelled = True
            print(f"cancelled backfill {backfill.id} of {backfill.dag_id}", flush=True)
        if stopping:
            fail_unfinished(api, current)
        else:
            print(
                f"wirelake: backfill {backfill.id} of {backfill.dag_id} goes on in the stack at "
                f"{api.url}; cancel it with ./wirelake backfill --cancel {backfill.source}",
                file=sys.stderr,
            )
    while made.paused:
        repause(api, made.paused[-1])
        made.paused.pop()


def repause(api: Api, dag: str) -> None:
    """Pause a DAG this command unpaused, unless runs of its own that the unpause let
    start are still queued or running: a paused DAG's runs stop where they are, so the DAG
    is left unpaused for them, saying so."""
    query = "run_type=scheduled&state=queued&state=running&limit=1000"
    active = api.call("GET", f"/api/v2/dags/{dag}/dagRuns?{query}")["dag_runs"]
    if not active:
        api.call("PATCH", f"/api/v2/dags/{dag}", {"is_paused": True})
        return
    days = ", ".join(sorted(run["logical_date"][:10] for run in active))
    print(
        f"{dag} left unpaused: its scheduled runs of {days} are queued or running (pausing it "
        f"would stop them where they are); pause it when they are done: ./wirelake run "
        f"airflow dags pause {dag}",
        flush=True,
    )


def fail_unfinished(api: Api, backfill: dict) -> None:
    """Mark failed the runs of a cancelled backfill that are still queued or running in a
    stack about to stop (cancelling leaves running runs running): else they stay
    'running' in the metadata database, and a later backfill of their days finds them in
    flight and runs nothing."""
    runs = day_runs(
        api,
        backfill["dag_id"],
        _instant(backfill["from_date"]).date(),
        _instant(backfill["to_date"]).date(),
    )
    for day in queued_days(api, backfill):
        run = runs[day]
        if run["state"] in ("queued", "running"):
            path = f"/api/v2/dags/{backfill['dag_id']}/dagRuns/{quote(run['dag_run_id'], safe='')}"
            api.call("PATCH", path, {"state": "failed"})
            print(f"marked the run of {day} failed: its stack stops", flush=True)


def settle(api: Api, made: Made, stopping: bool) -> bool:
    """wind_down, or say what may be left when the API cannot be reached for it."""
    try:
        wind_down(api, made, stopping)
        return True
    except ApiError as error:
        print(f"wirelake: {error}", file=sys.stderr)
    for backfill in made.backfills:
        if backfill.made_here and not (backfill.done or backfill.cancelled):
            print(
                f"wirelake: backfill {backfill.id} of {backfill.dag_id} may be unfinished: once "
                f"the API answers, ./wirelake backfill --cancel {backfill.source} cancels it, or "
                "the same backfill command adopts it",
                file=sys.stderr,
            )
    for dag in made.paused:
        print(f"wirelake: {dag} was left unpaused", file=sys.stderr)
    return False


def cancel_all(api: Api, sources: list[str]) -> int:
    """`--cancel`: cancel each source's unfinished backfill."""
    for source in sources:
        backfills = unfinished(api, dag_id(source))
        for backfill in backfills:
            cancel(api, backfill["id"])
            print(f"cancelled {describe(backfill)}")
        if not backfills:
            print(f"{dag_id(source)}: no unfinished backfill")
    return 0


def day_row(config: dict, source: str, day: str, state: str) -> list[str]:
    """One line of the closing table, read from the day's manifest and validation report
    (on local disk or an object store alike)."""
    paths = source_paths(config, source)
    date = dt.date.fromisoformat(day)
    manifest = layout.manifest_path(paths["warehouse"], source, date)
    report = layout.validation_path(paths["reports"], source, date)
    rows = lake.day_rows(layout.table_dir(paths["warehouse"], source), date)
    totals = storage.read_json(manifest)["totals"] if storage.exists(manifest) else {}
    outcomes = []
    if storage.exists(report):
        outcomes = [item["success"] for item in storage.read_json(report)["results"]]
    return [
        source,
        day,
        state,
        "-" if rows is None else f"{rows:,}",
        f"{totals['frames_bad']:,}" if totals else "-",
        f"{totals['bad_byte_rate']:.2%}" if totals else "-",
        f"{outcomes.count(True)}/{outcomes.count(False)}" if outcomes else "-",
        layout.report_dir(paths["reports"], source, date) if outcomes else "-",
    ]


def table(lines: list[list[str]]) -> str:
    header = ["source", "day", "state", "rows", "quarantined", "bad bytes", "exp ok/failed"]
    header.append("reports")
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *lines]
    )


def run_backfills(api: Api, sources: list[str], args: argparse.Namespace, made: Made) -> int:
    """Create (or adopt) one backfill per source, follow them, print the closing table."""
    since = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    for source in sources:
        wait_for_dag(api, dag_id(source))
    # created before the unpause, so that the scheduler's catchup finds these days' runs
    # there: both making a run for one day at once crashed the scheduler on PostgreSQL
    # (a unique-key violation in its run creation)
    for source in sources:
        request = {
            "dag_id": dag_id(source),
            "from_date": f"{args.start.isoformat()}T00:00:00Z",
            "to_date": f"{args.end.isoformat()}T00:00:00Z",
            "reprocess_behavior": "completed" if args.rerun else "none",
        }
        backfill = create(api, source, request)
        made.backfills.append(backfill)
        if backfill.made_here:
            print(f"backfill {backfill.id} of {backfill.dag_id} {args.start}..{args.end} created")
    unpause(api, sources, made.paused)
    follow(api, made.backfills, args, since)
    config = load_config()
    lines = [
        day_row(config, backfill.source, day, outcome(api, backfill.dag_id, run))
        for backfill in made.backfills
        for day, run in sorted(backfill.runs.items())
    ]
    print(table(lines))
    ok = {"success", "no landing"}
    return 0 if lines and all(line[2] in ok for line in lines) else 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.db:
        os.environ["WIRELAKE_DB"] = args.db
    config = load_config()
    sources = [name.strip() for name in args.sources.split(",") if name.strip()]
    unknown = sorted(set(sources) - set(config["sources"])) or ([] if sources else ["(none)"])
    if unknown:
        print(f"wirelake: unknown source(s) {unknown}; known: {sorted(config['sources'])}")
        return 2
    started_here = not args.api and stack.read_state() is None
    began = time.monotonic()
    url = args.api.rstrip("/") if args.api else stack.up()["url"]
    if started_here:
        print(f"started the Airflow stack for this backfill ({time.monotonic() - began:.0f} s)")
    made, code, api = Made(), 1, None
    try:
        try:
            api = Api(url, args.api_wait)
            if args.cancel:
                code = cancel_all(api, sources)
            else:
                code = run_backfills(api, sources, args, made)
        except (ApiError, Blocked, TimedOut) as error:
            print(f"wirelake: {error}", file=sys.stderr, flush=True)
            if isinstance(error, ApiError) and error.status is None and started_here:
                # the stack this command started lost its API server: start that again,
                # only to put right what this command made before the stack stops
                print("restarting the stack's dead components to cancel this command's backfills")
                api = Api(stack.up()["url"], args.api_wait)
        if api and not settle(api, made, stopping=started_here):
            code = 1
    finally:
        if started_here:
            stack.down()
            print("stopped the Airflow stack")
    print(f"backfill ended in {time.monotonic() - began:.0f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())

"""The project's Airflow stack: `./wirelake up`, `./wirelake down`, `./wirelake status`.

Each component (scheduler, DAG processor, triggerer, API server) runs as its own process in
its own session, so stopping one kills its whole process group, LocalExecutor workers and
spark-submit children included (SIGTERM to `airflow standalone` left its workers running).
What runs is recorded in $AIRFLOW_HOME/stack.json; logs go to $AIRFLOW_HOME/logs/stack/.

The metadata database is the one `--db` or $WIRELAKE_DB names (a SQLAlchemy URL, e.g.
postgresql://airflow:...@db-host/airflow), else SQLite in $AIRFLOW_HOME. `up` on a stack
with a dead component restarts just that component, after killing what is left of its
process tree (a killed scheduler's LocalExecutor workers and their tasks), so a task is
never run by an orphaned worker and a new one at once.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psutil

from operations.airflow_lane import Lane

ROOT = Path(__file__).resolve().parent.parent
COMPONENTS = ("scheduler", "dag-processor", "triggerer", "api-server")
HEALTH = ("metadatabase", "scheduler", "triggerer", "dag_processor")  # keys of /monitor/health
USER = "admin"  # the simple auth manager's default user (core.simple_auth_manager_users)
STOP_GRACE_SECONDS = 30
DB_HELP = (
    "metadata database URL, e.g. postgresql://USER:PASSWORD@HOST/DB (default: $WIRELAKE_DB, "
    "else SQLite in $AIRFLOW_HOME: one writer at a time, for trying things out)"
)


def airflow_home() -> Path:
    return Path(os.environ.get("AIRFLOW_HOME") or ROOT / ".airflow")


def state_file() -> Path:
    return airflow_home() / "stack.json"


def log_dir() -> Path:
    return airflow_home() / "logs" / "stack"


def password_file() -> Path:
    """Where the simple auth manager writes the generated password of USER."""
    return airflow_home() / "simple_auth_manager_passwords.json.generated"


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def read_state() -> dict | None:
    try:
        return json.loads(state_file().read_text())
    except FileNotFoundError:
        return None


def alive(entry: dict) -> bool:
    """The recorded process still runs (same pid and start time: not a reused pid; not a
    zombie, as a component started by this process stays until it is waited for)."""
    try:
        process = psutil.Process(entry["pid"])
        return process.create_time() == entry["create_time"] and _running(process)
    except psutil.NoSuchProcess:
        return False


def health(url: str) -> dict | None:
    """The API server's health report, or None while it does not answer."""
    try:
        with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def healthy(report: dict | None) -> bool:
    return bool(report) and all(report.get(key, {}).get("status") == "healthy" for key in HEALTH)


def database_url() -> str | None:
    """The metadata database named by $WIRELAKE_DB, or None for the SQLite default."""
    url = os.environ.get("WIRELAKE_DB", "").strip()
    if url and "://" not in url:
        raise SystemExit(  # not echoed: it may hold a password
            "wirelake: WIRELAKE_DB / --db is not a database URL (scheme://user:password@host/db)"
        )
    return url or None


def redacted(url: str) -> str:
    """A database URL fit for output and state files: its password replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def stack_env(url: str) -> dict[str, str]:
    """The components' environment: tasks reach the Execution API on our port (the default
    port would give every task "connection refused"), and every component the same
    metadata database."""
    env = {
        **os.environ,
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
    }
    if database := database_url():
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = database
    return env


def prepare_database(env: dict[str, str], logs: Path) -> None:
    """`airflow db migrate`, then the Spark pool the sources config sizes (the scheduler
    needs it before any spark-submit task), both in one Airflow process."""
    if str(ROOT / "dags") not in sys.path:
        sys.path.insert(0, str(ROOT / "dags"))
    from dag_factory import DEFAULT_CONFIG, load_config, pool_command

    commands = {
        "db-migrate": ["airflow", "db", "migrate"],
        "pool": pool_command(load_config(DEFAULT_CONFIG)),
    }
    lane = Lane(env, logs / "airflow-lane.log")
    try:
        for name, command in commands.items():
            log = logs / f"{name}.log"
            code, _ = lane.run(log, *command[1:])
            if code:
                raise SystemExit(f"wirelake: {' '.join(command[:3])} failed ({code}); see {log}")
    finally:
        lane.close()


@contextlib.contextmanager
def locked():
    """One `up` or `down` at a time per Airflow home (a backfill command restarting a dead
    scheduler while a user runs `./wirelake up` must not start two)."""
    airflow_home().mkdir(parents=True, exist_ok=True)
    with (airflow_home() / "stack.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def up(host: str = "127.0.0.1", port: int | None = None, timeout: float = 300) -> dict:
    """Start the stack, or the components of it that died; return its state once it is
    healthy."""
    with locked():
        return _up(host, port, timeout)


def _up(host: str, port: int | None, timeout: float) -> dict:
    state = read_state()
    if state and all(alive(entry) for entry in state["components"].values()):
        return state
    if state:
        url, logs = state["url"], Path(state["logs"])
    else:
        url = f"http://{host}:{port or free_port(host)}"
        logs = log_dir()
        logs.mkdir(parents=True, exist_ok=True)
        database = database_url()
        state = {
            "url": url,
            "database": redacted(database) if database else f"SQLite in {airflow_home()}",
            "components": {},
            "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "logs": str(logs),
        }
    env = stack_env(url)
    if not state["components"]:
        prepare_database(env, logs)
    address = urlsplit(url)
    commands = {name: ["airflow", name] for name in COMPONENTS}
    commands["api-server"] += ["--host", address.hostname, "--port", str(address.port)]
    components = state["components"]
    for name, command in commands.items():
        if name in components and alive(components[name]):
            continue
        if name in components:
            kill_tree(components[name])
        with (logs / f"{name}.log").open("a") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        created = psutil.Process(process.pid).create_time()
        components[name] = {"pid": process.pid, "pgid": process.pid, "create_time": created}
    state_file().write_text(json.dumps(state, indent=2) + "\n")
    deadline = time.monotonic() + timeout
    while not healthy(health(url)):
        dead = [name for name, entry in components.items() if not alive(entry)]
        if dead or time.monotonic() > deadline:
            _down(STOP_GRACE_SECONDS)
            why = f"{', '.join(dead)} exited" if dead else f"not healthy after {timeout:.0f} s"
            raise SystemExit(f"wirelake: Airflow stack did not start: {why}; see {logs}/")
        time.sleep(2)
    return state


def kill_tree(entry: dict) -> None:
    """SIGKILL what is left of a dead component: its process group and every descendant
    of those processes (a task runs in a process group of its own)."""
    processes = stack_processes({"components": {"dead": entry}})
    _signal(processes, {entry["pgid"]}, signal.SIGKILL)
    psutil.wait_procs(processes, timeout=10)


def stack_processes(state: dict) -> list[psutil.Process]:
    """Every live process of the stack: the components, their process groups and any
    descendant that left its group."""
    found: dict[int, psutil.Process] = {}
    groups = {entry["pgid"] for entry in state["components"].values()}
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) in groups:
                found[process.pid] = process
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    for entry in state["components"].values():
        if alive(entry):
            root = psutil.Process(entry["pid"])
            found.setdefault(root.pid, root)
            for child in root.children(recursive=True):
                found.setdefault(child.pid, child)
    for pid in list(found):
        try:
            for child in found[pid].children(recursive=True):
                found.setdefault(child.pid, child)
        except psutil.NoSuchProcess:
            found.pop(pid)
    return [process for process in found.values() if _running(process)]


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _signal(processes: list[psutil.Process], groups: set[int], sig: int) -> None:
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, sig)
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(sig)


def down(grace: float = STOP_GRACE_SECONDS) -> list[int]:
    """Stop exactly what `up` started: SIGTERM to each process group (and any descendant
    outside it), SIGKILL after `grace` seconds; return the pids still alive (none)."""
    with locked():
        return _down(grace)


def _down(grace: float) -> list[int]:
    state = read_state()
    if state is None:
        return []
    groups = {entry["pgid"] for entry in state["components"].values()}
    processes = stack_processes(state)
    _signal(processes, groups, signal.SIGTERM)
    _, left = psutil.wait_procs(processes, timeout=grace)
    if left or stack_processes(state):
        _signal(stack_processes(state) + left, groups, signal.SIGKILL)
        psutil.wait_procs(stack_processes(state), timeout=10)
    remaining = [process.pid for process in stack_processes(state)]
    if not remaining:
        state_file().unlink(missing_ok=True)
    return remaining


def describe(state: dict | None) -> list[str]:
    """What runs: each component with its pid, and the API server's health."""
    if state is None:
        return ["Airflow stack: not running"]
    report = health(state["url"])
    lines = [
        f"Airflow stack started {state['started_at']}: {state['url']} "
        f"({'healthy' if healthy(report) else 'NOT healthy'}); logs {state['logs']}/",
        f"  metadata database: {state.get('database', 'SQLite')}",
    ]
    for name, entry in state["components"].items():
        status = "alive" if alive(entry) else "DEAD"
        lines.append(f"  {name:<14} pid {entry['pid']:<8} {status}")
    return lines


def login_lines(state: dict) -> list[str]:
    return [
        f"Airflow UI: {state['url']}",
        f"  login: user {USER}, password in {password_file()} (simple auth manager)",
        "  stop it with ./wirelake down",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./wirelake", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="start the Airflow stack in the background")
    start.add_argument("--host", default="127.0.0.1", help="API server address (loopback)")
    start.add_argument("--port", type=int, help="API server port (default: a free one)")
    start.add_argument("--db", help=DB_HELP)
    commands.add_parser("down", help="stop the stack started by up")
    commands.add_parser("status", help="what runs")
    args = parser.parse_args(argv)
    if getattr(args, "db", None):
        os.environ["WIRELAKE_DB"] = args.db
    if args.command == "up":
        started, before = time.monotonic(), read_state()
        dead = [
            name for name, entry in (before or {}).get("components", {}).items() if not alive(entry)
        ]
        state = up(args.host, args.port)
        if before and not dead:
            print("Airflow stack already running")
        else:
            restarted = f" (restarted: {', '.join(dead)})" if before else ""
            print(f"Airflow stack healthy after {time.monotonic() - started:.0f} s{restarted}")
        print("\n".join(describe(state)[1:] + login_lines(state)))
    elif args.command == "down":
        state = read_state()
        left = down()
        if left:
            print(f"wirelake: processes still alive: {left}", file=sys.stderr)
            return 1
        print("Airflow stack stopped" if state else "Airflow stack: not running")
    else:
        state = read_state()
        print("\n".join(describe(state)))
        return 0 if state and all(alive(e) for e in state["components"].values()) else 3
    return 0


if __name__ == "__main__":
    sys.exit(main())

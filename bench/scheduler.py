"""The scheduler under load: several sources backfilled at once while it runs their catchup.

Not a test. In a scratch folder under .tmp/ (kept with --keep): a sources config with
--sources, each with its format's sample days landed for the --days + --catchup-days days
up to yesterday, its start_date the first of them, catchup on. Then, on the metadata
database given by --db (a PostgreSQL URL), or on a fresh PostgreSQL server of Debian's
package (--postgres, tests/pgserver.py), or else SQLite:

1. `./wirelake up`;
2. one `./wirelake backfill SRC1,SRC2,... --from --to` of the first --days days: it
   unpauses the DAGs, so the scheduler's catchup runs the days the backfill has no run for
   (the last --catchup-days) beside it; the command polls the API every --poll-seconds;
3. once it and catchup are done: runs per kind and final state, runs not finished, the 5xx
   answers in the API server's access log, and the wall times;
4. with --check, each source backfilled alone again (`--rerun`) and every day's rows
   compared with those of the concurrent run.

    ./wirelake bench scheduler [--sources kafka,heka,hercules] [--days 7] [--catchup-days 2]
                               [--db URL | --postgres] [--check] [--keep] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy
import yaml

from operations.demo import write_secrets
from wirecodecs import samples

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import pgserver  # noqa: E402  (the test suite's PostgreSQL starter, shared)
from airflowrun import day_digest  # noqa: E402  (and its digest of a day's rows)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", default="kafka,heka,hercules")
    parser.add_argument("--days", type=int, default=7, help="days to backfill per source")
    parser.add_argument("--catchup-days", type=int, default=2, help="landed days of catchup")
    database = parser.add_mutually_exclusive_group()
    database.add_argument("--db", help="metadata database URL (default: SQLite)")
    database.add_argument("--postgres", action="store_true", help="start a PostgreSQL server")
    parser.add_argument("--poll-seconds", type=float, default=3)
    parser.add_argument("--check", action="store_true", help="compare with single backfills")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    return parser.parse_args()


class Bench:
    """The scratch lake, its Airflow home and the project's commands run on them."""

    def __init__(self, root: Path, sources: list[str], database: str | None) -> None:
        self.root, self.sources = root, sources
        self.home, self.data = root / "airflow", root / "data"
        self.database = database or f"sqlite:///{self.home / 'airflow.db'}"
        self.env = {
            **os.environ,
            "AIRFLOW_HOME": str(self.home),
            "WIRELAKE_DATA": str(self.data),
            "WIRELAKE_CONFIG": str(root / "sources.yaml"),
        }
        self.env.pop("WIRELAKE_DB", None)
        if database:
            self.env["WIRELAKE_DB"] = database

    def wirelake(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(ROOT / "wirelake"), *args], env=self.env, capture_output=True, text=True
        )
        if check and done.returncode:
            raise SystemExit(f"./wirelake {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done

    def land(self, days: list[dt.date], start: dt.date) -> None:
        config = yaml.safe_load((ROOT / "dags" / "sources.yaml").read_text())
        config["sources"] = {name: config["sources"][name] for name in self.sources}
        config["defaults"].update(start_date=str(start), catchup=True)
        self.root.joinpath("sources.yaml").write_text(yaml.safe_dump(config))
        write_secrets(self.data)
        for name in self.sources:
            for day in days:
                samples.write_sample_day(name, self.data / "landing" / name / f"dt={day}", day)

    def runs(self) -> list[tuple[str, str, str, str]]:
        """(dag_id, day, run_type, state) of every run."""
        engine = sqlalchemy.create_engine(self.database)
        try:
            with engine.connect() as connection:
                rows = connection.execute(
                    sqlalchemy.text("SELECT dag_id, logical_date, run_type, state FROM dag_run")
                )
                return [(d, str(day)[:10], kind, state) for d, day, kind, state in rows]
        finally:
            engine.dispose()

    def rows(self, source: str, day: dt.date) -> str:
        return day_digest(self.data / "warehouse", source, day)

    def server_errors(self) -> int:
        """5xx answers in the API server's access log."""
        log = (self.home / "logs" / "stack" / "api-server.log").read_text(errors="replace")
        return len(re.findall(r"\bstatus_code=5\d\d\b", log))


def measure(bench: Bench, days: list[dt.date], catchup: list[dt.date], poll: float) -> dict:
    started = time.monotonic()
    bench.wirelake("up")
    up_seconds = time.monotonic() - started
    began = time.monotonic()
    backfill = bench.wirelake(
        "backfill", ",".join(bench.sources), "--from", str(days[0]), "--to", str(days[-1]),
        "--poll-seconds", str(poll), check=False,
    )  # fmt: skip
    backfill_seconds = time.monotonic() - began
    expected = len(bench.sources) * (len(catchup) + len(days))
    while True:  # catchup may still run
        runs = bench.runs()
        if len(runs) >= expected and all(state in ("success", "failed") for *_, state in runs):
            break
        if time.monotonic() - began > 3600:
            break
        time.sleep(5)
    all_seconds = time.monotonic() - began
    errors = bench.server_errors()
    bench.wirelake("down")
    kinds: dict[str, dict[str, int]] = {}
    for _, _, kind, state in runs:
        kinds.setdefault(kind, {}).setdefault(state, 0)
        kinds[kind][state] += 1
    return {
        "database": "PostgreSQL" if bench.database.startswith("postgresql") else "SQLite",
        "sources": bench.sources,
        "backfill_days": len(days),
        "catchup_landed_days": len(catchup),
        "stack_start_seconds": round(up_seconds, 1),
        "backfill_command_seconds": round(backfill_seconds, 1),
        "backfill_exit": backfill.returncode,
        "all_runs_done_seconds": round(all_seconds, 1),
        "runs": kinds,
        "unfinished_runs": sum(state not in ("success", "failed") for *_, state in runs),
        "api_5xx": errors,
        "backfill_output_tail": backfill.stdout.splitlines()[-3 * len(days) * len(bench.sources) :]
        if backfill.returncode
        else [],
    }


def compare_with_single(bench: Bench, days: list[dt.date]) -> dict:
    """Rerun each source's days alone; count the days whose rows differ."""
    concurrent = {(s, d): bench.rows(s, d) for s in bench.sources for d in days}
    for source in bench.sources:
        bench.wirelake("backfill", source, "--from", str(days[0]), "--to", str(days[-1]), "--rerun")
    differing = [f"{s} {d}" for (s, d), digest in concurrent.items() if bench.rows(s, d) != digest]
    return {"days_compared": len(concurrent), "days_differing": differing}


def main() -> int:
    args = parse_args()
    sources = [name.strip() for name in args.sources.split(",") if name.strip()]
    yesterday = dt.date.today() - dt.timedelta(days=1)
    landed = args.days + args.catchup_days
    every = [yesterday - dt.timedelta(n) for n in range(landed - 1, -1, -1)]
    days, catchup = every[: args.days], every[args.days :]
    (ROOT / ".tmp").mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-scheduler-", dir=ROOT / ".tmp"))
    with contextlib.ExitStack() as stack:
        database = args.db
        if args.postgres:
            database = stack.enter_context(pgserver.postgres_server())
        bench = Bench(root, sources, database)
        print(f"landing {len(days) + len(catchup)} days of {', '.join(sources)} in {root}")
        bench.land(every, every[0])
        figures = measure(bench, days, catchup, args.poll_seconds)
        if args.check:
            bench.wirelake("up")
            try:
                figures["check"] = compare_with_single(bench, days)
            finally:
                bench.wirelake("down")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(figures, indent=2) if args.json else yaml.safe_dump(figures, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The main command: one sample day through the real pipeline, end to end.

Writes a day of sample dumps with the project's own encoders, runs each source's DAG for
that date with `airflow dags test` (landing check, spark-submit decode, spark-submit
validate against local Spark), then prints what was produced and where, and builds the
day's data-quality report. A few earlier sample days are decoded first without Spark
(`operations.sample_history`), so that the report's trends and the volume check have a past.
The DAGs run in lanes side by side, each lane's Airflow commands in one process
(`operations.airflow_lane`).
Run it as `./wirelake demo [--date YYYY-MM-DD]`, which sets up the environment first.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import Queue

from jobs import lake, layout, report
from operations import sample_history
from operations.airflow_lane import Lane
from wirecodecs import samples

ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="./wirelake demo", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--date",
        type=dt.date.fromisoformat,
        default=dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1),
        help="logical date of the sample day (default: yesterday, UTC)",
    )
    parser.add_argument("--seed", type=int, default=20261120, help="sample data seed")
    parser.add_argument(
        "--history",
        type=int,
        default=6,
        help="earlier sample days written for the report's trends (default 6)",
    )
    parser.add_argument(
        "--sources",
        type=source_list,
        default=samples.formats(),
        metavar="NAME,...",
        help=f"sample sources to run (default: all: {','.join(samples.formats())})",
    )
    parser.add_argument(
        "--lanes",
        type=lane_count,
        default=2,
        help="DAGs run side by side, each lane with its own Airflow metadata database "
        "(default 2: a small day's run is mostly start-up waits, which two cores overlap)",
    )
    parser.add_argument(
        "--data-root",
        type=Path,
        default=Path(os.environ.get("WIRELAKE_DATA", ROOT / "data")),
        help="where landing, warehouse and reports go (default: $WIRELAKE_DATA or ./data)",
    )
    return parser.parse_args(argv)


def source_list(text: str) -> list[str]:
    """Comma-separated sample source names, each one known."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(names) - set(samples.formats()))
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown source(s) {', '.join(unknown) or '(none given)'}; "
            f"known: {', '.join(samples.formats())}"
        )
    return names


def lane_count(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 8:
        raise argparse.ArgumentTypeError(f"must be between 1 and 8, got {text}")
    return value


def lane_env(env: dict[str, str], lane: int) -> dict[str, str]:
    """The environment of one lane of DAG runs: its own SQLite metadata database, so runs
    side by side never wait on each other's locks."""
    database = Path(env.get("AIRFLOW_HOME", ROOT / ".airflow")) / f"demo-lane-{lane}.db"
    return {**env, "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{database}"}


def write_secrets(data_root: Path) -> None:
    """The sample sources' secrets (e.g. signing keys), readable by the owner only."""
    folder = data_root / "secrets"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name, content in samples.SAMPLE_SECRETS.items():
        path = folder / name
        path.touch(mode=0o600)
        path.chmod(0o600)  # also when it existed with wider rights
        path.write_bytes(content)


def summarize(source: str, date: dt.date, data_root: Path) -> list[str]:
    """What one source's run produced, read back from the lake itself."""
    warehouse, reports = data_root / "warehouse", data_root / "reports"
    lines = [f"  {source}"]
    manifest_path = Path(layout.manifest_path(str(warehouse), source, date))
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    tables = [source] + [
        layout.table_name(source, table) for table in manifest.get("outputs", {}).get("tables", {})
    ]
    for table in tables:
        location = layout.table_dir(str(warehouse), table)
        rows = lake.day_rows(location, date)
        if rows is not None:
            lines.append(f"    rows written        {rows:>10,}  {location} (dt={date})")
    quarantine = layout.quarantine_table_dir(str(warehouse), source)
    bad = lake.day_rows(quarantine, date)
    if bad is not None:
        lines.append(f"    rows quarantined    {bad:>10,}  {quarantine} (dt={date})")
    if manifest:
        totals = manifest["totals"]
        lines.append(
            f"    bytes               {totals['bytes_total']:>10,}  decoded "
            f"{totals['bytes_decoded']:,}, quarantined {totals['bytes_quarantined']:,}, "
            f"truncated tails {totals['bytes_truncated_tail']:,}, "
            f"skipped {totals['bytes_skipped']:,} (bad-byte rate {totals['bad_byte_rate']:.2%})"
        )
        lines.append(f"    manifest                        {manifest_path}")
    for table in tables:
        result_path = Path(layout.validation_path(str(reports), table, date))
        if not result_path.exists():
            continue
        result = json.loads(result_path.read_text())
        outcomes = [item["success"] for item in result["results"]]
        lines.append(
            f"    expectations        {outcomes.count(True):>4} passed {outcomes.count(False):>3} "
            f"failed  {result_path}"
        )
        docs = Path(layout.data_docs_dir(str(reports), table, date)) / "index.html"
        if docs.exists():
            lines.append(f"    data docs                       {docs}")
    return lines


def run_dags(lanes: list[Lane], sources: list[str], date: dt.date, logs: Path) -> int | None:
    """Each lane's metadata database migrated, then each source's DAG run for `date` in
    whichever lane is free; the number of failed runs (None when a migration failed)."""
    migrate_logs = [logs / f"airflow-db-migrate-lane-{n}.log" for n in range(len(lanes))]
    with ThreadPoolExecutor(len(lanes)) as pool:
        migrated = list(
            pool.map(lambda lane, log: lane.run(log, "db", "migrate"), lanes, migrate_logs)
        )
    for log, (code, _) in zip(migrate_logs, migrated, strict=True):
        if code:
            print(f"airflow db migrate failed ({code}); see {log}")
            return None

    free: Queue = Queue()
    for lane in lanes:
        free.put(lane)

    def run_dag(source: str) -> int:
        lane = free.get()
        try:
            dag_id = f"wirelake_{source}"
            log = logs / f"{dag_id}.log"
            print(f"  airflow dags test {dag_id} {date} ... (log: {log})", flush=True)
            code, took = lane.run(log, "dags", "test", dag_id, date.isoformat())
            status = "succeeded" if code == 0 else f"FAILED (exit {code})"
            print(f"  {dag_id} {status} in {took:.0f} s", flush=True)
            return code
        finally:
            free.put(lane)

    started = time.monotonic()
    with ThreadPoolExecutor(len(lanes)) as pool:
        failures = sum(code != 0 for code in pool.map(run_dag, sources))
    print(f"  {len(sources)} DAG run(s) in {time.monotonic() - started:.0f} s, "
          f"{len(lanes)} side by side", flush=True)  # fmt: skip
    return failures


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data_root = args.data_root.resolve()
    env = {**os.environ, "WIRELAKE_DATA": str(data_root), "WIRELAKE_RETRIES": "0"}
    logs = data_root / "logs" / "demo" / args.date.isoformat()
    sources = args.sources

    print(f"wirelake demo for {args.date} into {data_root}", flush=True)
    for source in sources:
        landing = Path(layout.landing_dir(str(data_root / "landing"), source, args.date))
        shutil.rmtree(landing, ignore_errors=True)
        written = samples.write_sample_day(source, landing, args.date, seed=args.seed)
        print(f"  sample {source}: {written.describe()} -> {landing}", flush=True)
    write_secrets(data_root)
    config = Path(os.environ.get("WIRELAKE_CONFIG") or ROOT / "dags" / "sources.yaml")
    sample_history.write_history(config, data_root, sources, args.date, args.history, args.seed)
    print(f"  {args.history} earlier sample day(s) of each source decoded for the trends")

    lanes = [
        Lane(lane_env(env, n), logs / f"airflow-lane-{n}.log")
        for n in range(min(args.lanes, len(sources)))
    ]
    try:
        failures = run_dags(lanes, sources, args.date, logs)
    finally:
        for lane in lanes:
            lane.close()
    if failures is None:
        return 1

    print("\nProduced:")
    for source in sources:
        print("\n".join(summarize(source, args.date, data_root)))
    print("\nData-quality report:")
    report.main(["--date", args.date.isoformat(), "--data-root", str(data_root)])
    if failures:
        print(f"\n{failures} DAG run(s) failed; the logs above say why.")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

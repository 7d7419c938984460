"""Whole-job throughput: a landed day through the decode and validate jobs, beside the floor.

Not a test. Lands a day of --size-mb MB of one format in a scratch folder under .tmp/ (kept
with --keep), in the layout the decode job reads (Kafka: `<topic>-<partition>/<offset>.log`),
written by the format's own bench/<fmt>_decode.py generator: files of about --file-mb MB
(fewer for small days, one at least per shape), shapes taking turns (Kafka: v2 segments of
~100-byte values, uncompressed and lz4). Then measures, --repeat rounds in turn, best kept:

* spark start-up: spark-submit of an empty PySpark app (session up, then stopped), the
  part of every Spark job's wall time that does not depend on the data;
* floor: one Python process decoding every file with wirecodecs and writing the row
  batches to Parquet (pyarrow ParquetWriter, snappy): what the work costs without Spark;
* decode job: jobs/decode.py through spark-submit, as the DAG submits it (options, driver
  memory and conf from dags/sources.yaml) with both error gates open;
* validate job: jobs/validate.py with the format's suite over the partition just written,
  with the Spark jobs it ran and those of them that scanned the partition (its event log).

With --store s3 (or both) the two jobs run again with the landing, warehouse and reports on
an S3-compatible server on loopback (moto's, as the tests start it; the day uploaded to it
once), as "decode job s3" and "validate job s3"; the decode jobs also give the seconds of
their commit (the manifest's `commit_seconds`).

Every run is a command whose whole process tree is measured (bench/proctree.py): wall
seconds, CPU seconds (user + sys of every process), peak summed RSS and the peaks of the
JVM, the pyspark workers and the Python driver; then rows/s and MB/s (landed bytes) of
its wall time, and the ratios decode / floor, (decode - start-up) / floor and validate /
decode, of wall and of CPU seconds. A run that fails (an OutOfMemoryError, a non-zero
exit, --timeout) is reported with its exit code and the last lines of its output, and the
benchmark goes on (a validate run only follows a decode run of the same round that passed).

    ./wirelake bench pipeline [--size-mb 256] [--file-mb 128] [--format kafka] [--repeat 1]
                               [--store local|s3|both] [--keep] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import importlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType

import harness
import proctree
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from pyarrow import fs as pafs

from jobs import layout, storage
from jobs.decode_settings import with_data_root
from jobs.spark_conf import SmallDayConf, job_conf, store_conf, store_env
from wirecodecs.accounting import FileAccounting
from wirecodecs.options import resolve
from wirecodecs.registry import TableRows, WireFormat, get

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "store"))
from s3server import moto_server  # noqa: E402  (the loopback S3 server the tests start)

SOURCES = ROOT / "dags" / "sources.yaml"
DAY = dt.date(2026, 9, 21)  # the bench generators' clocks start on that day, 14:13 UTC
MASTER = "local[2]"
EMPTY_APP = "from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().stop()\n"

Write = Callable[[ModuleType, Path, float, str, int], int]  # (module, path, MB, shape, seed)


@dataclass(frozen=True)
class Landing:
    """How one format's day lands: the bench script whose generator writes it, the shapes
    its files take in turn, file i's path in the landing folder, and the call that writes
    it (returning its record count)."""

    module: str
    shapes: tuple[str, ...]
    name: Callable[[int], str]
    write: Write
    secrets: Callable[[ModuleType], dict[str, str]] = lambda module: {}  # option -> content


LANDINGS = {
    "kafka": Landing(
        "kafka_decode",
        ("none", "lz4"),
        lambda i: f"bench-{i}/{0:020d}.log",  # one segment per partition of topic `bench`
        lambda m, path, mb, shape, seed: m.write_segment(path, mb, 100, seed, codec=shape),
    ),
    "heka": Landing(
        "heka_decode",
        ("plain", "signed"),
        lambda i: f"host-{i:02d}/heka-{i:04d}.heka",
        lambda m, path, mb, shape, seed: m.write_stream(path, mb, shape, seed),
        lambda m: {
            "hmac_keys_file": json.dumps(
                {f"{m.SIGNER.name}_{m.SIGNER.key_version}": m.SIGNER.key.decode()}
            )
        },
    ),
    "hercules": Landing(
        "hercules_decode",
        ("batch",),
        lambda i: f"gate-{i % 2 + 1}/batch-{i:04d}.bin",
        lambda m, path, mb, shape, seed: m.write_batch(path, mb, seed),
    ),
    "inlong": Landing(
        "inlong_decode",
        ("v4", "v1"),
        lambda i: f"dataproxy-{i}/inlong-{DAY:%Y%m%d}.bin",
        lambda m, path, mb, shape, seed: m.write_file(path, mb, m.SHAPES[shape], seed),
    ),
    "cernan": Landing(
        "cernan_decode",
        ("null", "deflate"),
        lambda i: f"proxy-{i}/spool-{DAY}.cernan",
        # a packet every 100 ms: a 128 MB dump spans about 3 hours, inside the day
        lambda m, path, mb, shape, seed: m.write_dump(path, mb, shape, seed, packet_ms=100),
    ),
}


@dataclass(frozen=True)
class Day:
    """One landed day and where the jobs put what they make of it."""

    format: str  # also the source's name in sources.yaml and its suite's name
    scratch: Path
    files: list[dict]  # {"path", "shape", "mb", "records"} per landed file
    options: dict[str, object]  # the source's decode options, {data_root} resolved
    params: dict[str, object]  # its suite's parameters
    spark: dict  # sources.yaml defaults.spark: driver_memory, conf
    lake: str | None = None  # where the jobs read and write: None, the scratch folder; s3://...

    @property
    def landing(self) -> Path:
        return Path(layout.landing_dir(str(self.scratch / "landing"), self.format, DAY))

    @property
    def root(self) -> str:
        return self.lake or str(self.scratch)

    @property
    def job_landing(self) -> str:
        return layout.landing_dir(layout.join(self.root, "landing"), self.format, DAY)

    @property
    def warehouse(self) -> str:
        return layout.join(self.root, "warehouse")

    @property
    def reports(self) -> str:
        return layout.join(self.root, "reports")

    @property
    def suffix(self) -> str:
        return "" if self.lake is None else " s3"

    @property
    def mb(self) -> float:
        return sum(file["mb"] for file in self.files)

    @property
    def landed_bytes(self) -> int:
        return sum(Path(file["path"]).stat().st_size for file in self.files)


def land(fmt: str, size_mb: int, file_mb: int, scratch: Path, driver_memory: str | None) -> Day:
    """Write the day's files, the source's secrets and the `_SUCCESS` marker; the jobs get
    the source's settings from dags/sources.yaml, the scratch folder as its data root."""
    config = yaml.safe_load(SOURCES.read_text())
    source = config["sources"][fmt]

    options = with_data_root(source["decode"].get("options", {}), str(scratch))
    suites = source["validate"] if isinstance(source["validate"], list) else [source["validate"]]
    params = next(entry.get("params", {}) for entry in suites if entry["suite"] == fmt)
    spark = config["defaults"]["spark"]
    spark = {**spark, "driver_memory": driver_memory or spark["driver_memory"]}
    day = Day(fmt, scratch, [], options, params, spark)
    spec = LANDINGS[fmt]
    module = importlib.import_module(spec.module)
    for option, content in spec.secrets(module).items():
        secret = Path(options[option])
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.write_text(content)
    count = max(len(spec.shapes), math.ceil(size_mb / file_mb))
    for i in range(count):
        shape = spec.shapes[i % len(spec.shapes)]
        path = day.landing / spec.name(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        records = spec.write(module, path, size_mb / count, shape, 7 + i)
        mb = path.stat().st_size / 1e6
        day.files.append({"path": str(path), "shape": shape, "mb": mb, "records": records})
        progress(f"landed {path.relative_to(scratch)} ({shape}, {mb:.1f} MB, {records:,} "
                 f"records) in {time.perf_counter() - started:.1f} s")  # fmt: skip
    (day.landing / "_SUCCESS").write_bytes(b"")
    return day


# --- the commands measured ------------------------------------------------------------


def spark_submit(day: Day, job: str, app: str, *args: str) -> list[str]:
    """spark-submit of `app` as the DAG submits job `job`: master, driver memory and conf
    (jobs/spark_conf.py), a small day's included, and what the store adds to its
    environment (`env` first when it adds something)."""
    conf = {**job_conf(day.spark, job), **store_conf(job, day.warehouse)}
    if small := SmallDayConf.of(day.spark, job):
        conf.update(small.for_day(day.landed_bytes))
    conf = [f"{key}={value}" for key, value in sorted(conf.items())]
    env = [f"{key}={value}" for key, value in store_env(job, day.warehouse).items()]
    return [
        *(["env", *env] if env else []),
        "spark-submit", "--master", MASTER, "--driver-memory", str(day.spark["driver_memory"]),
        *(part for pair in conf for part in ("--conf", pair)), app, *args,
    ]  # fmt: skip


def pairs(flag: str, mapping: dict[str, object]) -> list[str]:
    return [part for key, value in sorted(mapping.items()) for part in (flag, f"{key}={value}")]


def decode_job(day: Day) -> list[str]:
    """The decode job's command (dags/dag_factory.py's arguments), both gates open: the
    benchmark measures the work, not the verdict."""
    return spark_submit(
        day,
        "decode",
        "jobs/decode.py",
        *("--source", day.format, "--envelope", day.format, "--payload", "raw"),
        *("--date", DAY.isoformat(), "--landing", day.job_landing),
        *("--warehouse", day.warehouse, "--reports", day.reports),
        *("--max-error-rate", "1", "--max-bad-byte-rate", "1"),
        *("--options", json.dumps(day.options)),
    )


def validate_job(day: Day) -> list[str]:
    """The validate job's command, with a Spark event log of its own (see scan_jobs)."""
    events = day.scratch / "events"
    shutil.rmtree(events, ignore_errors=True)
    events.mkdir()
    command = spark_submit(
        day,
        "validate",
        "jobs/validate.py",
        *("--source", day.format, "--suite", day.format, "--date", DAY.isoformat()),
        *("--warehouse", day.warehouse, "--reports", day.reports),
        *pairs("--param", day.params),
    )
    logging = [
        *("--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={events}"),
        *("--conf", "spark.eventLog.rolling.enabled=false"),  # one file, of JSON lines
        *("--conf", "spark.eventLog.compress=false"),
    ]
    return [command[0], *logging, *command[1:]]


def scan_jobs(day: Day) -> dict:
    """The Spark jobs of the last validate run that read the partition, from its event
    log: a job counts when a stage it ran (not one it skipped, its output reused) scans
    Parquet files. (The ordered id check's read of the files is the driver's, no job.)"""
    (log,) = (day.scratch / "events").iterdir()
    active: dict[int, set[int]] = {}  # running job -> its stages
    scanning: set[int] = set()  # stages that read files
    jobs, scanned = set(), set()
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["Event"] == "SparkListenerJobStart":
            jobs.add(event["Job ID"])
            active[event["Job ID"]] = set(event["Stage IDs"])
            for stage in event["Stage Infos"]:
                scopes = " ".join(
                    str(rdd.get("Scope", "")) + rdd["Name"] for rdd in stage["RDD Info"]
                )
                if "Scan parquet" in scopes or "FileScanRDD" in scopes:
                    scanning.add(stage["Stage ID"])
        elif event["Event"] == "SparkListenerJobEnd":
            active.pop(event["Job ID"], None)
        elif event["Event"] == "SparkListenerStageSubmitted":
            stage = event["Stage Info"]["Stage ID"]
            if stage in scanning:
                scanned |= {job for job, stages in active.items() if stage in stages}
    return {"spark_jobs": len(jobs), "scan_jobs": len(scanned)}


def startup_app(day: Day) -> list[str]:
    app = day.scratch / "empty_app.py"
    app.write_text(EMPTY_APP)
    return spark_submit(day, "decode", str(app))  # the start-up the decode job pays


def floor(day: Day) -> list[str]:
    out = day.scratch / "floor"
    return [sys.executable, __file__, "--worker", day.format, str(day.landing), str(out),
            json.dumps(day.options)]  # fmt: skip


def floor_rows(day: Day, run: proctree.TreeRun) -> int:
    return json.loads(run.stdout.read_text())["rows"]


def manifest(day: Day) -> dict:
    return storage.read_json(layout.manifest_path(day.warehouse, day.format, DAY))


def manifest_rows(day: Day, run: proctree.TreeRun) -> int:
    return manifest(day)["totals"]["rows"]


def commit_seconds(day: Day) -> dict:
    return {"commit_seconds": manifest(day)["run"]["commit_seconds"]}


@dataclass(frozen=True)
class Step:
    name: str
    command: Callable[[Day], list[str]]
    rows: Callable[[Day, proctree.TreeRun], int] | None = None  # after a run that succeeded
    after: str | None = None  # runs only when that step succeeded in the same round
    figures: Callable[[Day], dict] | None = None  # more figures of a run that succeeded


STEPS = [
    Step("spark start-up", startup_app),
    Step("floor", floor, floor_rows),
]
JOB_STEPS = [  # for each store
    Step("decode job", decode_job, manifest_rows, figures=commit_seconds),
    Step("validate job", validate_job, manifest_rows, after="decode job", figures=scan_jobs),
]


def plan(days: list[Day]) -> list[tuple[Step, Day]]:
    """The steps in the order each round runs them: start-up and floor once (on the first
    day: local disk), then the jobs on each store, named by it."""
    steps = [(step, days[0]) for step in STEPS]
    for day in days:
        for step in JOB_STEPS:
            after = step.after and step.after + day.suffix
            steps.append((dataclasses.replace(step, name=step.name + day.suffix, after=after), day))
    return steps


# --- the floor, in its own process ----------------------------------------------------


def data_files(landing: Path, fmt: WireFormat) -> list[Path]:
    """The files the decode job decodes: markers, hidden files and companions aside."""
    found = []
    for path in sorted(landing.rglob("*")):
        relative = path.relative_to(landing)
        hidden = any(part.startswith((".", "_")) for part in relative.parts)
        if path.is_file() and not hidden and fmt.data_file(relative.as_posix()):
            found.append(path)
    return found


def floor_worker(name: str, landing: str, out: str, options: str) -> dict:
    """Decode every file of the day and write each table's batches to one Parquet file."""
    fmt = get(name)
    resolved = resolve(fmt, json.loads(options))
    schemas = {fmt.name: fmt.row_schema(resolved), **fmt.tables}
    Path(out).mkdir(parents=True, exist_ok=True)
    writers: dict[str, pq.ParquetWriter] = {}
    rows = quarantined = 0
    try:
        for path in data_files(Path(landing), fmt):
            accounting = FileAccounting(source=str(path), format=fmt.name)
            with path.open("rb") as stream:
                for item in fmt.decode(stream, str(path), accounting, resolved):
                    if isinstance(item, TableRows):
                        table, batch = item.table, item.batch
                    elif isinstance(item, pa.RecordBatch):
                        table, batch = fmt.name, item
                        rows += item.num_rows
                    else:
                        quarantined += 1
                        continue
                    if table not in writers:
                        target, schema = f"{out}/{table}.parquet", schemas[table]
                        writers[table] = pq.ParquetWriter(target, schema, compression="snappy")
                    writers[table].write_batch(batch)
            if not accounting.balanced:
                raise RuntimeError(f"unbalanced accounting: {accounting}")
    finally:
        for writer in writers.values():
            writer.close()
    return {"rows": rows, "quarantined": quarantined}


# --- measuring ------------------------------------------------------------------------


def progress(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def status(run: proctree.TreeRun) -> str:
    """ok, or why the run failed, in a word or two."""
    if run.timed_out:
        return "timeout"
    if run.exit_code == 0:
        return "ok"
    if run.exit_code < 0:
        return f"signal {-run.exit_code}"
    if any(
        "OutOfMemoryError" in log.read_text(errors="replace") for log in (run.stdout, run.stderr)
    ):
        return f"OOM, exit {run.exit_code}"
    return f"exit {run.exit_code}"


def measure(step: Step, day: Day, round_: int, timeout: float) -> dict:
    """One run of `step`: its figures as a result row."""
    log = day.scratch / "logs" / f"{step.name.replace(' ', '-')}-{round_}"
    log.parent.mkdir(parents=True, exist_ok=True)
    run = proctree.run(step.command(day), log, timeout=timeout, cwd=ROOT)
    result = {
        "step": step.name,
        "round": round_,
        "status": status(run),
        **{key: value for key, value in asdict(run).items() if key not in ("stdout", "stderr")},
        "rows": None,
        "mb": None,
    }
    if not run.ok:
        result["stdout_tail"] = proctree.tail(run.stdout, 5)
        result["stderr_tail"] = proctree.tail(run.stderr)
    elif step.rows:
        result["rows"] = step.rows(day, run)
        result["mb"] = day.mb
        result["rows_per_s"] = result["rows"] / run.wall_seconds
        result["mb_per_s"] = day.mb / run.wall_seconds
        result |= step.figures(day) if step.figures else {}
    progress(f"round {round_}: {step.name}: {result['status']}, {run.wall_seconds:.1f} s wall")
    return result


def bench(days: list[Day], repeat: int, timeout: float) -> list[dict]:
    """Every step, `repeat` rounds in turn (so that a change of load hits every step)."""
    runs = []
    for round_ in range(1, repeat + 1):
        done: dict[str, dict] = {}
        for step, day in plan(days):
            if step.after and done[step.after]["status"] != "ok":
                done[step.name] = {"step": step.name, "round": round_, "status": "skipped",
                                   "reason": f"{step.after} failed"}  # fmt: skip
            else:
                done[step.name] = measure(step, day, round_, timeout)
        runs += done.values()
    return runs


def best(runs: list[dict]) -> dict[str, dict]:
    """Per step, its fastest successful run, else its last run."""
    chosen: dict[str, dict] = {}
    for run in runs:
        held = chosen.get(run["step"])
        better = run["status"] == "ok" and (
            held is None or held["status"] != "ok" or run["wall_seconds"] < held["wall_seconds"]
        )
        if held is None or better or held["status"] != "ok":
            chosen[run["step"]] = run
    return chosen


def with_startup(results: dict[str, dict]) -> dict[str, dict]:
    """The Spark jobs' results with the start-up every Spark job pays (the empty app's
    wall time in the same run)."""
    startup = results["spark start-up"]
    seconds = startup["wall_seconds"] if startup["status"] == "ok" else None
    return {
        step: {**run, "startup_seconds": seconds} if step.endswith(" job") else run
        for step, run in results.items()
    }


RATIOS = {  # ratio key (after "wall_" or "cpu_") -> how the note names it
    "decode_over_floor": "decode / floor",
    "decode_minus_startup_over_floor": "(decode - start-up) / floor",
    "validate_over_decode": "validate / decode",
}


def ratios(results: dict[str, dict], day: Day) -> dict[str, float | None]:
    """The RATIOS of the wall times and of the CPU times (steadier on a loaded machine) of
    the jobs on `day`'s store; None where a step failed."""
    out = {}
    names = [step.name for step in STEPS] + [step.name + day.suffix for step in JOB_STEPS]
    for measure in ("wall", "cpu"):
        startup, floor_s, decode_s, validate_s = (
            run[f"{measure}_seconds"] if run["status"] == "ok" else None
            for run in (results[name] for name in names)
        )
        decode_work = None if decode_s is None or startup is None else decode_s - startup
        figures = ((decode_s, floor_s), (decode_work, floor_s), (validate_s, decode_s))
        for key, (over, under) in zip(RATIOS, figures, strict=True):
            out[f"{measure}_{key}"] = over / under if over is not None and under else None
    return out


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def machine() -> str:
    return f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {MASTER}"


def figure(*keys: str) -> Callable[[dict], object]:
    """A column's cell: the result's value at `keys` (nested), None where it has none (a
    skipped or failed run)."""

    def cell(result: dict) -> object:
        for key in keys:
            result = result.get(key) if isinstance(result, dict) else None
        return result

    return cell


COLUMNS: list[harness.Column] = [
    ("step", "<16", "step"),
    ("status", "<14", "status"),
    ("rows", ">11,", figure("rows")),
    ("MB", ">8.1f", figure("mb")),
    ("wall s", ">8.1f", figure("wall_seconds")),
    ("start-up s", ">11.1f", figure("startup_seconds")),
    ("CPU s", ">8.1f", figure("cpu_seconds")),
    ("rows/s", ">11,.0f", figure("rows_per_s")),
    ("MB/s", ">7.1f", figure("mb_per_s")),
    ("commit s", ">9.3f", figure("commit_seconds")),
    ("peak MB", ">9.0f", figure("peak_rss_mb")),
    ("JVM MB", ">8.0f", figure("kinds", "jvm")),
    ("workers MB", ">11.0f", figure("kinds", "python-workers")),
    ("python MB", ">10.0f", figure("kinds", "python")),
    ("Spark jobs", ">11", figure("spark_jobs")),
    ("of them scans", ">14", figure("scan_jobs")),
]


def print_report(report: dict) -> None:
    results = list(report["results"].values())
    shapes = sorted({file["shape"] for file in report["files"]})

    def ratio_line(store: str, measure: str) -> str:
        shown = (report["ratios"][store][f"{measure}_{key}"] for key in RATIOS)
        pairs = (
            f"{name} = {'n/a' if value is None else f'{value:.2f}'}"
            for name, value in zip(RATIOS.values(), shown, strict=True)
        )
        return f"{store}, {measure} seconds: " + "; ".join(pairs)

    note = [
        f"{report['format']} day {report['date']}: {len(report['files'])} file(s), "
        f"{sum(f['mb'] for f in report['files']):.1f} MB ({', '.join(shapes)}); best of "
        f"{report['repeat']} round(s).",
        *(ratio_line(store, measure) for store in report["ratios"] for measure in ("wall", "cpu")),
        f"{report['machine']}; driver memory {report['driver_memory']}; load average "
        f"{report['loadavg_start']} at start, {report['loadavg_end']} at end. CPU s = user + "
        "sys of the whole process tree; peak MB = peak summed RSS of the tree (sampled every "
        f"{proctree.SAMPLE_SECONDS} s), JVM / workers (pyspark daemon and workers) / python "
        "(the driver's Python, or the floor process) = peaks of each; MB/s = landed bytes / "
        "wall.",
    ]
    harness.print_table(results, COLUMNS, "\n".join(note))
    for result in results:
        if "stderr_tail" in result:
            print(f"\n{result['step']} FAILED ({result['status']}); its last lines:")
            for stream in ("stdout", "stderr"):
                print("\n".join(f"  {stream}: {line}" for line in result[f"{stream}_tail"]))
        elif result["status"] == "skipped":
            print(f"\n{result['step']} skipped: {result['reason']}")


@contextlib.contextmanager
def s3_lake(day: Day, scratch: Path) -> Iterator[Day]:
    """`day` uploaded to moto's server on loopback, whose AWS_* variables the jobs inherit;
    the same day with its lake there."""
    with moto_server(str(scratch / "moto.log")) as server:
        os.environ.update(server.environment())
        proctree.SERVICES.add(server.pid)
        client = server.filesystem()
        client.create_dir("bench")
        s3 = dataclasses.replace(day, lake="s3://bench")
        started = time.perf_counter()
        pafs.copy_files(
            str(day.scratch / "landing"),
            "bench/landing",
            source_filesystem=pafs.LocalFileSystem(),
            destination_filesystem=client,
        )
        progress(f"uploaded the day to {server.endpoint} in {time.perf_counter() - started:.1f} s")
        yield s3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=256, help="size of the landed day (MB)")
    parser.add_argument("--file-mb", type=int, default=128, help="size of each landed file (MB)")
    parser.add_argument("--format", default="kafka", choices=sorted(LANDINGS))
    parser.add_argument("--repeat", type=int, default=1, help="rounds; best run of each kept")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument(
        "--driver-memory", help="spark-submit --driver-memory (default: as sources.yaml gives)"
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds allowed per run")
    parser.add_argument(
        "--store",
        choices=("local", "s3", "both"),
        default="local",
        help="where the jobs read and write: local disk, an S3 server on loopback, or both",
    )
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(floor_worker(*args.worker)))
        return 0
    proctree.become_subreaper()
    (ROOT / ".tmp").mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"pipeline-{args.format}-", dir=ROOT / ".tmp"))
    try:
        started = loadavg()
        day = land(args.format, args.size_mb, args.file_mb, scratch, args.driver_memory)
        with s3_lake(day, scratch) if args.store != "local" else contextlib.nullcontext() as s3:
            days = {"local": [day], "s3": [s3], "both": [day, s3]}[args.store]
            runs = bench(days, args.repeat, args.timeout)
        results = with_startup(best(runs))
        report = {
            "format": args.format,
            "date": DAY.isoformat(),
            "size_mb": args.size_mb,
            "repeat": args.repeat,
            "files": day.files,
            "machine": machine(),
            "driver_memory": day.spark["driver_memory"],
            "loadavg_start": started,
            "loadavg_end": loadavg(),
            "results": results,
            "ratios": {day.suffix.strip() or "local": ratios(results, day) for day in days},
            "runs": runs,
            "scratch": str(scratch) if args.keep else None,
        }
    finally:
        if args.keep:
            progress(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Running the jobs against the S3 lake as the DAGs run them: spark-submit with the job's
arguments from dags/sources.yaml and only the server's AWS_* variables in its environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from pyarrow import fs as pafs

from jobs.decode_settings import with_data_root
from jobs.spark_conf import store_conf, store_env

ROOT = Path(__file__).resolve().parents[2]
SOURCES_YAML = ROOT / "dags" / "sources.yaml"
JOB_TIMEOUT = 600


def config(source: str) -> dict:
    return yaml.safe_load(SOURCES_YAML.read_text())["sources"][source]


def decode_args(
    source: str, day: str, landing: str, warehouse: str, reports: str, data_root: Path
) -> list[str]:
    """The decode job's arguments for `source` as the DAG gives them (dags/sources.yaml)."""
    settings = config(source)
    decode = settings["decode"]
    options = with_data_root(decode.get("options", {}), str(data_root))
    return [
        *("--source", source, "--envelope", settings["envelope"]),
        *("--payload", settings.get("payload", "raw"), "--date", day),
        *("--landing", landing, "--warehouse", warehouse),
        *("--reports", reports),
        *("--error-policy", decode["error_policy"]),
        *("--max-error-rate", str(decode["max_error_rate"])),
        *("--max-bad-byte-rate", str(decode["max_bad_byte_rate"])),
        *("--options", json.dumps(options)),
    ]  # fmt: skip


def validate_args(source: str, day: str, warehouse: str, reports: str) -> list[list[str]]:
    """One argument list per suite of `source` (dags/sources.yaml)."""
    validations = config(source)["validate"]
    validations = validations if isinstance(validations, list) else [validations]
    return [
        [
            *("--source", source, "--suite", check["suite"], "--date", day),
            *("--warehouse", warehouse, "--reports", reports),
            *(f"--param={key}={value}" for key, value in check.get("params", {}).items()),
        ]
        for check in validations
    ]


def spark_submit(
    job: str, args: list[str], env: dict[str, str], app: Path | None = None
) -> subprocess.CompletedProcess:
    """`job` as a DAG submits it on an S3 lake (the conf and environment its warehouse
    needs), on one core; `app` instead of the job's script runs in its place."""
    spark_submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable))
    warehouse = args[args.index("--warehouse") + 1]
    conf = {"spark.ui.enabled": "false", **store_conf(job, warehouse)}
    command = [
        spark_submit or "spark-submit",
        "--master", "local[1]",
        *(part for key, value in conf.items() for part in ("--conf", f"{key}={value}")),
        str(app or ROOT / "jobs" / f"{job}.py"),
        *args,
    ]  # fmt: skip
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**env, **store_env(job, warehouse)},
        cwd=ROOT,
        timeout=JOB_TIMEOUT,
    )


def job_log(done: subprocess.CompletedProcess) -> str:
    """What a failed job said (its log on stdout, Spark's on stderr), without INFO chatter."""
    lines = (done.stderr + done.stdout).splitlines()
    return "\n".join(line for line in lines if " INFO " not in line)[-4000:]


def job_env(server, **kwargs) -> dict[str, str]:
    """This process's environment, its AWS variables the server's only."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    return {**env, **server.environment(**kwargs)}


def upload(local: Path, filesystem: pafs.FileSystem, path: str) -> None:
    disk = pafs.LocalFileSystem()
    pafs.copy_files(str(local), path, source_filesystem=disk, destination_filesystem=filesystem)

"""The lake on S3: one sample day of every format landed on an S3-compatible server on
loopback, decoded and validated there by spark-submit (as the DAGs run the jobs), with the
server's endpoint and credentials only in the standard AWS environment. The rows, companion
tables and quarantine written to S3 are the ones the same day gives on local disk, and the
secret key appears in no output, log line, manifest, report or command line."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyarrow import fs as pafs
from s3jobs import (
    JOB_TIMEOUT,
    ROOT,
    config,
    decode_args,
    job_env,
    job_log,
    spark_submit,
    upload,
    validate_args,
)
from s3server import moto_server

import wirecodecs
from jobs import decode, layout
from jobs.lake import day_rows, read_day
from wirecodecs.samples import SAMPLE_SECRETS, write_sample_day

pytestmark = [pytest.mark.spark, pytest.mark.service]  # spark-submit runs, an S3 server

DAY = "2026-11-26"
DATE = dt.date.fromisoformat(DAY)
SOURCES = ("kafka", "heka", "hercules", "inlong", "cernan")  # one source of each format
BUCKET = "lake"
LAKE = f"s3://{BUCKET}"


def read_table(table: str, landing: str) -> pa.Table | None:
    """A table's day in file order, `source_file` made relative to the landing folder (the
    one column that names where the day was), None when there is none."""
    table = read_day(table, DATE)
    if table is None:
        return None
    keys = [key for key in ("source_file", "byte_offset", "offset") if key in table.column_names]
    table = table.sort_by([(key, "ascending") for key in keys])
    at = table.schema.get_field_index("source_file")
    relative = pc.replace_substring(table["source_file"], landing + "/", "")
    return table.set_column(at, "source_file", relative)


def companion_tables(source: str) -> list[str]:
    """The tables beside the source's own one (wirecodecs' `WireFormat.tables`)."""
    settings = config(source)
    fmt = wirecodecs.source_format(settings["envelope"], settings.get("payload", "raw"))
    return [layout.table_name(source, table) for table in fmt.tables]


def outputs(warehouse: str, source: str, landing: str) -> dict[str, pa.Table | None]:
    """Every table's day the decode of `source` wrote, by table folder."""
    tables = [source, f"{layout.QUARANTINE_DIR}/{source}", *companion_tables(source)]
    return {table: read_table(f"{warehouse}/{table}", landing) for table in tables}


def decode_here(spark, args: list[str]) -> int:
    """The decode job in this process, on the tests' session, its summary swallowed."""
    with contextlib.redirect_stdout(io.StringIO()):
        return decode.main(args, spark=spark)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with moto_server(str(log)) as started:
        started.filesystem().create_dir(BUCKET)
        yield started


class Lake:
    """Each source's day, decoded and validated on S3 (spark-submit) and decoded on local
    disk (in this process) when a test first asks for it, with what each run printed."""

    def __init__(self, server, spark, root: Path) -> None:
        self.server, self.spark, self.root = server, spark, root
        self.runs: dict[str, dict] = {}
        self.daily: subprocess.CompletedProcess | None = None
        secrets = root / "secrets"  # option files (Heka's signing keys) stay beside the lake
        secrets.mkdir()
        for name, content in SAMPLE_SECRETS.items():
            (secrets / name).write_bytes(content)

    def report(self) -> subprocess.CompletedProcess:
        """The daily report over the S3 lake, after every source's day ran (no Spark)."""
        if self.daily is None:
            for source in SOURCES:
                self.run(source)
            command = [sys.executable, "-m", "jobs.report", "--date", DAY, "--data-root", LAKE]
            self.daily = subprocess.run(
                command, capture_output=True, text=True, env=job_env(self.server), cwd=ROOT,
                timeout=JOB_TIMEOUT,
            )  # fmt: skip
        return self.daily

    def run(self, source: str) -> dict:
        if source not in self.runs:
            self.runs[source] = self._run(source)
        return self.runs[source]

    def _run(self, source: str) -> dict:
        local_landing = self.root / "landing" / source / f"dt={DAY}"
        write_sample_day(source, local_landing, DAY)
        s3_landing = f"{LAKE}/landing/{source}/dt={DAY}"
        upload(local_landing, self.server.filesystem(), s3_landing.removeprefix("s3://"))
        env = job_env(self.server)
        lake = [f"{LAKE}/warehouse", f"{LAKE}/reports"]
        decoded = spark_submit(
            "decode", decode_args(source, DAY, s3_landing, *lake, self.root), env
        )
        validated = [
            spark_submit("validate", args, env) for args in validate_args(source, DAY, *lake)
        ]
        local = [str(local_landing), str(self.root / "warehouse"), str(self.root / "reports")]
        return {
            "decode": decoded,
            "validate": validated,
            "local_code": decode_here(self.spark, decode_args(source, DAY, *local, self.root)),
            "landings": (s3_landing, str(local_landing)),
        }


@pytest.fixture
def aws_environment(server, monkeypatch):
    """This process reads the lake on the server as the jobs do: through the AWS_* variables."""
    for key, value in server.environment().items():
        monkeypatch.setenv(key, value)


@pytest.fixture(scope="module")
def lake(server, spark, tmp_path_factory):
    return Lake(server, spark, tmp_path_factory.mktemp("s3-lake"))


@pytest.mark.parametrize("source", SOURCES)
def test_decode_and_validate_pass_on_s3(lake, server, source):
    run = lake.run(source)
    assert run["decode"].returncode == 0, job_log(run["decode"])
    for validated in run["validate"]:
        assert validated.returncode == 0, job_log(validated)
    client = server.filesystem()
    manifest_path = layout.manifest_path(f"{BUCKET}/warehouse", source, DATE)
    with client.open_input_stream(manifest_path) as stream:
        manifest = json.loads(stream.read())
    assert manifest["landing"] == run["landings"][0]
    for table in [source, *companion_tables(source)]:
        result_path = f"{BUCKET}/reports/{table}/dt={DAY}/validation.json"
        with client.open_input_stream(result_path) as stream:
            result = json.loads(stream.read())
        assert result["critical_success"] is True
        assert result["statistics"]["evaluated_expectations"] > 0
        docs = client.get_file_info(f"{BUCKET}/reports/{table}/dt={DAY}/data_docs/index.html")
        assert docs.type == pafs.FileType.File and docs.size > 0
    metrics = client.get_file_info(
        pafs.FileSelector(f"{BUCKET}/warehouse/_metrics", recursive=True)
    )
    assert any(f"source={source}/" in info.path for info in metrics)


@pytest.mark.parametrize("source", SOURCES)
def test_rows_on_s3_are_the_rows_on_local_disk(lake, server, source, aws_environment):
    run = lake.run(source)
    assert run["decode"].returncode == 0 and run["local_code"] == 0
    s3_landing, local_landing = run["landings"]
    on_s3 = outputs(f"{LAKE}/warehouse", source, s3_landing)
    on_disk = outputs(str(lake.root / "warehouse"), source, local_landing)
    assert on_s3.keys() == on_disk.keys()
    assert on_disk[source] is not None and on_disk[source].num_rows > 0
    for table, rows in on_disk.items():
        if rows is None:
            assert on_s3[table] is None, table
        else:
            assert on_s3[table] is not None, table
            assert on_s3[table].schema == rows.schema, table
            assert on_s3[table].equals(rows), table


def test_the_daily_report_on_s3(lake, server):
    """The report reads the metrics on S3 and writes its page there: every source run here
    validated without a critical failure, the config's other sources did not land."""
    done = lake.report()
    assert done.returncode == 0, job_log(done)
    client, folder = server.filesystem(), f"{BUCKET}/reports/_daily/dt={DAY}"
    with client.open_input_stream(f"{folder}/report.json") as stream:
        report = json.loads(stream.read())
    statuses = {entry["source"]: entry["status"] for entry in report["sources"]}
    assert {statuses[source] for source in SOURCES} <= {"passed", "warnings"}
    assert {status for source, status in statuses.items() if source not in SOURCES} == {
        "no landing"
    }
    page = client.get_file_info(f"{folder}/index.html")
    assert page.type == pafs.FileType.File and page.size > 0


def test_the_secret_key_is_in_no_output(lake, server):
    """Not in any object the jobs wrote (manifests, metrics, reports, Data Docs), nor in
    what they printed, nor on their command lines."""
    runs = [lake.run(source) for source in SOURCES]
    daily = lake.report()
    secret = server.secret_key
    client = server.filesystem()
    objects = client.get_file_info(pafs.FileSelector(BUCKET, recursive=True))
    files = [info.path for info in objects if info.type == pafs.FileType.File]
    assert any(path.endswith("manifest.json") for path in files)
    for path in files:
        with client.open_input_stream(path, compression=None) as stream:
            assert secret.encode() not in stream.read(), path
    for done in [daily, *(job for run in runs for job in [run["decode"], *run["validate"]])]:
        assert secret not in done.stdout + done.stderr
        assert secret not in " ".join(done.args)
    for path in lake.root.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_endpoint_in_the_uri_query(lake, server, monkeypatch):
    """A warehouse whose endpoint is in its URI's query (and not in the environment):
    paths are joined before the query, and the day is written there."""
    endpoint = server.endpoint.removeprefix("http://")
    warehouse = f"{LAKE}/query-warehouse?endpoint_override={endpoint}&scheme=http"
    s3_landing, _ = lake.run("kafka")["landings"]
    landing = f"{s3_landing}?endpoint_override={endpoint}&scheme=http"
    reports = f"{LAKE}/query-reports?endpoint_override={endpoint}&scheme=http"
    done = spark_submit(
        "decode",
        decode_args("kafka", DAY, landing, warehouse, reports, lake.root),
        job_env(server, with_endpoint=False),
    )
    assert done.returncode == 0, job_log(done)
    client = server.filesystem()
    manifest = f"{BUCKET}/query-warehouse/_manifests/kafka/dt={DAY}/manifest.json"
    assert client.get_file_info(manifest).type == pafs.FileType.File
    for key, value in server.environment(with_endpoint=False).items():
        monkeypatch.setenv(key, value)  # the endpoint only in the table's location
    query = warehouse.partition("?")[2]
    assert day_rows(f"{LAKE}/query-warehouse/kafka?{query}", DATE)


def test_credentials_in_a_location_are_refused(server, tmp_path, capsys):
    """Before anything could print the location: a usage error that does not show them."""
    location = f"s3://{server.access_key}:{server.secret_key}@{BUCKET}/warehouse"
    args = ["--source", "kafka", "--envelope", "kafka", "--date", DAY, "--landing"]
    args += [str(tmp_path), "--warehouse", location, "--reports", str(tmp_path)]
    with pytest.raises(SystemExit) as exited:
        decode.main(args)
    assert exited.value.code == 2
    printed = capsys.readouterr()
    assert "credentials in a location are refused" in printed.err
    assert server.secret_key not in printed.out + printed.err


def test_the_inspector_reads_a_landed_file_on_s3(lake, server):
    """`python -m wirecodecs dump` prints the same rows for a file on S3 as for its copy on
    local disk (the lineage column aside)."""
    s3_landing, local_landing = lake.run("kafka")["landings"]
    local = sorted(Path(local_landing).rglob("*.log"))[0]
    remote = f"{s3_landing}/{local.relative_to(local_landing).as_posix()}"

    def dump(path: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "wirecodecs", "dump", "kafka", path]
        return subprocess.run(
            command, capture_output=True, text=True, env=job_env(server), timeout=JOB_TIMEOUT
        )

    on_s3, on_disk = dump(remote), dump(str(local))
    assert on_s3.returncode == 0, on_s3.stderr[-2000:]
    assert on_disk.stdout.count("\n") > 1
    assert on_s3.stdout.replace(remote, str(local)) == on_disk.stdout

"""The S3 store going down in the middle of a decode, on moto's server behind a relay that
drops every connection at a chosen request and stops listening (`outage.StoreOutage`):
while the executors write their parts, and at the commit itself. The job fails with a
retryable exit naming the store and the operation; the previous day stays readable and
unchanged (same table version, same rows, same manifest); once the store is back, a run
succeeds, and after vacuum nothing is left under the day but the files the table reads."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from outage import StoreOutage
from pyarrow import fs as pafs
from s3jobs import decode_args, job_env, job_log, spark_submit, upload
from s3server import moto_server

from jobs import lake, layout
from jobs.cli import EXIT_TRANSIENT
from wirecodecs.samples import write_sample_day

pytestmark = [pytest.mark.spark, pytest.mark.service]  # spark-submit runs, an S3 server

DAY = "2026-11-26"
DATE = dt.date.fromisoformat(DAY)
BUCKET = "lake"
WAREHOUSE = f"s3://{BUCKET}/warehouse"
TABLE = f"{WAREHOUSE}/kafka"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The server with the sample Kafka day landed and decoded once, through a relay that
    can take it down: (server, relay, the day's decode arguments, the work folder)."""
    root = tmp_path_factory.mktemp("store-faults")
    with moto_server(str(root / "moto.log")) as server:
        server.filesystem().create_dir(BUCKET)
        landing = root / "landing"
        write_sample_day("kafka", landing, DAY)
        upload(landing, server.filesystem(), f"{BUCKET}/landing/kafka/dt={DAY}")
        args = decode_args(
            "kafka", DAY, f"s3://{BUCKET}/landing/kafka/dt={DAY}", WAREHOUSE,
            f"s3://{BUCKET}/reports", root,
        )  # fmt: skip
        first = spark_submit("decode", args, job_env(server))
        assert first.returncode == 0, job_log(first)
        relay = StoreOutage(int(server.endpoint.rsplit(":", 1)[1]))
        try:
            yield server, relay, args
        finally:
            relay.close()


def day_state(server, monkeypatch) -> dict:
    """What a reader of the day finds, read past the relay: version, rows, manifest."""
    for key, value in server.environment().items():
        monkeypatch.setenv(key, value)
    manifest = layout.manifest_path(f"{BUCKET}/warehouse", "kafka", DATE)
    with server.filesystem().open_input_stream(manifest) as stream:
        recorded = json.loads(stream.read())
    return {
        "version": lake.open_table(TABLE).version(),
        "rows": lake.read_day(TABLE, DATE),
        "manifest": recorded,
    }


def decode_through_the_relay(server, relay, args):
    return spark_submit("decode", args, {**job_env(server), "AWS_ENDPOINT_URL": relay.endpoint})


def only_the_tables_files_remain(server, monkeypatch) -> None:
    """After vacuum without retention, every object under the day is one the table reads."""
    day_state(server, monkeypatch)  # the environment of the server itself
    lake.vacuum(TABLE, retention_hours=0)
    client = server.filesystem()
    selector = pafs.FileSelector(f"{BUCKET}/warehouse/kafka/dt={DAY}", recursive=True)
    objects = {info.path for info in client.get_file_info(selector) if info.type.name == "File"}
    assert objects == {file.removeprefix("s3://") for file in lake.day_files(TABLE, DATE)}


@pytest.mark.parametrize(
    "moment, pattern, says",
    [
        (
            "writing parts",  # "=" in a key is sent as %3D
            rb"(PUT|POST) /lake/warehouse/kafka/dt(=|%3D)2026-11-26/run-[0-9a-f]+/part-",
            rf"decode kafka dt={DAY} failed in an executor \(may pass on retry\): OSError: "
            r".*in bucket 'lake'.* during \w+ operation",
        ),
        (
            "committing",
            rb"PUT /lake/warehouse/kafka/_delta_log/",
            # the request named is the log entry's PUT, or on a loaded machine the listing
            # of the log that Delta's retries of that PUT end with
            rf"OSError: {TABLE}: committing dt={DAY} failed on the store: .*"
            r"(PUT|GET) http://127\.0\.0\.1:\d+/lake\S*_delta_log",
        ),
    ],
)
def test_the_store_lost_mid_decode_keeps_the_previous_day(
    store, monkeypatch, moment, pattern, says
):
    server, relay, args = store
    before = day_state(server, monkeypatch)
    relay.arm(pattern)
    failed = decode_through_the_relay(server, relay, args)
    assert relay.went_down.is_set(), moment
    assert failed.returncode == EXIT_TRANSIENT, job_log(failed)  # Airflow retries it
    assert re.search(says, failed.stdout), failed.stdout[-3000:]
    after = day_state(server, monkeypatch)
    assert after["version"] == before["version"]
    assert after["rows"].equals(before["rows"])
    assert after["manifest"] == before["manifest"]

    relay.restore()
    again = decode_through_the_relay(server, relay, args)
    assert again.returncode == 0, job_log(again)
    rerun = day_state(server, monkeypatch)
    assert rerun["version"] > before["version"]
    assert rerun["rows"].equals(before["rows"])  # the same landed day
    only_the_tables_files_remain(server, monkeypatch)

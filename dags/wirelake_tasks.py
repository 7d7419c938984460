"""The two task kinds of a wirelake DAG: the landing check and a spark-submit of a job.

Imported by the DAG files, so it stays free of pyspark, wirecodecs and Great Expectations.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseSensorOperator, Connection
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from jobs import layout
from jobs.spark_conf import SmallDayConf

# Exit codes of the jobs (jobs/cli.py, which the DAGs may not import: it loads pyspark) that
# no retry can change; any other failure (75 = a transient error, a killed JVM) is retried.
PERMANENT_EXIT_CODES = {
    1: "the run's checks failed (a gate, the accounting, a critical expectation)",
    2: "bad arguments or options",
}
_EXIT_CODE = re.compile(r"Error code is: (-?\d+)")


def store_environment(conn_id: str | None) -> dict[str, str]:
    """The AWS_* variables that Airflow connection `conn_id` gives the store's clients
    (login: the access key id, password: the secret key; extra `endpoint_url`,
    `region_name`); {} without one, and then the worker's own environment (or an instance
    role) serves. The jobs get them as spark-submit's environment, never on its command
    line; Airflow masks the secret in task logs."""
    if not conn_id:
        return {}
    connection = Connection.get(conn_id)
    extra = connection.extra_dejson
    variables = {
        "AWS_ACCESS_KEY_ID": connection.login,
        "AWS_SECRET_ACCESS_KEY": connection.password,
        "AWS_ENDPOINT_URL": extra.get("endpoint_url"),
        "AWS_REGION": extra.get("region_name"),
    }
    return {name: value for name, value in variables.items() if value}


@contextlib.contextmanager
def environment(variables: dict[str, str]) -> Iterator[None]:
    """`variables` set in this process while the block runs (pyarrow reads them)."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _file(location: str):
    """The pyarrow filesystem holding file `location` (a local path or a URI: `s3://` takes
    its endpoint, region and credentials from its query or the AWS_* environment, as the
    jobs' do), the file's path in it, and whether it is there. pyarrow is imported when a
    task runs, not when a DAG file is parsed."""
    from pyarrow import fs

    filesystem, path = fs.FileSystem.from_uri(
        location if "://" in location else os.path.abspath(location)
    )
    return filesystem, path, filesystem.get_file_info(path).type == fs.FileType.File


def read_text(location: str) -> str | None:
    """The text of file `location`, None when there is none."""
    filesystem, path, found = _file(location)
    if not found:
        return None
    with filesystem.open_input_stream(path) as stream:
        return stream.read().decode("utf-8")


def landing_complete(landing: str, marker: str) -> bool:
    """True once the day's landing folder holds its completion marker."""
    return _file(layout.join(landing, marker))[2]


def landing_deadline(ds: str, lateness_hours: float, timeout_hours: float) -> dt.datetime:
    """When the landing window of day `ds` closes: the day's end (next 00:00 UTC), plus the
    lateness allowed to producers, plus how long the check keeps waiting after that."""
    day_end = dt.datetime.combine(dt.date.fromisoformat(ds), dt.time(), dt.UTC) + dt.timedelta(1)
    return day_end + dt.timedelta(hours=lateness_hours + timeout_hours)


class LandingSensor(BaseSensorOperator):
    """Waits for the day's marker; a day whose landing window is over and that has no marker
    is skipped at once ("no landing at PATH (marker M)"), with its downstream tasks, so that
    catchup over days that never landed holds no run slot."""

    template_fields = ("landing",)

    def __init__(
        self,
        *,
        landing: str,
        marker: str,
        lateness_hours: float,
        timeout_hours: float,
        store_conn_id: str | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.landing = landing
        self.store_conn_id = store_conn_id
        self.marker = marker
        self.lateness_hours = lateness_hours
        self.timeout_hours = timeout_hours

    def poke(self, context: Any) -> bool:
        deadline = landing_deadline(context["ds"], self.lateness_hours, self.timeout_hours)
        with environment(store_environment(self.store_conn_id)):
            complete = landing_complete(self.landing, self.marker)
        if complete:
            self.log.info("landing complete: marker %s found in %s", self.marker, self.landing)
            return True
        if dt.datetime.now(dt.UTC) >= deadline:
            raise AirflowSkipException(
                f"no landing at {self.landing} (marker {self.marker}): "
                f"its window closed at {deadline:%Y-%m-%d %H:%M} UTC"
            )
        self.log.info(
            "waiting for marker %s in %s (no landing declared after %s UTC)",
            self.marker,
            self.landing,
            f"{deadline:%Y-%m-%d %H:%M}",
        )
        return False


def exit_code(error: BaseException) -> int | None:
    """spark-submit's exit status as SparkSubmitHook states it ("Error code is: N")."""
    found = _EXIT_CODE.search(str(error))
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class SmallDay:
    """Where a job after the decode finds its day's size: the decode manifest of `source`
    in `warehouse`; with `conf`, what a small day adds to the job's Spark conf."""

    warehouse: str
    source: str
    conf: SmallDayConf

    def landed_bytes(self, ds: str) -> int | None:
        """The day's landed bytes as its decode counted them; None before a decode."""
        manifest = read_text(
            layout.manifest_path(self.warehouse, self.source, dt.date.fromisoformat(ds))
        )
        if manifest is None:
            return None
        return int(json.loads(manifest)["totals"]["bytes_total"])


class SparkJobOperator(SparkSubmitOperator):
    """spark-submit of a wirelake job; a permanent exit code fails the task without retries.
    A job that runs after the decode may take a conf of its own for small days
    (`small_day`)."""

    def __init__(
        self, *, small_day: SmallDay | None = None, store_conn_id: str | None = None, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self.small_day = small_day
        self.store_conn_id = store_conn_id

    def execute(self, context: Any) -> None:
        store = store_environment(self.store_conn_id)
        self.env_vars = {**(self.env_vars or {}), **store}
        with environment(store):
            self.conf = {**(self.conf or {}), **self.day_conf(context["ds"])}
        try:
            super().execute(context)
        except Exception as error:
            code = exit_code(error)
            if code in PERMANENT_EXIT_CODES:
                raise AirflowFailException(
                    f"exit code {code}: {PERMANENT_EXIT_CODES[code]}; not retried. {error}"
                ) from error
            raise

    def day_conf(self, ds: str) -> dict[str, str]:
        """The conf day `ds` adds to the task's: `small_day.conf` when the day is small."""
        if self.small_day is None:
            return {}
        landed = self.small_day.landed_bytes(ds)
        added = self.small_day.conf.for_day(landed)
        if added:
            self.log.info("a small day (%d bytes landed): conf %s", landed, added)
        return added

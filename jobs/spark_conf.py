"""A job's Spark conf as sources.yaml's `spark` settings give it: `conf`, over it the job's
`job_conf`, and on a small day `small_day`'s conf over both; under all of them what a job
that reads the lake through Spark needs for where the lake is (`store_conf`, and in its
environment `store_env`).

The DAGs and the pipeline benchmark both submit jobs with it, so a benchmark measures what
a DAG runs. Imported by the DAG folder: it imports nothing heavy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

SPARK_READS = ("validate",)  # the jobs that read the lake through Spark (decode: pyarrow)


def job_conf(spark: Mapping, job: str) -> dict[str, str]:
    """`conf`, and over it `job_conf.<job>` (job: decode, validate)."""
    return {**spark.get("conf", {}), **spark.get("job_conf", {}).get(job, {})}


def _store_jars(job: str, warehouse: str) -> str | None:
    """For a job that reads an `s3://` warehouse through Spark (as `s3a://`): the classpath
    entry of hadoop-aws and the AWS SDK bundle, in the folder that `./wirelake` fetched them
    into ($WIRELAKE_S3_JARS; docs/storage.md). None for other jobs and stores: the bundle's
    398,307 entries take driver heap (a 100 MB driver fails)."""
    jars = os.environ.get("WIRELAKE_S3_JARS")
    if job not in SPARK_READS or not warehouse.startswith("s3://") or not jars:
        return None
    return f"{jars}/*"


def store_conf(job: str, warehouse: str) -> dict[str, str]:
    """The executors' part of `_store_jars`: on their classpath."""
    jars = _store_jars(job, warehouse)
    return {"spark.executor.extraClassPath": jars} if jars else {}


def store_env(job: str, warehouse: str) -> dict[str, str]:
    """The driver's part of `_store_jars`: in SPARK_DIST_CLASSPATH, which spark-submit puts
    after Spark's own jars, where `spark.driver.extraClassPath` would put them before: the
    JVM maps the class archive that `./wirelake` records (`use_class_archive`) only for a
    classpath that begins as it did when recorded."""
    jars = _store_jars(job, warehouse)
    return {"SPARK_DIST_CLASSPATH": jars} if jars else {}


@dataclass(frozen=True)
class SmallDayConf:
    """The conf a job takes over its own on a day of fewer than `below_bytes` landed bytes."""

    below_bytes: int
    conf: Mapping[str, str]

    @classmethod
    def of(cls, spark: Mapping, job: str) -> SmallDayConf | None:
        """`small_day.job_conf.<job>`; None when there is none, and for the decode job,
        which runs before its day's size is counted (the jobs after it read it from the
        decode manifest)."""
        small = spark.get("small_day", {})
        conf = small.get("job_conf", {}).get(job)
        if job == "decode" or not conf:
            return None
        return cls(int(small["below_bytes"]), dict(conf))

    def for_day(self, landed_bytes: int | None) -> dict[str, str]:
        """What a day of `landed_bytes` adds: `conf` below the size, else nothing (None: the
        day is not counted yet)."""
        small = landed_bytes is not None and landed_bytes < self.below_bytes
        return dict(self.conf) if small else {}

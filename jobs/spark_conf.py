"""A job's Spark conf as sources.yaml's `spark` settings give it: `conf`, over it the job's
`job_conf`, and on a small day `small_day`'s conf over both; under all of them what a job
that reads the lake through Spark needs for where the lake is (`store_conf`).

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


def store_conf(job: str, warehouse: str) -> dict[str, str]:
    """For a job that reads an `s3://` warehouse through Spark (as `s3a://`): hadoop-aws and
    the AWS SDK bundle on its driver's and executors' classpath, from the folder that
    `./wirelake` fetched them into ($WIRELAKE_S3_JARS; docs/storage.md). Nothing for other
    jobs and stores: the bundle's 398,307 entries take driver heap (a 100 MB driver fails)."""
    jars = os.environ.get("WIRELAKE_S3_JARS")
    if job not in SPARK_READS or not warehouse.startswith("s3://") or not jars:
        return {}
    classpath = f"{jars}/*"
    return {"spark.driver.extraClassPath": classpath, "spark.executor.extraClassPath": classpath}


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

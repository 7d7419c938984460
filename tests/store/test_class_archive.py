"""A job that reads an S3 lake through Spark still maps Spark's classes from the class
archive `./wirelake` records: its driver has the S3 jars after Spark's own on its
classpath (`store_env` in jobs/spark_conf.py), since the JVM maps the archive only for a
classpath that begins as it did when recorded (docs/performance.md)."""

from __future__ import annotations

import os
import re

import pytest
from s3jobs import spark_submit

from jobs.spark_conf import store_env

pytestmark = pytest.mark.spark

START_SPARK = "from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().stop()\n"


def test_a_driver_with_the_s3_jars_maps_sparks_classes_from_the_archive(tmp_path):
    opts = os.environ["SPARK_SUBMIT_OPTS"]
    assert "-XX:SharedArchiveFile=" in opts  # set by ./wirelake
    warehouse = "s3://lake/warehouse"
    assert store_env("validate", warehouse), "no S3 jars: WIRELAKE_S3_JARS is set by ./wirelake"
    app = tmp_path / "start.py"
    app.write_text(START_SPARK)
    env = {**os.environ, "SPARK_SUBMIT_OPTS": f"{opts} -Xlog:class+load=info"}
    started = spark_submit("validate", ["--warehouse", warehouse], env, app=app)
    assert started.returncode == 0, started.stderr[-3000:]
    [source] = re.findall(r" org\.apache\.spark\.SparkContext source: (.+)$", started.stdout, re.M)
    assert source.startswith("shared objects file"), source

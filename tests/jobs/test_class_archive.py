"""A job that reads an S3 lake through Spark still maps Spark's classes from the class
archive `./wirelake` records: its driver has the S3 jars after Spark's own on its
classpath (`store_env` in jobs/spark_conf.py), since the JVM maps the archive only for a
classpath that begins as it did when recorded (docs/performance.md)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from jobs.spark_conf import store_conf, store_env

pytestmark = pytest.mark.spark

START_SPARK = "from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().stop()\n"


def test_a_driver_with_the_s3_jars_maps_sparks_classes_from_the_archive(tmp_path):
    assert "-XX:SharedArchiveFile=" in os.environ["SPARK_SUBMIT_OPTS"]  # set by ./wirelake
    warehouse = "s3://lake/warehouse"
    env, conf = store_env("validate", warehouse), store_conf("validate", warehouse)
    assert env and conf, "no S3 jars: WIRELAKE_S3_JARS is set by ./wirelake"
    app = tmp_path / "start.py"
    app.write_text(START_SPARK)
    opts = f"{os.environ['SPARK_SUBMIT_OPTS']} -Xlog:class+load=info"
    spark_submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable))
    started = subprocess.run(
        [spark_submit or "spark-submit", "--master", "local[1]", "--conf", "spark.ui.enabled=false",
         *(part for key, value in conf.items() for part in ("--conf", f"{key}={value}")),
         str(app)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, **env, "SPARK_SUBMIT_OPTS": opts},
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-3000:]
    [source] = re.findall(r" org\.apache\.spark\.SparkContext source: (.+)$", started.stdout, re.M)
    assert source.startswith("shared objects file"), source

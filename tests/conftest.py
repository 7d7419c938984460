"""Fixtures shared by every test folder.

One local SparkSession for the whole test session (starting one costs seconds and a JVM):
two cores, UTC, few shuffle partitions, no UI. Tests that need it take `spark`.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile

import pytest


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession  # here, so tests without Spark never import it

    scratch = tempfile.mkdtemp(prefix="wirelake-spark-")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("wirelake-tests")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", os.path.join(scratch, "spark-warehouse"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("WARN")
    # py4j logs "Closing down clientserver connection" from __del__ at interpreter exit,
    # after pytest has closed the captured stream it would write to.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    yield session
    session.stop()
    shutil.rmtree(scratch, ignore_errors=True)

"""Fixtures shared by every test folder.

One local SparkSession for the whole test session (starting one costs seconds and a JVM):
two cores, UTC, few shuffle partitions, no UI. Tests that need it take `spark`.

Property tests run under one hypothesis profile: derandomized (the examples follow from
each test's own code, so a commit always gets the same verdict), no example database, no
deadline (a loaded 2-core machine must not turn slowness into failure). Each test keeps its
own `max_examples` budget. Open-ended random search is `./wirelake fuzz`, not the suite.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile

import pytest
from hypothesis import settings

settings.register_profile("suite", derandomize=True, database=None, deadline=None)
settings.load_profile("suite")


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


@pytest.fixture(scope="module")
def alerting():
    """The loopback SMTP server and webhook receiver (tests/airflowrun.py), one pair per
    test module, so each module counts its own alerts."""
    from airflowrun import receivers

    with receivers() as started:
        yield started

"""Fixtures shared by every test folder, the hypothesis profiles, the slow marks and the
order the workers take the modules in.

One local SparkSession per test process (starting one costs seconds and a JVM): two cores,
UTC, few shuffle partitions, no UI. Tests that need it take `spark`.

`./wirelake test` runs the suite on pytest-xdist workers, a module to a worker: those that
start Airflow or a server first, then Spark's, then the rest (`_longest_first`), so that
the long ones do not end the run alone; while they start, the controller compiles the
decoders' numba walks once, and hands out no test before that is done
(`pytest_sessionstart`).

Property tests run under a hypothesis profile, "full" unless `--hypothesis-profile` names
another: derandomized (the examples follow from each test's own code, so a commit always
gets the same verdict), no example database, no deadline (a loaded 2-core machine must not
turn slowness into failure). "full" tries 100 examples per test, "quick" (`./wirelake test
--quick`) 10. A test whose examples cost more or less asks for a multiple of the profile's
count, `settings(max_examples=examples(3))` (tests/budget.py), never for a number.
Open-ended random search is `./wirelake fuzz`, not the suite.

A test is slow when it needs a Spark JVM, an Airflow process, a server or a browser: it
carries the mark of what it needs (SLOW, registered in pyproject.toml) and then `slow`,
which `./wirelake test --quick` deselects (`./wirelake test` runs everything, as CI does).
The marks come from the fixtures a test uses, directly or through other fixtures
(FIXTURE_MARKS), and from its module's `pytestmark` where no fixture tells (spark-submit
runs, Airflow runs, a server or browser a test starts itself); `e2e`, a whole pipeline run
through Airflow, is also `airflow`.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from hypothesis import settings

settings.register_profile("full", derandomize=True, database=None, deadline=None, max_examples=100)
settings.register_profile("quick", settings.get_profile("full"), max_examples=10)
settings.load_profile("full")  # pytest's --hypothesis-profile, when given, loads its own

# Every JVM the tests start (the session's, spark-submit's, an Airflow task's) runs a small
# day: the JIT's quick tier and the serial collector, as the DAG gives a small day's jobs
# (`small_day` in dags/sources.yaml), spend less CPU than the optimising tier would.
SMALL_DAY_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} {SMALL_DAY_JVM}"

SLOW = ("spark", "airflow", "service", "browser")
FIXTURE_MARKS = {
    "spark": "spark",  # the session's SparkSession
    "metadata_db": "service",  # a PostgreSQL server where one is installed (tests/scheduling)
}
IMPLIED_MARKS = {"e2e": "airflow"}
WARMING = pytest.StashKey[list]()  # the warm processes the controller waits for


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items):
    """Marks each test before `-m` deselects by mark; orders the modules after pytest has
    grouped the tests by their fixtures' parameters."""
    for item in items:
        for fixture in sorted(FIXTURE_MARKS.keys() & set(item.fixturenames)):
            item.add_marker(FIXTURE_MARKS[fixture])
        for mark, implied in IMPLIED_MARKS.items():
            if item.get_closest_marker(mark):
                item.add_marker(implied)
        if any(item.get_closest_marker(mark) for mark in SLOW):
            item.add_marker("slow")
    yield
    _longest_first(items)


def _longest_first(items: list[pytest.Item]) -> None:
    """Modules that start Airflow or a server first, then Spark's, then the rest, each
    module whole and in its own order: the workers of `./wirelake test` (pytest-xdist, a
    module to a worker, in this order) then start the longest first and end together."""
    rank: dict[object, int] = {}  # module path -> the lowest rank of its tests
    for item in items:
        marks = {mark.name for mark in item.iter_markers()}
        weight = 0 if marks & {"airflow", "service"} else 1 if marks & set(SLOW) else 2
        rank[item.path] = min(rank.get(item.path, weight), weight)
    items.sort(key=lambda item: rank[item.path])


def pytest_sessionstart(session):
    """With workers (pytest-xdist), the controller fills numba's cache with the decoders'
    compiled walks (`python -m wirecodecs warm`, a process per format) while the workers
    start and collect, and hands out no test before it is full
    (`pytest_xdist_node_collection_finished`): otherwise every worker, and every Spark
    task, that first takes a walk on a cold cache compiles it at the same time as the
    others."""
    config = session.config
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        from wirecodecs import compiled

        config.stash[WARMING] = [
            subprocess.Popen([sys.executable, "-m", "wirecodecs", "warm", name])
            for name in compiled.WALKS
        ]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """The controller's wait for the warm (`pytest_sessionstart`), before the first test
    is handed out."""
    for process in node.config.stash.get(WARMING, []):
        process.wait()


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

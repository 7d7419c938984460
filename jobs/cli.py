"""What the Spark entry points share: argument types, logging, the session, exit codes.

A job's `main(argv, spark=None)` returns its exit code; Airflow sees it as spark-submit's and
retries only the failures that a retry can change (dags/wirelake_tasks.py keeps the same list).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import datetime as dt
import logging
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from py4j.protocol import Py4JError
from pyspark.errors import PythonException
from pyspark.sql import SparkSession

EXIT_OK = 0
EXIT_FAILED = 1  # permanent: the run's checks failed (gate, accounting, critical expectation)
EXIT_USAGE = 2  # permanent: bad arguments or options (argparse's own code)
EXIT_TRANSIENT = 75  # sysexits EX_TEMPFAIL: an I/O or Spark error that a retry may not meet
PERMANENT_EXIT_CODES = (EXIT_FAILED, EXIT_USAGE)
TRANSIENT_ERRORS = (OSError, Py4JError)  # anything else raised is a bug: exit 1, no retry
# An executor's OSError (a store that cannot be reached) comes back to the driver as Spark's
# PythonException, the executor's traceback as its text: its last line names the error.
_OS_ERRORS = sorted(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, OSError)
)
EXECUTOR_OS_ERROR = re.compile(rf"^(?:{'|'.join(_OS_ERRORS)}): .*$", re.M)


class JobFailed(Exception):
    """The run finished its checks and must fail; the message is for the person on call."""


def iso_date(text: str) -> dt.date:
    """argparse type for a logical date YYYY-MM-DD."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date YYYY-MM-DD: {text!r}") from None


def key_value(text: str) -> tuple[str, str]:
    """argparse type for `key=value`."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def scalar(text: str) -> int | float | bool | str:
    """A command-line value as the type it spells: int, float, true/false, else string."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def setup_logging() -> None:
    """Progress of the `wirelake.*` loggers at INFO on stderr, whatever else set up logging."""
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("wirelake").setLevel(logging.INFO)


def spark_session(app_name: str) -> SparkSession:
    """The session of a spark-submit run; master and resources come from spark-submit.
    Spark's own INFO chatter is turned down so the job's progress lines stand out."""
    spark = (
        SparkSession.builder.appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    return spark


@contextlib.contextmanager
def own_session(app_name: str) -> Iterator[Callable[[], SparkSession]]:
    """A job's own session, started on a thread at once and stopped on the way out; the
    body gets the function that waits for it. Most of Spark's start-up is the JVM's,
    while Python waits on a socket: the body's first steps run in that time."""
    with ThreadPoolExecutor(1, thread_name_prefix="spark-start") as pool:
        starting = pool.submit(spark_session, app_name)
        try:
            yield starting.result
        finally:
            if starting.exception() is None:  # waits for the start: a failed one has no session
                starting.result().stop()


Args = TypeVar("Args")  # a job's resolved arguments: anything with `source` and `date`
Report = TypeVar("Report")  # what a job's run returns: its report


def run_job(
    name: str,
    args: Args,
    spark: SparkSession | None,
    run: Callable[[SparkSession, Args], Report],
    prepare: Callable[[], object] = lambda: None,
) -> Report | None:
    """`prepare()`, then `run(spark, args)` in the given session, or in its own one that it
    stops after; None (with the reason logged) when the run failed. An I/O or Spark error
    exits with EXIT_TRANSIENT, so that Airflow retries it. `prepare` is work that needs no
    Spark (importing Great Expectations): it runs while the own session starts."""
    log = logging.getLogger(f"wirelake.{name}")
    try:
        if spark is not None:
            prepare()
            return run(spark, args)
        with own_session(f"wirelake-{name}-{args.source}-{args.date}") as session:
            prepare()
            return run(session(), args)
    except JobFailed as exc:
        log.error("%s %s dt=%s failed: %s", name, args.source, args.date, exc)
        return None
    except TRANSIENT_ERRORS as exc:
        log.exception("%s %s dt=%s failed (may pass on retry)", name, args.source, args.date)
        raise SystemExit(EXIT_TRANSIENT) from exc
    except PythonException as exc:
        found = EXECUTOR_OS_ERROR.findall(str(exc))
        if not found:
            raise
        log.error(
            "%s %s dt=%s failed in an executor (may pass on retry): %s",
            *(name, args.source, args.date, found[-1]),
        )
        raise SystemExit(EXIT_TRANSIENT) from exc

"""The queries docs/storage.md shows a user ("Querying the lake"), run as written against a
small lake whose day was replaced once: the Python block (read, time travel, the whole
table through delta-rs) and the Spark SQL block on the tests' session."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs import lake, layout

DOC = Path(__file__).resolve().parents[2] / "docs" / "storage.md"
DAY = dt.date(2026, 11, 20)
TOPICS = {"first": ["orders"] * 3, "second": ["orders", "orders", "clicks", "clicks"]}


def python_blocks() -> list[str]:
    """The ```python blocks of the section "Querying the lake", in order."""
    text = DOC.read_text()
    section = text.split("## Querying the lake", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.fixture
def warehouse(tmp_path) -> Path:
    """Table kafka with day DAY written by a first run, then replaced by a second, and
    another day beside it."""
    table = str(tmp_path / "warehouse" / "kafka")
    for run, topics in TOPICS.items():
        folder = Path(layout.run_dir(table, DAY, run))
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"topic": topics}), folder / "part-00000.parquet")
        lake.replace_day(table, DAY, str(folder))
    other = Path(layout.run_dir(table, DAY - dt.timedelta(1), "other"))
    other.mkdir(parents=True)
    pq.write_table(pa.table({"topic": ["payments"]}), other / "part-00000.parquet")
    lake.replace_day(table, DAY - dt.timedelta(1), str(other))
    return tmp_path / "warehouse"


def run_documented(code: str, namespace: dict) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(code, namespace)
    return printed.getvalue()


def on(warehouse: Path, block: str) -> str:
    """A documented block pointed at the test's table instead of the demo's."""
    code = block.replace('"data/warehouse/kafka"', repr(str(warehouse / "kafka")))
    assert code != block
    return code


def test_the_python_query_reads_the_day_its_previous_run_and_the_table(warehouse):
    (reading, *_) = python_blocks()
    printed = run_documented(on(warehouse, reading), {}).splitlines()
    assert printed == [
        "4 ['topic']",  # the second run's rows
        "previous run: 3 rows",  # time travel to the first
        "3 4",  # version 3 (create, two runs of DAY, the other day), DAY's rows among 5
    ]


@pytest.mark.spark
def test_the_spark_sql_query_reads_the_day(warehouse, spark):
    reading, in_spark = python_blocks()
    namespace = {"spark": spark}
    run_documented(on(warehouse, reading), namespace)
    run_documented(in_spark, namespace)

    def topics(view: str) -> list[tuple]:
        counted = spark.sql(f"SELECT topic, count(*) AS n FROM {view} GROUP BY topic")
        return sorted(map(tuple, counted.collect()))

    assert topics("kafka_day") == [("clicks", 2), ("orders", 2)]
    assert topics("kafka_day_before") == [("orders", 3)]  # the first run, which was replaced

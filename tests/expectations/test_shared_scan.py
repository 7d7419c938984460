"""A clean day's validation reads the partition (Parquet, as the decode writes it) in as
few Spark jobs as its suite allows, with the golden results."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from golden_cases import GOLDEN, cases, comparable

from expectations import registry, runner

# Spark jobs of a clean day's validation: the shared aggregation is 2 (its scan, then
# the result from the shuffle: adaptive execution runs them as two jobs), the ordered id
# check 1 (Kafka, Cernan), a grouping GE computes itself 3 (Heka's uuids and Hercules'
# (timestamp, uuid) by a window, InLong's declared counts by GROUP BY), a quote of values
# an error budget tolerates 1 (the Cernan packets day). Before issue 28: 10, 10, 12, 16,
# 19, 13, 13 and 46 jobs.
JOBS = {
    "kafka": 3,
    "cernan": 3,
    "cernan_packets": 4,
    "heka": 5,
    "hercules": 5,
    "hercules_kafka": 5,
    "inlong": 5,
    "inlong_kafka": 5,
}
CLEAN = {name: case for name, case in cases().items() if name.endswith("-clean")}


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(CLEAN))
def test_clean_day_from_parquet_in_few_jobs(spark, tmp_path, name):
    case = CLEAN[name]
    rows = case.rows(tmp_path)
    (tmp_path / "day").mkdir()
    pq.write_table(
        pa.Table.from_pylist(rows, schema=case.schema), tmp_path / "day" / "part-0.parquet"
    )
    frame = spark.read.parquet(str(tmp_path / "day"))
    suite = registry.get(case.suite).build(case.facts(rows), case.params)
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup(name, f"validate {name}")
    try:
        outcome = runner.validate(frame, suite, case.suite, str(tmp_path / "docs"), name)
    finally:
        spark.sparkContext.setJobGroup("", "")
    assert len(tracker.getJobIdsForGroup(name)) <= JOBS[case.suite]
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    assert json.loads(json.dumps(comparable(outcome.result), default=str)) == golden

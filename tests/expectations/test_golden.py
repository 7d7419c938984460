"""Every format's suite, on a clean and a failing day read from Parquet as the validate
job reads a day, gives the results and the Data Docs page that the validation path gave
before scan-shared metrics (the golden files, written by that path), in as few Spark jobs
as the suite allows; a metric that fails raises only its own expectation."""

from __future__ import annotations

import json

import great_expectations as gx
import great_expectations.expectations as gxe
import pytest
from golden_cases import GOLDEN, RUN, cases, comparable, docs_text, prepared

from expectations import runner

CASES = cases()
# Spark jobs of a clean day's validation: the shared aggregation is 2 (its scan, then
# the result from the shuffle: adaptive execution runs them as two jobs); the ordered id
# check (Kafka, Cernan) reads the id columns in the driver, no job; a grouping
# GE computes itself 3 (Heka's uuids and Hercules' (timestamp, uuid) by a window,
# InLong's declared counts by GROUP BY); a quote of values an error budget tolerates 1
# (the Cernan packets day). Before issue 28: 10, 10, 12, 16, 19, 13, 13 and 46 jobs.
JOBS = {
    "kafka": 2,
    "cernan": 2,
    "cernan_packets": 3,
    "heka": 5,
    "hercules": 5,
    "hercules_kafka": 5,
    "inlong": 5,
    "inlong_kafka": 5,
}
# What the Data Docs page says since the batch is named (issue 28), and what it said.
NAMED = [
    (f"/ {RUN} / {RUN} /", "/ __none__ /"),
    (f"Data asset: {RUN}", "Data asset: None"),
    (f"Run Name {RUN}", "Run Name __none__"),
    (f" data_asset_name {RUN} ", " "),
]


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(CASES))
def test_results_and_data_docs_equal_the_golden_files(spark, tmp_path, name):
    case = CASES[name]
    frame, files, suite = prepared(spark, case, tmp_path)
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup(name, f"validate {name}")
    try:
        outcome = runner.validate(frame, suite, case.suite, str(tmp_path / "docs"), RUN, files)
    finally:
        spark.sparkContext.setJobGroup("", "")

    if name.endswith("-clean"):
        assert len(tracker.getJobIdsForGroup(name)) <= JOBS[case.suite]
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    assert json.loads(json.dumps(comparable(outcome.result), default=str)) == golden
    shown = " ".join(docs_text(tmp_path / "docs"))
    for now, before in NAMED:
        assert now in shown
        shown = shown.replace(now, before)
    assert shown.split() == (GOLDEN / f"{name}.docs.txt").read_text().split()


@pytest.mark.spark
def test_a_metric_spark_refuses_raises_only_its_own_expectation(spark, tmp_path):
    """A regex Java refuses fails its metric in the shared aggregation: as with Great
    Expectations' own engine, only that expectation ends as raised."""
    frame, files, suite = prepared(spark, CASES["kafka-clean"], tmp_path)
    refused = gxe.ExpectColumnValuesToMatchRegex(column="topic", regex="(unclosed")
    suite = gx.ExpectationSuite(name=suite.name, expectations=[*suite.expectations, refused])

    outcome = runner.validate(frame, suite, "kafka", str(tmp_path / "docs"), RUN, files)
    plain = (
        gx.get_context(mode="ephemeral")
        .data_sources.add_spark(name="plain", persist=False)
        .add_dataframe_asset(name="kafka")
        .add_batch_definition_whole_dataframe(name="day")
        .get_batch(batch_parameters={"dataframe": frame})
        .validate(suite, result_format="BASIC")
        .to_json_dict()
    )

    def raised(result: dict) -> list[str]:
        return [
            item["expectation_config"]["type"]
            for item in result["results"]
            if '"raised_exception": true' in json.dumps(item.get("exception_info") or {})
        ]

    assert raised(outcome.result) == raised(plain) == ["expect_column_values_to_match_regex"]

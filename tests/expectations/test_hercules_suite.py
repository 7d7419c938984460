"""The Hercules suites on a decoded sample day (gate batches, and the gate's Kafka topic),
then on the same rows doctored; and the validate job passing a text parameter."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from suite_run import failed, land_day, manifest, validate_rows

from expectations import registry, runner
from expectations.checks import RunFacts
from expectations.hercules import KEY_IS_NOT_UUID, missing_tag_query
from jobs import validate
from wirecodecs import FileAccounting, get, source_format
from wirecodecs.options import resolve
from wirecodecs.samples import write_sample_day

DAY = dt.date(2026, 11, 3)
UNEXPECTED_ROWS = "unexpected_rows_expectation"


def decoded_day(source: str, fmt, tmp_path) -> pa.Table:
    day = write_sample_day(source, tmp_path / source, DAY, 5)
    batches = []
    for item in day.files:
        accounting = FileAccounting(str(item.path), fmt.name)
        with item.path.open("rb") as stream:
            for got in fmt.decode(stream, str(item.path), accounting, resolve(fmt, {})):
                if isinstance(got, pa.RecordBatch):
                    batches.append(got)
    return pa.Table.from_batches(batches, schema=fmt.schema)


@pytest.fixture(scope="module")
def gate_rows(tmp_path_factory) -> list[dict]:
    return decoded_day("hercules", get("hercules"), tmp_path_factory.mktemp("g")).to_pylist()


@pytest.fixture(scope="module")
def kafka_rows(tmp_path_factory) -> list[dict]:
    fmt = source_format("kafka", "hercules")
    return decoded_day("hercules_kafka", fmt, tmp_path_factory.mktemp("k")).to_pylist()


def run_suite(spark, suite: str, rows, records_good: int, tmp_path, **params) -> runner.Outcome:
    schema = (get("hercules") if suite == "hercules" else source_format("kafka", "hercules")).schema
    facts = RunFacts(DAY, manifest("hercules", DAY, records_good))
    return validate_rows(spark, suite, rows, schema, facts, tmp_path, **params)


def without_tag(row: dict, path: str) -> dict:
    return {**row, "tags": [tag for tag in row["tags"] if tag["path"] != path]}


def doctored(rows: list[dict]) -> list[dict]:
    """Version 2 on one event, one three days late, one without properties/project, one
    whose environment is a Null, and a replayed event (duplicate, one row too many)."""
    rows = [dict(row) for row in rows]
    rows[10]["version"] = 2
    rows[20]["event_time"] = dt.datetime(2026, 11, 6, tzinfo=dt.UTC)
    rows[30] = without_tag(rows[30], "properties/project")
    rows[40] = {
        **rows[40],
        "tags": [
            {**tag, "type": "Null", "string_value": None}
            if tag["path"] == "properties/environment"
            else tag
            for tag in rows[40]["tags"]
        ],
    }
    rows.append(dict(rows[50]))
    return rows


def test_common_tags_are_checked_by_hpath_and_refuse_anything_else():
    assert "t.path = 'properties/project'" in missing_tag_query("properties/project")
    for bad in ("a'b", "", "a//b", "/a"):
        with pytest.raises(ValueError, match="not an HPath"):
            missing_tag_query(bad)
    spec = registry.get("hercules")
    assert spec.resolve({"common_tags": "project"})["common_tags"] == "project"
    with pytest.raises(ValueError, match="unknown parameter"):
        spec.resolve({"commontags": "x"})


@pytest.mark.spark
def test_suite_passes_on_a_decoded_day(spark, gate_rows, tmp_path):
    outcome = run_suite(spark, "hercules", gate_rows, len(gate_rows), tmp_path)
    assert outcome.failures == []
    assert outcome.result["statistics"]["evaluated_expectations"] == 13


@pytest.mark.spark
def test_suite_fails_on_doctored_rows_and_says_where(spark, gate_rows, tmp_path):
    outcome = run_suite(spark, "hercules", doctored(gate_rows), len(gate_rows), tmp_path)
    failures = failed(outcome.failures)
    project = (UNEXPECTED_ROWS, missing_tag_query("properties/project"))
    environment = (UNEXPECTED_ROWS, missing_tag_query("properties/environment"))
    assert set(failures) == {
        ("expect_column_values_to_be_in_set", "version"),
        ("expect_column_values_to_be_between", "event_time"),
        ("expect_compound_columns_to_be_unique", "['timestamp', 'uuid']"),
        ("expect_table_row_count_to_equal", "None"),
        project,
        environment,
    }
    assert all(item["critical"] for item in outcome.failures)
    assert failures[("expect_column_values_to_be_in_set", "version")]["unexpected_count"] == 1
    late = failures[("expect_column_values_to_be_between", "event_time")]
    assert late["unexpected_rows"][0]["byte_offset"] == gate_rows[20]["byte_offset"]
    assert failures[project]["observed_value"] == 1
    assert failures[environment]["observed_value"] == 1


@pytest.mark.spark
def test_kafka_suite_checks_keys_and_crcs_too(spark, kafka_rows, tmp_path):
    outcome = run_suite(spark, "hercules_kafka", kafka_rows, len(kafka_rows), tmp_path)
    assert outcome.failures == []
    rows = [dict(row) for row in kafka_rows]
    rows[3]["kafka_key"] = b"not-the-uuid"
    rows[4]["kafka_crc_valid"] = False
    failures = failed(
        run_suite(spark, "hercules_kafka", rows, len(rows), tmp_path / "bad").failures
    )
    assert set(failures) == {
        ("expect_column_values_to_be_in_set", "kafka_crc_valid"),
        (UNEXPECTED_ROWS, KEY_IS_NOT_UUID),
    }


@pytest.mark.spark
def test_validate_job_takes_common_tags_as_text(spark, gate_rows, tmp_path):
    """Only properties/project required: the doctored environment no longer fails."""
    rows = [without_tag(row, "properties/environment") for row in gate_rows]
    events = pa.Table.from_pylist(rows, schema=get("hercules").schema)
    land_day(tmp_path / "warehouse", "hercules", events, manifest("hercules", DAY, len(rows)))
    argv = ["--source", "hercules", "--suite", "hercules", "--date", DAY.isoformat()]
    argv += ["--warehouse", str(tmp_path / "warehouse"), "--reports", str(tmp_path / "reports")]
    assert validate.main([*argv, "--param", "common_tags=properties/project"], spark=spark) == 0
    assert validate.main(argv, spark=spark) == 1  # the default also requires environment

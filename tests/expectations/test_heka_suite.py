"""The Heka suite on rows the test writes itself (a signed and an unsigned host over one
day), then on the same rows doctored; with real Great Expectations on local Spark."""

from __future__ import annotations

import datetime as dt
import io
import random
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from suite_run import failed, manifest, validate_rows

from expectations import registry, runner
from expectations.checks import RunFacts
from wirecodecs import FileAccounting
from wirecodecs.heka import HEKA
from wirecodecs.heka.schema import HEKA_SCHEMA
from wirecodecs.options import resolve
from wirecodecs.samples import SAMPLE_SECRETS, write_sample_day

pytestmark = pytest.mark.spark

DAY = dt.date(2026, 11, 20)
START = dt.datetime.combine(DAY, dt.time(), tzinfo=dt.UTC)


def row(rng: random.Random, index: int, signed: bool) -> dict:
    when = START + dt.timedelta(microseconds=rng.randrange(86_400 * 10**6))
    ns = (when - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1) * 1000
    return {
        "source_file": f"/landing/heka/{'pay' if signed else 'web'}-01/heka.heka",
        "byte_offset": index * 300,
        "hmac_valid": True if signed else None,
        "event_time": when,
        "hmac_status": "valid" if signed else None,
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "uuid_valid": True,
        "timestamp": ns,
        "type": "nginx.access",
        "severity": rng.randrange(8),
        "severity_present": True,
        "hostname": "web-01.example.net",
        "fields": [],
        "hmac_signer": "ops" if signed else None,
        "body_encoding": "protobuf",
        "frame_length": 300,
    }


@pytest.fixture(scope="module")
def good_rows() -> list[dict]:
    rng = random.Random(11)
    return [row(rng, i, signed=i % 3 != 0) for i in range(300)]


def run_suite(spark, rows, records_good, tmp_path, **params) -> runner.Outcome:
    facts = RunFacts(DAY, manifest("heka", DAY, records_good))
    return validate_rows(spark, "heka", rows, HEKA_SCHEMA, facts, tmp_path, **params)


def test_suite_passes_on_good_rows(spark, good_rows, tmp_path):
    outcome = run_suite(spark, good_rows, len(good_rows), tmp_path, signed=0)
    assert outcome.failures == []
    assert outcome.result["statistics"]["evaluated_expectations"] == 15


def test_signed_source_needs_a_signature_on_every_record(spark, good_rows, tmp_path):
    outcome = run_suite(spark, good_rows, len(good_rows), tmp_path, signed=1)
    failures = failed(outcome.failures)
    # the true verdicts pass (nulls aside); the unsigned third of the rows does not
    assert set(failures) == {("expect_column_values_to_not_be_null", "hmac_valid")}
    assert (
        failures[("expect_column_values_to_not_be_null", "hmac_valid")]["unexpected_count"] == 100
    )
    assert failures[("expect_column_values_to_not_be_null", "hmac_valid")]["critical"]
    signed_only = [r for r in good_rows if r["hmac_valid"]]
    assert run_suite(spark, signed_only, len(signed_only), tmp_path, signed=1).failures == []


def doctored(rows: list[dict]) -> list[dict]:
    """Three forged records, a record replayed (duplicate uuid, one row more than the
    manifest counts), a uuid that is not canonical, a severity of 9, an event 3 days late."""
    rows = [dict(r) for r in rows]
    forged = [r for r in rows if r["hmac_valid"]][:3]
    for r in forged:
        r["hmac_valid"], r["hmac_status"] = False, "invalid_digest"
    rows.append(dict(rows[10]))
    rows[20]["uuid"] = rows[20]["uuid"].upper()
    rows[30]["severity"] = 9
    rows[40]["event_time"] = START + dt.timedelta(days=4)
    return rows


def test_suite_fails_on_doctored_rows_and_says_where(spark, good_rows, tmp_path):
    outcome = run_suite(spark, doctored(good_rows), len(good_rows), tmp_path, signed=0)
    failures = failed(outcome.failures)
    assert set(failures) == {
        ("expect_column_values_to_not_be_in_set", "hmac_valid"),
        ("expect_column_values_to_be_between", "event_time"),
        ("expect_column_values_to_match_regex", "uuid"),
        ("expect_column_values_to_be_unique", "uuid"),
        ("expect_column_values_to_be_between", "severity"),
        ("expect_table_row_count_to_equal", "None"),
    }
    assert all(item["critical"] for item in outcome.failures)
    forged = failures[("expect_column_values_to_not_be_in_set", "hmac_valid")]
    assert forged["unexpected_count"] == 3
    assert failures[("expect_column_values_to_be_between", "severity")]["unexpected_count"] == 1
    assert failures[("expect_column_values_to_be_unique", "uuid")]["unexpected_count"] == 2


def test_error_budget_admits_a_few_bad_signatures(spark, good_rows, tmp_path):
    rows = [dict(r) for r in good_rows]
    rows[1]["hmac_valid"] = False  # 1 of 200 signed rows: within 1 %
    outcome = run_suite(spark, rows, len(rows), tmp_path, signed=0, hmac_error_budget=0.01)
    assert outcome.failures == []


def test_uuids_that_are_not_16_bytes_count_against_their_budget(spark, good_rows, tmp_path):
    """Three messages whose producer sent the uuid as 36 characters of text (one upper
    case) and one with no uuid: with the default budget (0) they fail the day, counted;
    within `invalid_uuid_budget` they pass (canonical text is asked of 16-byte uuids only)."""
    rows = [dict(r) for r in good_rows]
    for r in rows[:3]:
        r["uuid_valid"] = False
    rows[0]["uuid"] = rows[0]["uuid"].upper()
    rows[3].update(uuid=None, uuid_valid=False)
    failures = failed(run_suite(spark, rows, len(rows), tmp_path, signed=0).failures)
    assert set(failures) == {("expect_column_values_to_be_in_set", "uuid_valid")}
    assert failures[("expect_column_values_to_be_in_set", "uuid_valid")]["unexpected_count"] == 4
    assert failures[("expect_column_values_to_be_in_set", "uuid_valid")]["critical"]
    within = run_suite(spark, rows, len(rows), tmp_path, signed=0, invalid_uuid_budget=0.02)
    assert within.failures == []


def test_sample_day_passes_with_the_sources_yaml_params_and_still_checks(spark, tmp_path):
    """What the demo validates: the sample day, decoded with the demo's keys, against the
    `heka` source's suite parameters from dags/sources.yaml; the forged record it carries
    fails the suite once the error budget is gone."""
    keys = tmp_path / "heka_hmac_keys.json"
    keys.write_bytes(SAMPLE_SECRETS["heka_hmac_keys.json"])
    day = write_sample_day("heka", tmp_path / "landing", DAY, seed=20261120)
    batches = []
    for item in day.files:
        acc = FileAccounting(str(item.path), "heka")
        stream = io.BytesIO(item.path.read_bytes())
        options = resolve(HEKA, {"hmac_keys_file": str(keys)})
        batches += [
            b
            for b in HEKA.decode(stream, str(item.path), acc, options)
            if isinstance(b, pa.RecordBatch)
        ]
    table = pa.Table.from_batches(batches, schema=HEKA_SCHEMA)
    config = yaml.safe_load((Path(__file__).parents[2] / "dags" / "sources.yaml").read_text())
    params = config["sources"]["heka"]["validate"]["params"]
    suite = registry.get("heka")
    frame = spark.createDataFrame(table)

    def outcome(**overrides):
        facts = RunFacts(DAY, manifest("heka", DAY, table.num_rows))
        built = suite.build(facts, {**params, **overrides})
        return runner.validate(frame, built, "heka", str(tmp_path / "docs"), "heka sample day")

    assert outcome().failures == []
    strict = failed(outcome(hmac_error_budget=0.0).failures)
    assert set(strict) == {("expect_column_values_to_not_be_in_set", "hmac_valid")}
    assert strict[("expect_column_values_to_not_be_in_set", "hmac_valid")]["unexpected_count"] == 1

"""The InLong suites on rows this test writes (messages of every version, one LF-joined
V4 message), then on the same rows doctored, with real Great Expectations on Spark."""

from __future__ import annotations

import datetime as dt

import pytest
from suite_run import manifest, validate_rows

from expectations import registry
from expectations.checks import RunFacts
from wirecodecs import get
from wirecodecs.inlong.schema import INLONG_SCHEMA

pytestmark = pytest.mark.spark

DAY = dt.date(2024, 3, 1)
NOON = dt.datetime(2024, 3, 1, 12, tzinfo=dt.UTC)
# (version, declared MsgCnt or None, items, ExtField): what each message of the day holds
MESSAGES = [
    (0, None, [b"a", b""], None),
    (1, None, [b"x,1", b"y,2", b"z,3"], None),
    (2, 3, [b"p", b"q", b"r"], None),
    (3, 2, [b"s", b"t"], None),
    (4, 4, [b"u", b"v", b"\xff\xfe\n", b""], 0x04),  # not UTF-8, an LF that is no separator
    (4, 3, [b"e1\n\xc3(\ne3"], 0x24),  # three events joined by LF, one not UTF-8
]
PARAMS = {"required_attributes": "groupId,streamId,NodeIP"}


def rows_of(messages=MESSAGES, *, source="/landing/inlong/dp-0.bin", kafka=False) -> list[dict]:
    """One row per item, as the decoder is specified to produce it (schema.py)."""
    rows, offset = [], 0
    for index, (version, count, items, ext) in enumerate(messages):
        attributes = {"groupId": "g", "streamId": f"s{index}", "NodeIP": "10.0.0.1", "dt": "1"}
        for item_index, body in enumerate(items):
            row = {
                "source_file": source,
                "byte_offset": 0 if kafka else offset,
                "event_time": NOON + dt.timedelta(minutes=index),
                "version": version,
                "create_time_ms": None if version == 0 else 1709294400000,
                "msg_count": count,
                "msg_type": 7 if version == 4 else None,
                "group_id": "g",
                "stream_id": f"s{index}",
                "ext_field": ext,
                "item_index": item_index,
                "compressed": False,
                "attr": "groupId=g",
                "attributes": attributes,
                "body": body,
            }
            if kafka:
                row |= {"kafka_offset": index, "kafka_topic": "t", "kafka_partition": 0}
            rows.append(row)
        offset += 100
    return rows


def run_suite(spark, suite: str, rows: list[dict], records_good: int, tmp_path, **params):
    schema = get("kafka+inlong").schema if suite == "inlong_kafka" else INLONG_SCHEMA
    facts = RunFacts(DAY, manifest(suite, DAY, records_good))
    return validate_rows(spark, suite, rows, schema, facts, tmp_path, **{**PARAMS, **params})


def test_good_day_passes(spark, tmp_path):
    rows = rows_of()
    outcome = run_suite(spark, "inlong", rows, len(rows), tmp_path)
    assert outcome.failures == []


def test_doctored_day_fails_each_critical_check(spark, tmp_path):
    rows = rows_of()
    assert rows[5]["version"] == 2
    del rows[5]  # an item of the V2 message lost: 2 rows where MsgCnt says 3
    rows[0]["event_time"] = dt.datetime(2024, 3, 5, tzinfo=dt.UTC)
    rows[1]["group_id"] = None
    rows[2]["attributes"] = {"groupId": "g", "streamId": "s1"}  # NodeIP missing
    rows.append(dict(rows[-1]))  # the LF message replayed: 6 events where MsgCnt says 3
    outcome = run_suite(spark, "inlong", rows, len(rows) - 1, tmp_path)
    assert sorted(
        (f["expectation"], f["kwargs"].get("column")) for f in outcome.critical_failures
    ) == [
        ("expect_column_values_to_be_between", "event_time"),
        ("expect_column_values_to_not_be_null", "group_id"),
        ("expect_table_row_count_to_equal", None),
        ("unexpected_rows_expectation", None),
        ("unexpected_rows_expectation", None),
    ]
    queries = [
        f for f in outcome.critical_failures if f["expectation"] == "unexpected_rows_expectation"
    ]
    assert len(queries) == 2  # counts per message, attribute keys
    counts = next(f for f in queries if "msg_count" in f["kwargs"]["unexpected_rows_query"])
    assert counts["observed_value"] == 2  # the V2 message and the replayed LF message


def test_kafka_suite_keys_messages_by_record(spark, tmp_path):
    """Kafka-borne messages of one batch share byte_offset; kafka_offset tells them apart."""
    rows = rows_of(kafka=True)
    assert run_suite(spark, "inlong_kafka", rows, len(rows), tmp_path).failures == []
    wrong = run_suite(spark, "inlong", [
        {k: v for k, v in row.items() if not k.startswith("kafka_")} for row in rows
    ], len(rows), tmp_path)  # fmt: skip
    assert [f["expectation"] for f in wrong.critical_failures] == ["unexpected_rows_expectation"]


def test_attribute_keys_are_checked_names():
    with pytest.raises(ValueError, match="attribute key"):
        registry.get("inlong").build(RunFacts(DAY, manifest("inlong", DAY, 0)),
                                     {"required_attributes": "a') OR (1=1"})  # fmt: skip

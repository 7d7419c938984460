"""The Kafka suite on rows built from the golden sidecars (what the vectors hold, per the
reader that wrote them), then on the same rows doctored; and the validate job around it."""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import json
import logging
import re
from pathlib import Path

import pyarrow as pa
import pytest
from suite_run import failed, land_day, manifest, validate_rows

from expectations import registry, runner
from expectations.checks import RunFacts, run_window
from jobs import validate
from wirecodecs.kafka.schema import KAFKA_SCHEMA

VECTORS = Path(__file__).resolve().parents[1] / "data" / "kafka"
DAY = dt.date(2024, 3, 1)  # every timestamp in the vectors is on this day (UTC)
TIMESTAMP_TYPES = {0: "create_time", 1: "log_append_time", None: None}
# (sidecar, topic, partition): two rolled v2 segments, and a gzip v1 log with inner CRCs
GOOD = [
    ("segment_dir/orders-0/00000000000000000000", "orders", 0),
    ("segment_dir/orders-0/00000000000000002331", "orders", 0),
    ("v1_gzip", "payments", 1),
]


def _bytes(b64: str | None) -> bytes | None:
    return None if b64 is None else base64.b64decode(b64)


def golden_rows(name: str, topic: str, partition: int) -> list[dict]:
    """One row per record of a sidecar, as the decoder is specified to produce it."""
    sidecar = json.loads(gzip.decompress((VECTORS / f"{name}.json.gz").read_bytes()))
    source = f"/landing/{topic}-{partition}/{Path(sidecar['file']).name}"
    rows = []
    for batch in sidecar["batches"]:
        wrapped = batch["magic"] < 2 and batch["compression"] != "none"
        for record in batch["records"]:
            millis = record["timestamp"]
            rows.append(
                {
                    "source_file": source,
                    "byte_offset": batch["position"],
                    "crc_valid": batch["crc_valid"],
                    "event_time": None
                    if millis in (None, -1)
                    else dt.datetime.fromtimestamp(millis / 1000, dt.UTC),
                    "topic": topic,
                    "partition": partition,
                    "magic": batch["magic"],
                    "compression": batch["compression"],
                    "timestamp_type": TIMESTAMP_TYPES[batch["timestamp_type"]],
                    "batch_base_offset": batch["base_offset"],
                    "batch_last_offset": batch["last_offset"],
                    "is_transactional": batch.get("is_transactional", False),
                    "is_control": batch.get("is_control", False),
                    "offset": record["offset"],
                    "timestamp_ms": millis,
                    "record_crc_valid": record.get("crc_valid") if wrapped else None,
                    "key": _bytes(record["key_b64"]),
                    "value": _bytes(record["value_b64"]),
                    "headers": [{"key": k, "value": _bytes(v)} for k, v in record["headers"]],
                }
            )
    return rows


@pytest.fixture(scope="module")
def good_rows() -> list[dict]:
    return [row for name, topic, partition in GOOD for row in golden_rows(name, topic, partition)]


def doctored(rows: list[dict]) -> list[dict]:
    """Five CRC failures, two inner-CRC failures, an event three days late, a replayed
    record (duplicate offset, and one row more than the manifest counts)."""
    rows = [dict(row) for row in rows]
    for row in rows[100:105]:
        row["crc_valid"] = False
    wrapped = [row for row in rows if row["record_crc_valid"] is not None]
    for row in wrapped[:2]:
        row["record_crc_valid"] = False
    rows[200]["event_time"] = dt.datetime(2024, 3, 4, tzinfo=dt.UTC)
    rows.append(dict(rows[300]))
    return rows


def run_suite(
    spark, rows: list[dict], records_good: int, tmp_path, bad_bytes: int = 0, **params
) -> runner.Outcome:
    facts = RunFacts(DAY, manifest("kafka", DAY, records_good, bad_bytes=bad_bytes))
    return validate_rows(spark, "kafka", rows, KAFKA_SCHEMA, facts, tmp_path, **params)


def test_run_window_spans_the_day_with_lateness_and_skew():
    assert run_window(DAY, 24, 10) == (
        dt.datetime(2024, 2, 29, tzinfo=dt.UTC),
        dt.datetime(2024, 3, 2, 0, 10, tzinfo=dt.UTC),
    )


def test_unknown_suite_parameter_is_refused():
    with pytest.raises(ValueError, match=r"unknown parameter.*error_budgt"):
        registry.get("kafka").resolve({"error_budgt": 0.1})


@pytest.mark.spark
def test_suite_passes_on_golden_rows(spark, good_rows, tmp_path):
    outcome = run_suite(spark, good_rows, len(good_rows), tmp_path)
    assert outcome.failures == []
    assert outcome.result["statistics"]["evaluated_expectations"] == 15
    assert (tmp_path / "docs" / "index.html").is_file()


@pytest.mark.spark
def test_suite_fails_on_doctored_rows_and_says_where(spark, good_rows, tmp_path):
    outcome = run_suite(spark, doctored(good_rows), len(good_rows), tmp_path)
    failures = failed(outcome.failures)
    assert set(failures) == {
        ("expect_column_values_to_be_in_set", "crc_valid"),
        ("expect_column_values_to_not_be_in_set", "record_crc_valid"),
        ("expect_column_values_to_be_between", "event_time"),
        ("expect_compound_columns_to_be_unique", "['topic', 'partition', 'offset']"),
        ("expect_table_row_count_to_equal", "None"),
    }
    assert all(item["critical"] for item in outcome.failures)
    crc = failures[("expect_column_values_to_be_in_set", "crc_valid")]
    assert crc["unexpected_count"] == 5
    assert {(row["source_file"], row["byte_offset"]) for row in crc["unexpected_rows"]} == {
        (row["source_file"], row["byte_offset"]) for row in good_rows[100:105]
    }
    inner = failures[("expect_column_values_to_not_be_in_set", "record_crc_valid")]
    assert inner["unexpected_count"] == 2
    late = failures[("expect_column_values_to_be_between", "event_time")]
    assert late["unexpected_count"] == 1
    assert late["unexpected_rows"][0]["byte_offset"] == good_rows[200]["byte_offset"]
    unique = failures[("expect_compound_columns_to_be_unique", "['topic', 'partition', 'offset']")]
    assert unique["unexpected_count"] == 2  # the record and its replay
    count = failures[("expect_table_row_count_to_equal", "None")]
    assert count["observed_value"] == len(good_rows) + 1


@pytest.mark.spark
@pytest.mark.parametrize("day", ["clean", "tolerated", "failing"])
def test_values_are_quoted_where_there_are_unexpected_ones(spark, good_rows, tmp_path, day):
    """Quotes for values tolerated by an error budget, the failing rows' values for a
    failure, none on a clean day; Data Docs name the batch by the run name given."""
    rows = [dict(row) for row in good_rows]
    if day == "tolerated":
        for row in rows[100:103]:
            row["crc_valid"] = False
    if day == "failing":
        rows = doctored(good_rows)
    facts = RunFacts(DAY, manifest("kafka", DAY, len(good_rows)))
    suite = registry.get("kafka").build(facts, {"crc_error_budget": 0.01})
    frame = spark.createDataFrame(pa.Table.from_pylist(rows, schema=KAFKA_SCHEMA))

    outcome = runner.validate(
        frame, suite, "kafka", str(tmp_path), "source kafka, table kafka, dt=D"
    )

    crc = next(
        item["result"]
        for item in outcome.result["results"]
        if item["expectation_config"]["kwargs"].get("column") == "crc_valid"
    )
    quoted = {"clean": [], "tolerated": [False] * 3, "failing": [False] * 5}[day]
    assert crc["partial_unexpected_list"] == quoted
    (page,) = (tmp_path / "validations").rglob("*.html")
    shown = re.sub(r"<[^>]+>|\s+", " ", page.read_text())
    assert "Data asset: source kafka, table kafka, dt=D" in re.sub(r" +", " ", shown)


# --- the validate job ---------------------------------------------------------------


def land_partition(warehouse: Path, rows: list[dict], records_good: int) -> None:
    """A partition and manifest as the decode job leaves them."""
    records = pa.Table.from_pylist(rows, schema=KAFKA_SCHEMA)
    land_day(warehouse, "kafka", records, manifest("kafka", DAY, records_good))


def job_argv(tmp_path, *params: str) -> list[str]:
    argv = ["--source", "kafka", "--suite", "kafka", "--date", DAY.isoformat()]
    argv += ["--warehouse", str(tmp_path / "warehouse"), "--reports", str(tmp_path / "reports")]
    for param in params:
        argv += ["--param", param]
    return argv


@pytest.mark.spark
def test_validate_job_publishes_results_and_passes_with_warnings(
    spark, good_rows, tmp_path, capsys
):
    rows = [dict(row) for row in good_rows]
    for row in rows:
        if row["topic"] == "payments":  # a file that did not land in a <topic>-<partition>/ folder
            row["topic"] = row["partition"] = None
    land_partition(tmp_path / "warehouse", rows, len(rows))

    assert validate.main(job_argv(tmp_path), spark=spark) == 0

    report_dir = tmp_path / "reports" / "kafka" / f"dt={DAY}"
    report = json.loads((report_dir / "validation.json").read_text())
    assert (report["success"], report["critical_success"]) == (False, True)
    assert sorted(
        (item["expectation"], item["kwargs"]["column"], item["critical"])
        for item in report["failures"]
    ) == [
        ("expect_column_values_to_not_be_null", "partition", False),
        ("expect_column_values_to_not_be_null", "topic", False),
    ]
    assert len(report["results"]) == 15  # the Great Expectations result itself
    assert report["params"] == {
        "crc_error_budget": 0.0,
        "max_lateness_hours": 24.0,
        "max_clock_skew_minutes": 10.0,
        "volume_tolerance": 0.3,
        "volume_critical": 0.0,
    }
    docs = report_dir / "data_docs"
    assert report["data_docs"] == str(docs / "index.html")
    assert (docs / "index.html").is_file()
    assert len(list((docs / "validations").rglob("*.html"))) == 1
    assert "2 failed (0 critical)" in capsys.readouterr().out


@pytest.mark.spark
def test_validate_job_fails_on_critical_expectations(spark, good_rows, tmp_path, caplog):
    land_partition(tmp_path / "warehouse", doctored(good_rows), len(good_rows))

    with caplog.at_level(logging.INFO, logger="wirelake.validate"):
        code = validate.main(job_argv(tmp_path, "crc_error_budget=0.05"), spark=spark)

    assert code == 1
    result_path = tmp_path / "reports" / "kafka" / f"dt={DAY}" / "validation.json"
    report = json.loads(result_path.read_text())
    assert report["critical_success"] is False
    # within a 5% budget: 5 of 4681 crc_valid false, 2 of 78 record_crc_valid false
    assert set(failed(report["failures"])) == {
        ("expect_column_values_to_be_between", "event_time"),
        ("expect_compound_columns_to_be_unique", "['topic', 'partition', 'offset']"),
        ("expect_table_row_count_to_equal", "None"),
    }
    errors = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
    assert (
        f"CRITICAL expect_table_row_count_to_equal(table): observed {len(good_rows) + 1}, "
        f"expected {{'value': {len(good_rows)}}}"
    ) in errors
    assert (
        "CRITICAL expect_column_values_to_be_between(event_time): 1 unexpected of "
        f"{len(good_rows) + 1} non-null values"
    ) in errors
    assert str(result_path) in errors

    docs = result_path.parent / "data_docs"
    pages = {page.relative_to(docs).as_posix(): page.read_text() for page in docs.rglob("*.html")}
    outside = ("http://", "https://", "//cdn", "<script")  # opens offline, with nothing to run
    found = {name: tuple(ref for ref in outside if ref in text) for name, text in pages.items()}
    assert found == dict.fromkeys(pages, ())
    (validation_page,) = [name for name in pages if name.startswith("validations/")]
    assert f'href="{validation_page}"' in pages["index.html"]
    shown = pages[validation_page]
    assert "Must have exactly" in shown and str(len(good_rows) + 1) in shown
    assert "values must be greater than or equal to" in shown and "2024-03-04T00:00:00" in shown


@pytest.mark.spark
def test_validate_job_without_a_manifest_fails(spark, tmp_path, caplog):
    (tmp_path / "warehouse").mkdir()
    assert validate.main(job_argv(tmp_path), spark=spark) == 1
    assert "no decode manifest at" in caplog.text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("--suite", "kafak"), "unknown suite 'kafak'"),
        (("--param", "crc_error_budget=lots"), "crc_error_budget must be a number: 'lots'"),
        (("--date", "01/03/2024"), "not a date YYYY-MM-DD"),
    ],
)
def test_validate_job_bad_arguments_exit_2(tmp_path, capsys, change, message):
    argv = job_argv(tmp_path)
    flag, value = change
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    else:
        argv += [flag, value]
    with pytest.raises(SystemExit) as exited:
        validate.parse_args(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.parametrize("bad_bytes", [5_000, 5_001])  # the gate is 5 % of 100,000 bytes
def test_bad_bytes_are_checked_against_the_decode_gate(spark, good_rows, tmp_path, bad_bytes):
    outcome = run_suite(spark, good_rows, len(good_rows), tmp_path, bad_bytes=bad_bytes)
    if bad_bytes <= 5_000:
        assert outcome.failures == []
        return
    (failure,) = outcome.critical_failures
    assert failure["expectation"] == "unexpected_rows_expectation"
    assert "5001" in str(failure) and "100000" in str(failure)

"""The decode and validate jobs record their day in the metrics table (real Spark runs), a
decode that fails records why, and every suite checks the day's volume against it."""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import io
import json

import pytest
from report_lake import write_config

from expectations import registry
from expectations.checks import RunFacts, rows_near_usual_volume
from jobs import decode, metrics, report, report_page, validate
from jobs.lake import read_day
from wirecodecs.samples import write_sample_day

DAY = dt.date(2026, 11, 20)


def volume_expectation(trailing, **given):
    params = registry.get("kafka").resolve(given)  # every suite takes the volume parameters
    return rows_near_usual_volume(RunFacts(DAY, {}, trailing), params)


def test_volume_passes_until_enough_earlier_days_are_known():
    found = volume_expectation([100, 100])
    assert (found.min_value, found.max_value) == (0, None)
    assert "only 2 earlier day(s)" in found.meta["why"] and found.meta["critical"] is False


def test_volume_band_around_the_trailing_median_critical_when_configured():
    found = volume_expectation([90, 300, 100, 110], volume_critical=1)
    assert (found.min_value, found.max_value) == (74, 136)  # 105 x 0.7 = 73.5, x 1.3 = 136.5
    assert found.meta["critical"] is True and found.meta["trailing_median"] == 105


def quietly(job, argv, spark) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return job.main(argv, spark=spark)


@pytest.mark.spark
def test_decode_and_validate_write_their_metrics_rows(spark, tmp_path):
    landing = tmp_path / "landing" / "hercules" / f"dt={DAY}"
    write_sample_day("hercules", landing, DAY, seed=3)
    warehouse, reports = tmp_path / "warehouse", tmp_path / "reports"
    lake = ["--date", DAY.isoformat(), "--warehouse", str(warehouse), "--reports", str(reports)]
    argv = ["--source", "hercules", "--envelope", "hercules", "--landing", str(landing), *lake]
    # a run that fails its gate: the report says why rather than "not run"
    assert quietly(decode, [*argv, "--max-error-rate", "0"], spark) != 0
    config = write_config(tmp_path / "sources.yaml", tmp_path, ["hercules"])
    failed = report.build(*report.load_sources(config, str(tmp_path)), DAY, 1)
    (entry,) = failed["sources"]
    assert entry["status"] == "decode failed" and failed["header"]["failed"] == 1
    assert entry["failure"]["reason"].startswith("error rate ")
    assert "is above --max-error-rate 0.0000%; nothing written." in entry["failure"]["reason"]
    first_line = html.escape(entry["failure"]["reason"].splitlines()[0])
    assert first_line in report_page.render(failed)
    assert quietly(decode, argv, spark) == 0
    assert metrics.read(str(warehouse), "decode_failure", DAY, DAY) == []
    # three earlier days with twice the rows: today is outside the usual band
    rows = read_day(str(warehouse / "hercules"), DAY)
    (today,) = metrics.read(str(warehouse), "decode", DAY, DAY)
    for back in (1, 2, 3):
        earlier = {**today, "rows": 2 * rows.num_rows}
        del earlier["dt"], earlier["source"]
        metrics.write_row(str(warehouse), "decode", "hercules", DAY - dt.timedelta(back), earlier)
    assert quietly(validate, ["--source", "hercules", "--suite", "hercules", *lake], spark) == 0

    assert today["rows"] == rows.num_rows
    start = dt.datetime.combine(DAY, dt.time(), dt.UTC)
    times = [t for t in rows.column("event_time").to_pylist() if t is not None]
    assert sum(today["event_hours"]) == sum(start <= t < start + dt.timedelta(1) for t in times)
    paths = {tag["path"] for tags in rows.column("tags").to_pylist() for tag in tags}
    assert {entry["name"] for entry in today["names"]} == paths
    quarantine = read_day(str(warehouse / "_quarantine" / "hercules"), DAY)
    assert {e["kind"] for e in today["errors"]} == set(quarantine.column("error_kind").to_pylist())
    assert (
        today["bad_byte_rate"]
        == json.loads(
            (warehouse / "_manifests" / "hercules" / f"dt={DAY}" / "manifest.json").read_text()
        )["totals"]["bad_byte_rate"]
    )

    (checked,) = metrics.read(str(warehouse), "validate", DAY, DAY)
    assert checked["critical_success"] is True and checked["failed"] == 1
    (failure,) = checked["failures"]
    assert failure["expectation"] == "expect_table_row_count_to_be_between"
    assert failure["critical"] is False and failure["observed"] == str(rows.num_rows)

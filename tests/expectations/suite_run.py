"""Helpers shared by the suite tests: validate rows with a registered suite on local Spark,
and key the failures so a test can say which expectation failed on which column."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from expectations import registry, runner
from expectations.checks import RunFacts


def manifest(source: str, day: dt.date, records_good: int, *, bad_bytes: int = 0, **totals) -> dict:
    """The decode manifest of a source whose run counted `records_good` rows and left
    `bad_bytes` of 100,000 undecoded under a 5 % gate (more `totals` as given)."""
    totals = {
        "records_good": records_good,
        "rows": records_good,
        "bytes_total": 100_000,
        "bytes_decoded": 100_000 - bad_bytes,
        **totals,
    }
    return {
        "source": source,
        "format": source,
        "options": {},
        "dt": day.isoformat(),
        "max_bad_byte_rate": 0.05,
        "totals": totals,
    }


def validate_rows(
    spark, suite: str, rows: list[dict], schema: pa.Schema, facts: RunFacts, tmp_path, **params
) -> runner.Outcome:
    """`rows` (of `schema`) as a Spark frame, validated with the registered `suite` built
    for `facts` and `params`; data docs under tmp_path/docs."""
    frame = spark.createDataFrame(pa.Table.from_pylist(rows, schema=schema))
    built = registry.get(suite).build(facts, params)
    return runner.validate(frame, built, suite, str(tmp_path / "docs"), f"{suite} test rows")


def failed(failures: list[dict]) -> dict[tuple, dict]:
    """Failures keyed by (expectation type, what it checks: column, first column of a pair,
    column list or query; "None" for table-level expectations)."""
    return {
        (
            item["expectation"],
            str(
                item["kwargs"].get("column")
                or item["kwargs"].get("column_A")
                or item["kwargs"].get("column_list")
                or item["kwargs"].get("unexpected_rows_query")
            ),
        ): item
        for item in failures
    }

"""Helpers shared by the suite tests: validate rows with a registered suite on local Spark,
and key the failures so a test can say which expectation failed on which column."""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from expectations import registry, runner
from expectations.checks import RunFacts
from jobs import lake, layout


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


def land_day(warehouse: Path, table: str, rows: pa.Table, manifest: dict) -> None:
    """`rows` committed as partition D of `table`, and the source's manifest naming that
    version of it, as the decode job leaves them."""
    day = dt.date.fromisoformat(manifest["dt"])
    location = layout.table_dir(str(warehouse), table)
    run = Path(layout.run_dir(location, day, "test"))
    run.mkdir(parents=True)
    pq.write_table(rows, run / "part-00000.parquet")
    versions = {location: lake.replace_day(location, day, str(run))}
    path = Path(layout.manifest_path(str(warehouse), manifest["source"], day))
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**manifest, "outputs": {"versions": versions}}))


def parquet_day(spark, table: pa.Table, folder: Path) -> tuple:
    """`table` written as one Parquet part under `folder`, read back as the validate job
    reads a day: the Spark frame and its files."""
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "part-0.parquet")
    files = [str(folder / "part-0.parquet")]
    return spark.read.parquet(*files), files


def validate_rows(
    spark, suite: str, rows: list[dict], schema: pa.Schema, facts: RunFacts, tmp_path, **params
) -> runner.Outcome:
    """`rows` (of `schema`) as a Parquet day, validated with the registered `suite` built
    for `facts` and `params`; data docs under tmp_path/docs."""
    table = pa.Table.from_pylist(rows, schema=schema)
    tmp_path.mkdir(parents=True, exist_ok=True)
    frame, files = parquet_day(spark, table, Path(tempfile.mkdtemp(prefix="day-", dir=tmp_path)))
    built = registry.get(suite).build(facts, params)
    name = f"{suite} test rows"
    return runner.validate(frame, built, suite, str(tmp_path / "docs"), name, files)


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

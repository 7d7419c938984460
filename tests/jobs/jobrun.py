"""Helpers shared by the decode job tests: run the job in this process and read back the
partitions and the manifest it left."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
from pathlib import Path

import pyarrow as pa

from jobs import decode, lake


def run_quietly(spark, argv: list[str]) -> int:
    """decode.main on `spark`, its printed summary swallowed; returns the exit code."""
    with contextlib.redirect_stdout(io.StringIO()):
        return decode.main(argv, spark=spark)


def read_manifest(warehouse: Path, source: str, day: str) -> dict | None:
    """The run's manifest, None when the run left none."""
    path = warehouse / "_manifests" / source / f"dt={day}" / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else None


def read_day(warehouse: Path, table: str, day: str) -> pa.Table | None:
    """Partition `day` of `table` (its folder in the warehouse: "kafka", "_quarantine/kafka")
    as the lake's readers see it, in file order (source_file, byte_offset, then offset where
    there is one); None when the table has no such day."""
    table = lake.read_day(str(warehouse / table), dt.date.fromisoformat(day))
    if table is None:
        return None
    keys = [key for key in ("source_file", "byte_offset", "offset") if key in table.column_names]
    return table.sort_by([(key, "ascending") for key in keys])


def decoded_day(spark, source: str, day: str, landing: Path, warehouse: Path, *args: str) -> dict:
    """Run the job for `source`'s `day` over `landing` (more arguments in `args`) and read
    back what it left: exit code, rows and quarantine in file order, manifest."""
    argv = ["--source", source, "--date", day, "--landing", str(landing)]
    argv += ["--warehouse", str(warehouse), "--reports", str(warehouse.parent / "reports")]
    code = run_quietly(spark, [*argv, *args])
    return {
        "code": code,
        "rows": read_day(warehouse, source, day),
        "quarantine": read_day(warehouse, f"_quarantine/{source}", day),
        "manifest": read_manifest(warehouse, source, day),
    }

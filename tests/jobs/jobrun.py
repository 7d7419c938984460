"""Helpers shared by the decode job tests: run the job in this process and read back the
partitions and the manifest it left."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

from jobs import decode


def run_quietly(spark, argv: list[str]) -> int:
    """decode.main on `spark`, its printed summary swallowed; returns the exit code."""
    with contextlib.redirect_stdout(io.StringIO()):
        return decode.main(argv, spark=spark)


def read_manifest(warehouse: Path, source: str, day: str) -> dict | None:
    """The run's manifest, None when the run left none."""
    path = warehouse / "_manifests" / source / f"dt={day}" / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else None


def read_dir(path: Path) -> pa.Table | None:
    """A Parquet folder in file order (source_file, byte_offset, then offset where there is
    one), None when the run wrote none."""
    if not path.exists():
        return None
    table = ds.dataset(path, format="parquet").to_table()
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
        "rows": read_dir(warehouse / source / f"dt={day}"),
        "quarantine": read_dir(warehouse / "_quarantine" / source / f"dt={day}"),
        "manifest": read_manifest(warehouse, source, day),
    }

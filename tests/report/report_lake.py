"""A generated lake for the report tests and its benchmark: sample days of several sources
decoded without Spark (the executors' own `decode_unit`, run in this process), each day's
metrics rows written as the decode and validate jobs write them, and trouble injected on
chosen days."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from pyarrow import fs as pafs

import wirecodecs
from jobs import layout, metrics, storage
from jobs.parts import QUARANTINE, Unit, Work, decode_unit
from wirecodecs import samples
from wirecodecs.registry import resolve_options

SEED = 7  # every day of a source is the same sample but for its dates
MARKER = "_SUCCESS"


# source -> (envelope, payload, decoder options) as dags/sources.yaml declares them
SOURCES = {
    "kafka": ("kafka", "raw", {}),
    "inlong": ("inlong", "raw", {"framing": "length_prefixed"}),
    "inlong_messages": ("inlong", "raw", {"framing": "message"}),
    "inlong_kafka": ("kafka", "inlong", {}),
    "cernan": ("cernan", "raw", {"event_time_field": "event_time"}),
    "hercules": ("hercules", "raw", {}),
    "hercules_kafka": ("kafka", "hercules", {}),
    "heka": ("heka", "raw", {}),
}


def write_config(path: Path, data_root: Path, sources: list[str]) -> Path:
    """A sources config naming `sources` over `data_root` (one suite each, named after it)."""
    lines = [f"paths:\n  data_root: {data_root}", "sources:"]
    for name in sources:
        envelope, payload, _ = SOURCES[name]
        lines += [
            f"  {name}:",
            f"    envelope: {envelope}",
            f"    payload: {payload}",
            "    decode: {}",
            f"    validate: {{suite: {name}}}",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def land(data_root: Path, source: str, day: dt.date) -> Path:
    landing = Path(layout.landing_dir(str(data_root / "landing"), source, day))
    shutil.rmtree(landing, ignore_errors=True)
    samples.write_sample_day(source, landing, day, seed=SEED)
    return landing


def decode_day(data_root: Path, source: str, day: dt.date, landing: Path) -> dict:
    """Decode a landed day into its partitions, write its manifest and metrics row; the
    manifest."""
    warehouse = str(data_root / "warehouse")
    envelope, payload, options = SOURCES[source]
    fmt = wirecodecs.source_format(envelope, payload)
    options = dict(options)
    if "hmac_keys_file" in fmt.options:
        secrets = data_root / "secrets" / "heka_hmac_keys.json"
        secrets.parent.mkdir(parents=True, exist_ok=True)
        secrets.write_bytes(samples.SAMPLE_SECRETS["heka_hmac_keys.json"])
        options["hmac_keys_file"] = str(secrets)
    options = resolve_options(fmt, options)
    staging = {None: layout.partition_dir(warehouse, source, day)}
    for table in fmt.tables:
        staging[table] = layout.partition_dir(warehouse, layout.table_name(source, table), day)
    staging[QUARANTINE] = layout.quarantine_dir(warehouse, source, day)
    for folder in staging.values():
        shutil.rmtree(folder, ignore_errors=True)
    work = Work(envelope, payload, options, pafs.LocalFileSystem(), staging, day)
    files = sorted(
        path
        for path in landing.rglob("*")
        if path.is_file()
        and not any(part.startswith((".", "_")) for part in path.relative_to(landing).parts)
        and fmt.data_file(str(path.relative_to(landing)))
    )
    reports = [
        decode_unit(fmt, Unit(index, str(path), str(path), path.stat().st_size), work)
        for index, path in enumerate(files)
    ]
    accounts = [report["accounting"] for report in reports]
    totals = {
        key: sum(account[key] for account in accounts)
        for key in accounts[0]
        if isinstance(accounts[0][key], int)
    }
    totals["files"] = len(accounts)
    totals["table_rows"] = {t: sum(a["table_rows"][t] for a in accounts) for t in fmt.tables}
    totals["bad_byte_rate"] = (totals["bytes_total"] - totals["bytes_decoded"]) / totals[
        "bytes_total"
    ]
    manifest = {
        "source": source,
        "format": fmt.name,
        "dt": day.isoformat(),
        "landing": str(landing),
        "outputs": {"quarantine": staging[QUARANTINE]},
        "run": {"started_at": f"{day + dt.timedelta(days=1)}T03:00:00+00:00"},
        "totals": totals,
        "files": accounts,
    }
    location = layout.manifest_path(warehouse, source, day)
    storage.write_json(location, manifest)
    figures = metrics.merge(report["figures"] for report in reports)
    metrics.record_decode(warehouse, manifest, figures, location)
    return manifest


def validated(data_root: Path, source: str, day: dt.date, passed: int = 12) -> dict:
    """A passing validation of the day, as the validate job reports it; its metrics row."""
    reports = data_root / "reports"
    report = {
        "source": source,
        "table": source,
        "suite": source,
        "dt": day.isoformat(),
        "validated_at": f"{day + dt.timedelta(days=1)}T03:10:00+00:00",
        "statistics": {
            "evaluated_expectations": passed,
            "successful_expectations": passed,
            "unsuccessful_expectations": 0,
        },
        "results": [],
        "failures": [],
        "critical_success": True,
        "data_docs": layout.join(layout.data_docs_dir(str(reports), source, day), "index.html"),
        "result_path": layout.validation_path(str(reports), source, day),
    }
    metrics.record_validation(str(data_root / "warehouse"), report)
    return report


Trouble = Callable[[Path], None]


def build_lake(
    data_root: Path,
    sources: list[str],
    days: list[dt.date],
    trouble: dict[tuple[str, dt.date], Trouble | None],
) -> None:
    """Every source on every day; `trouble[(source, day)]` changes the landed files before
    decoding (None: the day never lands)."""
    for source in sources:
        for day in days:
            change = trouble.get((source, day), lambda landing: None)
            if change is None:
                continue
            landing = land(data_root, source, day)
            change(landing)
            decode_day(data_root, source, day, landing)
            validated(data_root, source, day)


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())

"""Earlier sample days written quickly, so that a demo's report has trends to show.

A landed sample day is decoded in this process by the executors' own code
(`jobs.parts.decode_unit`, no Spark: a small day takes a fraction of a second), its
parts committed, manifest and metrics row written as the decode job writes them. Nothing is
validated: such a day's own report says "not run", while later days compare against it.
"""

from __future__ import annotations

import datetime as dt
import shutil
import uuid
from pathlib import Path

import yaml
from pyarrow import fs as pafs

import wirecodecs
from jobs import lake, layout, metrics, storage
from jobs.decode_settings import with_data_root
from jobs.parts import QUARANTINE, decode_unit, output_tables
from jobs.units import COUNTS, Unit, Work
from wirecodecs import samples
from wirecodecs.options import resolve


def land(landing_root: Path, source: str, day: dt.date, seed: int) -> Path:
    """The sample day of `source` in its landing folder (replacing one there)."""
    landing = Path(layout.landing_dir(str(landing_root), source, day))
    shutil.rmtree(landing, ignore_errors=True)
    samples.write_sample_day(source, landing, day, seed=seed)
    return landing


def data_files(landing: Path, fmt: wirecodecs.WireFormat) -> list[Path]:
    """The files the decode job would decode (markers and hidden files aside)."""
    return sorted(
        path
        for path in landing.rglob("*")
        if path.is_file()
        and not any(part.startswith((".", "_")) for part in path.relative_to(landing).parts)
        and fmt.data_file(str(path.relative_to(landing)))
    )


def decode_day(
    warehouse: str,
    source: str,
    envelope: str,
    payload: str,
    options: dict,
    day: dt.date,
    landing: Path,
) -> dict:
    """Decode a landed day into its partitions, manifest and metrics row; the manifest."""
    fmt = wirecodecs.source_format(envelope, payload)
    options = resolve(fmt, options)
    tables = output_tables(warehouse, source, fmt.tables)
    run_id = uuid.uuid4().hex[:12]
    run_dirs = {key: layout.run_dir(table, day, run_id) for key, table in tables.items()}
    work = Work(
        envelope, payload, options, fmt.row_schema(options), pafs.LocalFileSystem(), run_dirs, day
    )
    reports = [
        decode_unit(fmt, Unit(index, str(path), str(path), path.stat().st_size), work)
        for index, path in enumerate(data_files(landing, fmt))
    ]
    accounts = [report.to_dict() for report in reports]
    totals = {key: sum(report.count(key) for report in reports) for key in COUNTS}
    totals["files"] = len(accounts)
    totals["table_rows"] = {t: sum(a["table_rows"][t] for a in accounts) for t in fmt.tables}
    bad = totals["bytes_total"] - totals["bytes_decoded"]
    totals["bad_byte_rate"] = bad / totals["bytes_total"] if totals["bytes_total"] else 0.0
    manifest = {
        "source": source,
        "format": fmt.name,
        "dt": day.isoformat(),
        "landing": str(landing),
        "outputs": {"quarantine": tables[QUARANTINE]},
        "run": {"started_at": dt.datetime.now(dt.UTC).isoformat(), "sample_history": True},
        "totals": totals,
        "files": accounts,
    }
    lake.replace_days(tables, run_dirs, day)
    location = layout.manifest_path(warehouse, source, day)
    figures = metrics.merge(report.figures for report in reports)
    metrics.record_decode(warehouse, manifest, figures, location)
    storage.write_json(location, manifest)
    return manifest


def write_history(
    config_path: Path, data_root: Path, sources: list[str], date: dt.date, days: int, seed: int
) -> None:
    """The `days` sample days before `date` of each source, decoded as the sources config
    says (envelope, payload, decoder options)."""
    config = yaml.safe_load(Path(config_path).read_text())
    for source in sources:
        entry = config["sources"][source]
        options = with_data_root(entry["decode"].get("options", {}), str(data_root))
        for back in range(days, 0, -1):
            day = date - dt.timedelta(days=back)
            landing = land(data_root / "landing", source, day, seed)
            envelope, payload = entry["envelope"], entry.get("payload", "raw")
            warehouse = str(data_root / "warehouse")
            decode_day(warehouse, source, envelope, payload, options, day, landing)

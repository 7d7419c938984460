"""The daily data-quality report: one page for one day across every source, with trends.

    ./wirelake report --date D [--days 30] [--config dags/sources.yaml] [--data-root DIR]

Reads the metrics table (`jobs.metrics`: never old partitions of the data) and the sources
config, and writes <reports>/_daily/dt=D/report.json and index.html: the sources expected,
landed, passed and failed; one row per source with its figures and links; anomalies in
words; charts as inline SVG. The page holds no external reference, so it opens offline.
report.json depends only on the metrics table and the config: a rerun writes the same bytes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from expectations import volume
from jobs import layout, metrics, report_page, storage
from jobs.decode_settings import GATES

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = ROOT / "dags" / "sources.yaml"
DAILY_DIR = "_daily"
TOP_ERRORS = 3  # error kinds shown per source
RATE_FACTOR = 2.0  # a rate is above its usual level at this multiple of its trailing median
RATE_MARGIN = 0.01  # ... and at least one percentage point above it (small days vary)
STATUSES = ("passed", "warnings", "critical failure", "decode failed", "not run", "no landing")
# A suite's error budget for its checksum verdicts (the suites' own default is 0).
CHECKSUM_BUDGETS = ("crc_error_budget", "hmac_error_budget")


# --- configuration ------------------------------------------------------------------------


def load_sources(config_path: Path, data_root: str | None) -> tuple[dict, dict[str, str]]:
    """The sources of the config ({name: {"tables", "landing", "day_folder", "marker",
    "thresholds"}}, config order) and the lake's paths (warehouse, reports) as
    dags/dag_factory.py resolves them."""
    config = yaml.safe_load(Path(config_path).read_text())
    paths = config.get("paths", {})
    root = data_root or os.environ.get("WIRELAKE_DATA") or paths.get("data_root", "data")
    root = root if "://" in root else str((ROOT / root).resolve())
    fields = {"data_root": root}
    lake = {
        key: paths.get(key, default).format(**fields)
        for key, default in (
            ("warehouse", "{data_root}/warehouse"),
            ("reports", "{data_root}/reports"),
        )
    }
    sources = {}
    for name, source in config["sources"].items():
        settings = {**config.get("defaults", {}), **source.get("defaults", {})}
        validate = (
            source["validate"] if isinstance(source["validate"], list) else [source["validate"]]
        )
        landing = paths.get("landing", "{data_root}/landing/{source}/dt={ds}")
        params = next((e.get("params", {}) for e in validate if e.get("table", name) == name), {})
        budget = next((params[key] for key in CHECKSUM_BUDGETS if key in params), None)
        sources[name] = {
            "tables": list(dict.fromkeys(entry.get("table", name) for entry in validate)),
            "landing": landing.format(data_root=root, source=name, ds="{ds}"),
            "day_folder": day_folder(landing, name),
            "marker": settings.get("landing_check", {}).get("marker", "_SUCCESS"),
            "thresholds": {  # the source's gates, drawn on its trend charts
                "bad_byte_rate": float(
                    source.get("decode", {}).get("max_bad_byte_rate", GATES["max_bad_byte_rate"])
                ),
                "checksum_invalid_share": None if budget is None else float(budget),
            },
        }
    return sources, lake


def day_folder(template: str, source: str) -> str:
    """A day's landing folder relative to the landing root, `{ds}` left for the day: the part
    of the `paths.landing` template from its first segment that names the source or the day
    ("{data_root}/landing/{source}/dt={ds}" -> "kafka/dt={ds}")."""
    parts = _without_query(template).rstrip("/").split("/")
    first = next(
        (n for n, part in enumerate(parts) if "{source}" in part or "{ds}" in part), len(parts)
    )
    return "/".join(parts[first:]).replace("{source}", source)


def _without_query(location: str) -> str:
    """A URI without its query (`s3://lake/x?endpoint_override=...`); a local path as it is."""
    return location.partition("?")[0] if "://" in location else location


def file_name(location: str, landing: str | None, folder: str) -> str:
    """A landed file as the report names it: relative to the landing root, the day's folder
    `folder` ("kafka/dt=2026-11-26") and the file's path inside it, on every store alike.
    The decode job records each file as its day's landing folder `landing` joined with that
    path: an absolute path on the machine that decoded it, or a URI with its query. A file
    outside `landing` (which a decode does not record) is named by its file name alone."""
    path = _without_query(location)
    inside = _without_query(landing).rstrip("/") + "/" if landing else None
    if inside and path.startswith(inside):
        return "/".join(part for part in (folder, path[len(inside) :]) if part)
    return path.rsplit("/", 1)[-1]


def names_in_text(text: str, landing: str, folder: str) -> str:
    """`text` (a decode's failure reason) with the files of landing folder `landing` named as
    `file_name` names them."""
    head, query = _without_query(landing).rstrip("/"), landing.partition("?")[2]
    if query and "://" in landing:
        text = text.replace(f"?{query}", "")
    return text.replace(f"{head}/", f"{folder}/" if folder else "")


def _named(row: Mapping, landing: str, folder: str) -> dict:
    """A decode row with the files of its error examples named relative to the landing root."""
    errors = []
    for error in row["errors"]:
        file, _, offset = error["example"].rpartition("@")
        errors.append({**error, "example": f"{file_name(file, landing, folder)}@{offset}"})
    return {**row, "errors": errors}


# --- figures ------------------------------------------------------------------------------


def build(sources: Mapping, lake: Mapping[str, str], date: dt.date, days: int) -> dict:
    """Everything report.json holds for day `date`, from the metrics table."""
    first = date - dt.timedelta(days=max(days, volume.VOLUME_DAYS + 1) - 1)
    decoded = metrics.read(lake["warehouse"], "decode", first, date)
    validated = metrics.read(lake["warehouse"], "validate", date, date)
    history: dict[str, dict[str, dict]] = {name: {} for name in sources}
    for row in decoded:
        if row["source"] in history:
            source = sources[row["source"]]
            folder = source["day_folder"].replace("{ds}", row["dt"])
            history[row["source"]][row["dt"]] = _named(row, row["landing"], folder)
    checks = {row["table"]: row for row in validated}
    failed = {
        row["source"]: row for row in metrics.read(lake["warehouse"], "decode_failure", date, date)
    }
    entries, anomalies = [], []
    for name, source in sources.items():
        today = history[name].get(date.isoformat())
        earlier = [
            history[name][day.isoformat()]
            for day in _days(date - dt.timedelta(days=volume.VOLUME_DAYS), volume.VOLUME_DAYS)
            if day.isoformat() in history[name]
        ]
        tables = [checks.get(table) for table in source["tables"]]
        entries.append(_entry(name, source, lake, date, today, earlier, tables, failed.get(name)))
        if today is not None:
            anomalies += [{"source": name, **found} for found in find_anomalies(today, earlier)]
            outside = sum(row["events_outside_window"] for row in tables if row)
            if outside:
                anomalies.append(
                    {
                        "source": name,
                        "kind": "events outside the window",
                        "message": f"{outside:,} event(s) outside the run's time window",
                        "value": outside,
                    }
                )
    shown = _days(date - dt.timedelta(days=days - 1), days)
    counts = {status: sum(e["status"] == status for e in entries) for status in STATUSES}
    return {
        "date": date.isoformat(),
        "days": days,
        "header": {
            "expected": len(entries),
            "landed": len(entries) - counts["no landing"],
            "passed": counts["passed"],
            "warnings": counts["warnings"],
            "failed": counts["critical failure"] + counts["decode failed"],
            "not_run": counts["not run"],
            "no_landing": counts["no landing"],
            "anomalies": len(anomalies),
        },
        "sources": entries,
        "anomalies": anomalies,
        "trends": {
            "dates": [day.isoformat() for day in shown],
            "sources": {
                name: {
                    key: [
                        _round((history[name].get(day.isoformat()) or {}).get(key)) for day in shown
                    ]
                    for key in ("rows", "bad_byte_rate", "checksum_invalid_share")
                }
                for name in sources
            },
            "thresholds": {name: dict(source["thresholds"]) for name, source in sources.items()},
        },
    }


def _days(start: dt.date, count: int) -> list[dt.date]:
    return [start + dt.timedelta(days=n) for n in range(count)]


def _round(value: Any) -> Any:
    """Floats rounded so that report.json reads the same wherever it is computed."""
    return round(value, 6) if isinstance(value, float) else value


def status(
    landed: bool, today: Mapping | None, tables: list[Mapping | None], failure: Mapping | None
) -> str:
    if failure is not None:
        return "decode failed"
    if today is None:
        return "not run" if landed else "no landing"
    if any(row is None for row in tables):
        return "not run"
    if not all(row["critical_success"] for row in tables):
        return "critical failure"
    return "warnings" if any(row["failed"] for row in tables) else "passed"


def _entry(
    name: str,
    source: Mapping,
    lake: Mapping[str, str],
    date: dt.date,
    today: Mapping | None,
    earlier: list[Mapping],
    tables: list[Mapping | None],
    failure: Mapping | None,
) -> dict:
    landing = source["landing"].format(ds=date.isoformat())
    landed = today is not None or storage.exists(layout.join(landing, source["marker"]))
    entry: dict[str, Any] = {"source": name, "status": status(landed, today, tables, failure)}
    if failure is not None:  # figures, if any, are those of an earlier run
        folder = source["day_folder"].replace("{ds}", date.isoformat())
        entry["failure"] = {
            "failed_at": failure["failed_at"],
            "reason": names_in_text(failure["reason"], landing, folder),
        }
    entry["expectations"] = {
        "passed": sum(row["passed"] for row in tables if row),
        "failed": sum(row["failed"] for row in tables if row),
        "failures": [
            {"table": table, **failure}
            for table, row in zip(source["tables"], tables, strict=True)
            if row
            for failure in row["failures"]
        ],
    }
    page = layout.join(lake["reports"], DAILY_DIR, layout.partition(date))
    entry["links"] = {
        "data_docs": {
            table: _relative(
                layout.join(layout.data_docs_dir(lake["reports"], table, date), "index.html"), page
            )
            for table, row in zip(source["tables"], tables, strict=True)
            if row
        },
        "manifest": None,
        "quarantine": None,
    }
    if today is None:
        return entry
    band = volume.volume_band([row["rows"] for row in earlier])
    median = None if band is None else band[0]
    entry.update(
        rows=today["rows"],
        rows_median_7d=_round(None if median is None else float(median)),
        rows_change=_round(today["rows"] / median - 1 if median else None),
        bad_byte_rate=_round(today["bad_byte_rate"]),
        checksum_invalid_share=_round(today["checksum_invalid_share"]),
        quarantined_frames=today["quarantined_frames"],
        top_errors=sorted(today["errors"], key=lambda e: (-e["count"], e["kind"]))[:TOP_ERRORS],
        landed_at=today["landed_at"],
        decoded_at=today["decoded_at"],
        bytes={key: today[f"bytes_{key}"] for key in metrics.BYTE_KINDS},
        event_hours=today["event_hours"],
        events_before=today["events_before"],
        events_after=today["events_after"],
    )
    entry["links"]["manifest"] = _relative(today["manifest"], page)
    entry["links"]["quarantine"] = today["quarantine"] and _relative(today["quarantine"], page)
    return entry


def _relative(target: str, page: str) -> str | None:
    """A link from the page's folder to `target`, when both are local paths (a page never
    points outside its own filesystem)."""
    if "://" in target or "://" in page:
        return None
    return os.path.relpath(target, page)


def _usual(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if len(known) >= volume.VOLUME_MIN_DAYS else None


def find_anomalies(today: Mapping, earlier: list[Mapping]) -> list[dict]:
    """What is unusual about a source's day against the days before it (`earlier`, oldest
    first): each as {"kind", "message", "value"}. Nothing is compared before the metrics
    table knows VOLUME_MIN_DAYS earlier days."""
    found = []
    band = volume.volume_band([row["rows"] for row in earlier])
    if band is not None and not band[1] <= today["rows"] <= band[2]:
        median, low, high = band
        change = today["rows"] / median - 1 if median else float("inf")
        found.append(
            {
                "kind": "volume",
                "message": f"{today['rows']:,} rows, {change:+.0%} against the trailing "
                f"{volume.VOLUME_DAYS}-day median {median:,.0f} (usual {low:,}-{high:,})",
                "value": today["rows"],
            }
        )
    for key, label in (
        ("checksum_invalid_share", "checksum-invalid share"),
        ("bad_byte_rate", "bad-byte rate"),
    ):
        usual, value = _usual([row[key] for row in earlier]), today[key]
        if (
            usual is not None
            and value is not None
            and value > max(RATE_FACTOR * usual, usual + RATE_MARGIN)
        ):
            found.append(
                {
                    "kind": label,
                    "message": f"{label} {value:.2%}, usually {usual:.2%} (trailing median)",
                    "value": _round(value),
                }
            )
    if len(earlier) < volume.VOLUME_MIN_DAYS:
        return found
    seen_kinds = {error["kind"] for row in earlier for error in row["errors"]}
    for error in today["errors"]:
        if error["kind"] not in seen_kinds:
            found.append(
                {
                    "kind": "new error kind",
                    "message": f"new error kind {error['kind']}: {error['count']:,} frame(s), "
                    f"first at {error['example']}",
                    "value": error["count"],
                }
            )
    today_names = {(e["kind"], e["name"]): e["count"] for e in today["names"]}
    before = [{(e["kind"], e["name"]) for e in row["names"]} for row in earlier]
    appeared = set(today_names) - set().union(*before)
    vanished = set.intersection(*before) - set(today_names)
    for kind, name in sorted(appeared | vanished):
        if name == metrics.OTHER_NAMES:
            continue
        if (kind, name) in appeared:
            what = f"appeared ({today_names[kind, name]:,} entries)"
        else:
            what = f"vanished (seen on each of the {len(before)} days before)"
        found.append(
            {
                "kind": f"name {what.split()[0]}",
                "message": f"{kind}: {name!r} {what}",
                "value": name,
            }
        )
    return found


# --- the run ------------------------------------------------------------------------------


def write(report: Mapping, lake: Mapping[str, str]) -> str:
    """report.json and index.html under <reports>/_daily/dt=D/; returns the page's location."""
    folder = layout.join(lake["reports"], DAILY_DIR, f"dt={report['date']}")
    storage.write_json(layout.join(folder, "report.json"), report)
    page = layout.join(folder, "index.html")
    filesystem, path = storage.resolve(page)
    with filesystem.open_output_stream(path) as out:
        out.write(report_page.render(report).encode("utf-8"))
    return page


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="./wirelake report", description=__doc__.split("\n")[0])
    parser.add_argument("--date", required=True, type=dt.date.fromisoformat, help="day D")
    parser.add_argument("--days", type=int, default=30, help="days of trends (default 30)")
    parser.add_argument(
        "--config",
        type=Path,
        default=Path(os.environ.get("WIRELAKE_CONFIG") or DEFAULT_CONFIG),
        help="sources config (default: $WIRELAKE_CONFIG or dags/sources.yaml)",
    )
    parser.add_argument("--data-root", help="lake root (default: $WIRELAKE_DATA or the config's)")
    args = parser.parse_args(argv)
    if args.days < 1:
        parser.error("--days must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sources, lake = load_sources(args.config, args.data_root)
    report = build(sources, lake, args.date, args.days)
    page = write(report, lake)
    header = report["header"]
    print(
        f"report {args.date}: {header['expected']} sources expected, {header['landed']} landed, "
        f"{header['passed']} passed, {header['warnings']} with warnings, "
        f"{header['failed']} failed, {header['anomalies']} anomalies"
    )
    for anomaly in report["anomalies"]:
        print(f"  {anomaly['source']}: {anomaly['message']}")
    print(f"page: {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

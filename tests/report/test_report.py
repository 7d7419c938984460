"""The daily report over the generated lake (`report_lake`: four sources, ten days, trouble
injected on known days). Expected figures are computed here from the Parquet partitions and the
manifests, not from the metrics table the report reads."""

from __future__ import annotations

import collections
import datetime as dt
import html.parser
import json
import statistics
import xml.etree.ElementTree as ET
from pathlib import Path

from report_lake import DAYS, INJECTED, LAST_DAY, SPIKE_DAY

from jobs import lake, report


def run_report(root: Path, day: dt.date, days: int = 10) -> dict:
    argv = ["--date", day.isoformat(), "--days", str(days)]
    assert (
        report.main([*argv, "--config", str(root / "sources.yaml"), "--data-root", str(root)]) == 0
    )
    return json.loads(daily(root, day, "report.json").read_text())


def daily(root: Path, day: dt.date, name: str) -> Path:
    return root / "reports" / "_daily" / f"dt={day}" / name


def partition(root: Path, table: str, day: dt.date):
    return lake.read_day(str(root / "warehouse" / table), day)


def manifest(root: Path, source: str, day: dt.date) -> dict:
    path = root / "warehouse" / "_manifests" / source / f"dt={day}" / "manifest.json"
    return json.loads(path.read_text())


def expected_figures(root: Path, source: str, day: dt.date) -> dict:
    """A source's day as the report should state it, from its partitions and manifest."""
    rows = partition(root, source, day).to_pylist()
    verdicts = [
        [row[key] for key in row if key.endswith(("crc_valid", "hmac_valid"))] for row in rows
    ]
    checked = sum(any(v is not None for v in row) for row in verdicts)
    invalid = sum(any(v is False for v in row) for row in verdicts)
    start = dt.datetime.combine(day, dt.time(), dt.UTC)
    hours = [0] * 24
    for row in rows:
        if row["event_time"] is not None and start <= row["event_time"] < start + dt.timedelta(1):
            hours[(row["event_time"] - start) // dt.timedelta(hours=1)] += 1
    bad = partition(root, f"_quarantine/{source}", day)
    errors = collections.defaultdict(list)
    for row in bad.to_pylist() if bad is not None else []:
        errors[row["error_kind"]].append((row["source_file"], row["byte_offset"]))
    top = sorted(errors.items(), key=lambda item: (-len(item[1]), item[0]))[: report.TOP_ERRORS]
    totals = manifest(root, source, day)["totals"]
    return {
        "rows": len(rows),
        "quarantined_frames": sum(len(found) for found in errors.values()),
        "checksum_invalid_share": round(invalid / checked, 6) if checked else None,
        "bad_byte_rate": round(1 - totals["bytes_decoded"] / totals["bytes_total"], 6),
        "bytes": {
            kind: totals[f"bytes_{kind}"]
            for kind in ("decoded", "quarantined", "truncated_tail", "skipped")
        },
        "event_hours": hours,
        "top_errors": [
            {"kind": kind, "count": len(found), "example": "{}@{}".format(*min(found))}
            for kind, found in top
        ],
    }


def test_figures_equal_those_of_the_partitions_and_manifests(lake_root):
    got = run_report(lake_root, SPIKE_DAY)
    for entry in got["sources"]:
        figures = expected_figures(lake_root, entry["source"], SPIKE_DAY)
        assert {key: entry[key] for key in figures} == figures, entry["source"]
        earlier = [len(partition(lake_root, entry["source"], day)) for day in DAYS[1:8]]
        assert entry["rows_median_7d"] == statistics.median(earlier)
        trend = [len(partition(lake_root, entry["source"], day)) for day in DAYS[:9]]
        assert got["trends"]["sources"][entry["source"]]["rows"] == [None, *trend]  # from 10-31
    assert got["header"] == {
        "expected": 4,
        "landed": 4,
        "passed": 4,
        "warnings": 0,
        "failed": 0,
        "not_run": 0,
        "no_landing": 0,
        "anomalies": 2,
    }


def test_flags_exactly_the_injected_anomalies(lake_root):
    for day in DAYS:
        got = run_report(lake_root, day)
        flagged = {(anomaly["source"], anomaly["kind"]) for anomaly in got["anomalies"]}
        assert flagged == INJECTED.get(day, set()), day
    spike = run_report(lake_root, SPIKE_DAY)["anomalies"]
    appeared = next(a for a in spike if a["kind"] == "name appeared")
    threads = partition(lake_root, "hercules", SPIKE_DAY).column("tags").to_pylist()
    carrying = sum(tag["path"] == "properties/threadNo" for tags in threads for tag in tags)
    assert (
        appeared["value"] == "properties/threadNo"
        and f"({carrying:,} entries)" in appeared["message"]
    )


def test_a_day_without_landing_is_stated(lake_root):
    got = run_report(lake_root, LAST_DAY)
    status = {entry["source"]: entry["status"] for entry in got["sources"]}
    assert status == {
        "kafka": "passed",
        "hercules": "passed",
        "heka": "no landing",
        "inlong": "passed",
    }
    assert got["header"]["landed"] == 3 and got["header"]["no_landing"] == 1


class _Page(html.parser.HTMLParser):
    """The tags and attributes of a page (raises on nothing: records what it sees)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_page_is_self_contained_and_its_charts_are_svg(lake_root):
    run_report(lake_root, SPIKE_DAY)
    page = daily(lake_root, SPIKE_DAY, "index.html").read_text()
    parsed = _Page()
    parsed.feed(page)
    parsed.close()
    names = [tag for tag, _ in parsed.tags]
    assert names[0] == "html" and "body" in names
    assert not {"script", "link", "img", "iframe", "object"} & set(names)
    assert "http" not in page and "url(" not in page.replace("url(#", "") and "@import" not in page
    for tag, attrs in parsed.tags:
        for key in ("href", "src"):
            target = attrs.get(key)
            assert target is None or target.startswith(("#", "..")), (tag, attrs)
    charts = page.split("<svg")[1:]
    assert len(charts) == 3
    for chart in charts:
        root = ET.fromstring("<svg" + chart.split("</svg>")[0] + "</svg>")
        assert root.tag == "svg" and root.get("viewBox")
        assert root.findall(".//path") or root.findall(".//rect")
    links = [attrs["href"] for tag, attrs in parsed.tags if tag == "a"]
    folder = daily(lake_root, SPIKE_DAY, "")
    assert any("manifest.json" in link and (folder / link).exists() for link in links)


def test_rerun_writes_the_same_report_json(lake_root):
    run_report(lake_root, SPIKE_DAY)
    first = daily(lake_root, SPIKE_DAY, "report.json").read_bytes()
    run_report(lake_root, SPIKE_DAY)
    assert daily(lake_root, SPIKE_DAY, "report.json").read_bytes() == first

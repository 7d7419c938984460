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

from report_lake import DAYS, INJECTED, LAST_DAY, SPIKE_DAY, write_config

from jobs import lake, metrics, report, report_page


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
        # named relative to the landing root: "<source>/dt=<day>/<path in the day's folder>"
        name = Path(row["source_file"]).relative_to(root / "landing").as_posix()
        errors[row["error_kind"]].append((name, row["byte_offset"]))
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
    """The tags, attributes and text of a page (raises on nothing: records what it sees)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def visible_text(page: str) -> str:
    """The page's text as a reader sees it (tags between the words of a name left out)."""
    parsed = _Page()
    parsed.feed(page)
    parsed.close()
    return "".join(parsed.text)


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


def test_files_are_named_relative_to_the_landing_root(lake_root):
    """The decode recorded each file as an absolute path of the machine that decoded it; the
    report names it from the landing root, and neither of its files holds that path."""
    got = run_report(lake_root, SPIKE_DAY)
    page = visible_text(daily(lake_root, SPIKE_DAY, "index.html").read_text())
    warehouse = str(lake_root / "warehouse")
    recorded = {
        row["source"]: row for row in metrics.read(warehouse, "decode", SPIKE_DAY, SPIKE_DAY)
    }
    shown = 0
    for entry in got["sources"]:
        examples = sorted(e["example"] for e in recorded[entry["source"]]["errors"])
        assert examples and all(example.startswith(f"{lake_root}/landing/") for example in examples)
        for error in entry["top_errors"]:
            name, offset = error["example"].rsplit("@", 1)
            assert name.startswith(f"{entry['source']}/dt={SPIKE_DAY}/"), name
            assert f"{lake_root / 'landing' / name}@{offset}" in examples
            assert error["example"] in page
            shown += 1
    assert shown >= len(got["sources"])
    for name in ("index.html", "report.json"):
        assert str(lake_root) not in daily(lake_root, SPIKE_DAY, name).read_text(), name


S3_LANDING = "s3://lake/landing/{source}/dt={ds}?endpoint_override=http://127.0.0.1:9"


def test_files_on_an_object_store_are_named_the_same(lake_root, tmp_path):
    """Metrics of a decode whose landing was on S3 (URIs with their query): the same names,
    and the page holds no URI."""
    day = SPIKE_DAY.isoformat()
    (row,) = [
        r
        for r in metrics.read(str(lake_root / "warehouse"), "decode", SPIKE_DAY, SPIKE_DAY)
        if r["source"] == "kafka"
    ]
    local = row["landing"]
    remote = S3_LANDING.format(source="kafka", ds=day)
    head, query = remote.split("?")
    row = {
        **row,
        "landing": remote,
        "errors": [
            {**e, "example": e["example"].replace(local, head).replace("@", f"?{query}@")}
            for e in row["errors"]
        ],
    }
    assert all(e["example"].startswith("s3://lake/landing/kafka/") for e in row["errors"])
    del row["dt"], row["source"]
    warehouse = tmp_path / "warehouse"
    metrics.write_row(str(warehouse), "decode", "kafka", SPIKE_DAY, row)
    config = write_config(tmp_path / "sources.yaml", tmp_path, ["kafka"])
    text = config.read_text().replace("paths:\n", f'paths:\n  landing: "{S3_LANDING}"\n')
    config.write_text(text)
    got = report.build(*report.load_sources(config, str(tmp_path)), SPIKE_DAY, 1)
    (entry,) = got["sources"]
    expected = run_report(lake_root, SPIKE_DAY)["sources"][0]
    assert entry["top_errors"] == expected["top_errors"]
    page = report_page.render(got)
    assert "s3://" not in page and "127.0.0.1" not in page and "http" not in page


def test_a_failed_decodes_reason_names_files_from_the_landing_root():
    day, name = "dt=2026-11-26", "orders-1/00000000000000000000.log"
    query = "?endpoint_override=http://127.0.0.1:9"
    cases = [  # the day's landing folder, a file in it as the decode job names it
        (f"/srv/lake/landing/kafka/{day}", f"/srv/lake/landing/kafka/{day}/{name}"),
        (f"s3://lake/landing/kafka/{day}{query}", f"s3://lake/landing/kafka/{day}/{name}{query}"),
    ]
    for landing, file in cases:
        reason = f"error rate 9% is above 5%; nothing written.\n    {file}@12 bad_crc: x"
        named = report.names_in_text(reason, landing, f"kafka/{day}")
        assert named.splitlines()[1] == f"    kafka/{day}/{name}@12 bad_crc: x", landing

"""The trend charts' geometry, read back from the SVG the page holds: every y axis starts at
0, tops out at 115 % of the larger of the figure's highest value and the source's gate, and
the gate is a line at its value. Positions are computed here from the plot area's rectangle
and that rule, not by the chart code."""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from report_lake import SPIKE_DAY

from jobs import report, report_page
from jobs.decode_settings import GATES

ROOT = Path(__file__).resolve().parents[2]
DATES = [(dt.date(2026, 11, 1) + dt.timedelta(days=n)).isoformat() for n in range(30)]
HEADROOM = 1.15  # docs/report.md: the axis runs from 0 to 115 % of max(highest value, gate)


def trends(series: dict, thresholds: dict) -> dict:
    """report.json's `trends` for one source "s" over 30 days."""
    figures = {
        key: [None] * len(DATES) for key in ("rows", "bad_byte_rate", "checksum_invalid_share")
    }
    figures.update(series)
    return {"dates": DATES, "sources": {"s": figures}, "thresholds": {"s": thresholds}}


def _points(d: str) -> list[tuple[float, float]]:
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", d)]
    return list(zip(numbers[0::2], numbers[1::2], strict=True))


class Chart:
    """One small multiple of a trends SVG: its plot area, y ticks, lines and texts."""

    def __init__(self, svg: ET.Element, source: str, key: str) -> None:
        ids = {element.get("id"): element for element in svg.iter()}
        self.group = ids[f"trends-trend-{source}-{key}"]
        area = _points(ids[f"trends-area-{source}-{key}"].find("path").get("d"))
        xs, ys = {x for x, _ in area}, {y for _, y in area}
        self.left, self.right, self.top, self.bottom = min(xs), max(xs), min(ys), max(ys)
        gate = ids.get(f"trends-gate-{source}-{key}")
        self.gate = None if gate is None else _points(gate.find("path").get("d"))
        line = ids.get(f"trends-line-{source}-{key}")
        self.line = None if line is None else _points(line.find("path").get("d"))
        self.texts = [text.text for text in self.group.iter("text")]
        self.yticks = {}  # label -> y of its tick mark
        for tick in self.group.iter("g"):
            if re.fullmatch(r"trends-ytick_\d+", tick.get("id", "")):
                self.yticks[tick.find(".//text").text] = float(tick.find(".//use").get("y"))

    def y(self, value: float, top: float) -> float:
        """Where `value` is drawn on an axis from 0 (the area's bottom) to `top`."""
        return self.bottom - value / top * (self.bottom - self.top)


def chart(svg_text: str, source: str, key: str) -> Chart:
    return Chart(ET.fromstring(svg_text), source, key)


def test_a_rate_under_its_gate_is_drawn_from_zero_with_the_gate_line():
    """2.970 % to 2.975 % under a 5 % gate: the axis runs 0-5.75 %, the gate is at 5 %, and
    the change moves the line by less than a tenth of a pixel (it filled the chart before)."""
    rates = [0.0297] * 29 + [0.02975]
    svg = report_page.trends_chart(trends({"bad_byte_rate": rates}, {"bad_byte_rate": 0.05}))
    got = chart(svg, "s", "bad_byte_rate")
    top = HEADROOM * 5.0
    assert got.yticks["0%"] == pytest.approx(got.bottom, abs=0.01)  # the axis starts at 0
    for label, y in got.yticks.items():
        assert y == pytest.approx(got.y(float(label.rstrip("%")), top), abs=0.01), label
    (start, end) = got.gate
    assert start[1] == end[1] == pytest.approx(got.y(5.0, top), abs=0.01)
    assert (start[0], end[0]) == pytest.approx((got.left, got.right), abs=0.01)  # across
    ys = [y for _, y in got.line]
    assert ys[0] == pytest.approx(got.y(2.970, top), abs=0.01)
    assert ys[-1] == pytest.approx(got.y(2.975, top), abs=0.01)
    assert abs(ys[-1] - ys[0]) < 0.1
    assert "% of bytes" in got.texts and "gate 5%" in got.texts


def test_a_rate_above_its_gate_sets_the_top():
    rates = [0.01, 0.12, 0.02]
    thresholds = {"bad_byte_rate": 0.05, "checksum_invalid_share": 0.01}
    shares = [0.002, 0.004, 0.001]
    svg = report_page.trends_chart(
        trends({"bad_byte_rate": rates, "checksum_invalid_share": shares}, thresholds)
    )
    bad = chart(svg, "s", "bad_byte_rate")
    top = HEADROOM * 12.0
    assert bad.gate[0][1] == pytest.approx(bad.y(5.0, top), abs=0.01)
    assert min(y for _, y in bad.line) == pytest.approx(bad.y(12.0, top), abs=0.01)
    share = chart(svg, "s", "checksum_invalid_share")  # the budget is above every share
    assert share.gate[0][1] == pytest.approx(share.y(1.0, HEADROOM * 1.0), abs=0.01)
    assert "% of checked rows" in share.texts and "budget 1%" in share.texts


def test_rows_from_zero_and_no_gate_where_the_source_has_none():
    rows = [100_000, 100_040, 99_980]
    svg = report_page.trends_chart(
        trends({"rows": rows}, {"bad_byte_rate": 0.05, "checksum_invalid_share": None})
    )
    got = chart(svg, "s", "rows")
    top = HEADROOM * 100_040
    assert got.yticks["0"] == pytest.approx(got.bottom, abs=0.01)
    for label, y in got.yticks.items():
        assert y == pytest.approx(got.y(float(label.replace(",", "")), top), abs=0.01), label
    assert got.gate is None and "rows" in got.texts
    ys = [y for _, y in got.line]
    assert max(ys) - min(ys) < 0.1 * (got.bottom - got.top)
    empty = chart(svg, "s", "checksum_invalid_share")  # no figures, no budget: 0 to 1 %
    assert empty.gate is None and empty.line is None
    assert len(empty.yticks) > 1
    for label, y in empty.yticks.items():
        assert y == pytest.approx(empty.y(float(label.rstrip("%")), 1.0), abs=0.01), label


def test_gates_come_from_the_sources_config():
    sources, _ = report.load_sources(ROOT / "dags" / "sources.yaml", "/lake")
    gates = {name: source["thresholds"] for name, source in sources.items()}
    assert gates["kafka"] == {"bad_byte_rate": 0.05, "checksum_invalid_share": 0.05}
    assert gates["inlong_messages"]["bad_byte_rate"] == 0.1
    assert gates["heka"]["checksum_invalid_share"] == 0.01  # hmac_error_budget
    assert gates["hercules_kafka"]["checksum_invalid_share"] == 0.0
    assert gates["cernan"]["checksum_invalid_share"] is None  # a packet budget is no checksum's


def test_the_reports_charts_draw_each_sources_gate(lake_root):
    """The tests' lake's config sets no gates: every source has the decode's default."""
    argv = ["--date", SPIKE_DAY.isoformat(), "--days", "10", "--data-root", str(lake_root)]
    assert report.main([*argv, "--config", str(lake_root / "sources.yaml")]) == 0
    folder = lake_root / "reports" / "_daily" / f"dt={SPIKE_DAY}"
    got = json.loads((folder / "report.json").read_text())
    page = (folder / "index.html").read_text()
    svg = next(part for part in page.split("<svg")[1:] if 'id="trends-' in part)
    svg = "<svg" + svg.split("</svg>")[0] + "</svg>"
    gate = 100 * GATES["max_bad_byte_rate"]
    for name, series in got["trends"]["sources"].items():
        assert got["trends"]["thresholds"][name]["bad_byte_rate"] == GATES["max_bad_byte_rate"]
        drawn = chart(svg, name, "bad_byte_rate")
        top = HEADROOM * max([gate] + [100 * v for v in series["bad_byte_rate"] if v is not None])
        assert drawn.gate[0][1] == pytest.approx(drawn.y(gate, top), abs=0.01), name
        assert drawn.yticks["0%"] == pytest.approx(drawn.bottom, abs=0.01), name

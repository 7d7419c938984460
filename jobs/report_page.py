"""The daily report as one self-contained HTML page: inline styles, charts as inline SVG.

Charts are drawn by matplotlib's SVG backend with text kept as text (`svg.fonttype: none`:
small pages, searchable and sharp when printed). Each SVG is cut down to what an HTML page
needs: no XML prolog, DOCTYPE or metadata block, ids prefixed per chart so that charts do
not share them, and `href` instead of `xlink:href`, so the page names no URL at all and
opens the same offline.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Mapping

import matplotlib

matplotlib.use("svg")

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, MaxNLocator

STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "wirelake",  # ids follow from the content, not from chance
    "font.family": "sans-serif",
    "font.size": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 8,
}
COLORS = {
    "decoded": "#4c78a8",
    "quarantined": "#e45756",
    "truncated_tail": "#f58518",
    "skipped": "#b279a2",
}
NONE = "-"  # a figure the day does not have
BADGE = {
    "passed": "#2e7d32",
    "warnings": "#b26a00",
    "critical failure": "#c62828",
    "decode failed": "#c62828",
    "not run": "#6a1b9a",
    "no landing": "#546e7a",
}
CSS = """
body { font: 14px/1.4 system-ui, sans-serif; color: #222;
       margin: 1.5em auto; max-width: 1200px; padding: 0 1em; }
h1 { font-size: 1.5em; margin: 0 0 .3em; } h2 { font-size: 1.15em; margin: 1.4em 0 .4em; }
.summary { display: flex; flex-wrap: wrap; gap: .6em; }
.summary div { border: 1px solid #ccc; border-radius: 6px; padding: .4em .8em; min-width: 6em; }
.summary b { display: block; font-size: 1.5em; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: .3em .4em; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.badge { color: #fff; border-radius: 4px; padding: 0 .4em; white-space: nowrap; }
.anomalies li { margin: .2em 0; } .none { color: #2e7d32; }
.chart svg { max-width: 100%; height: auto; }
small, .muted { color: #666; } .nw { white-space: nowrap; }
@media print { body { max-width: none; margin: 0; } .chart, tr { break-inside: avoid; } }
"""


def render(report: Mapping) -> str:
    """The page of one report (report.json's content)."""
    header = report["header"]
    boxes = [
        ("expected", header["expected"]),
        ("landed", header["landed"]),
        ("passed", header["passed"]),
        ("warnings", header["warnings"]),
        ("failed", header["failed"]),
        ("not run", header["not_run"]),
        ("no landing", header["no_landing"]),
        ("anomalies", header["anomalies"]),
    ]
    summary = "".join(f"<div><b>{value}</b>{label}</div>" for label, value in boxes)
    anomalies = (
        "".join(
            f"<li><b>{_e(a['source'])}</b>: {_e(a['message'])}</li>" for a in report["anomalies"]
        )
        or '<li class="none">none</li>'
    )
    sources = report["sources"]
    landed = [entry for entry in sources if "rows" in entry]
    charts = [
        ("Event time per hour of the day (UTC)", hours_chart(landed)),
        (f"Trends over {report['days']} days", trends_chart(report["trends"])),
        ("Byte accounting", bytes_chart(landed)),
    ]
    sections = "".join(
        f'<h2>{_e(title)}</h2><div class="chart">{svg}</div>' for title, svg in charts if svg
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>wirelake data quality {report['date']}</title><style>{CSS}</style></head><body>"
        f"<h1>wirelake data quality — {report['date']}</h1>"
        f'<p class="muted">From the metrics table: every source of the config, day '
        f"{report['date']} against the days before it.</p>"
        f'<div class="summary">{summary}</div>'
        f'<h2>Anomalies</h2><ul class="anomalies">{anomalies}</ul>'
        f"<h2>Sources</h2>{sources_table(sources)}"
        '<p class="muted"><small>Files are named relative to the landing root (<code>paths.'
        "landing</code> of the sources config), as &lt;source&gt;/dt=&lt;day&gt;/&lt;file&gt;"
        "@&lt;byte offset&gt; with the default layout.</small></p>"
        f"{sections}</body></html>\n"
    )


def _e(value: object) -> str:
    return html.escape(str(value))


def _percent(value: float | None) -> str:
    return NONE if value is None else f"{value:.2%}"


def _link(label: str, target: str | None) -> str:
    return f'<a href="{_e(target)}">{_e(label)}</a>' if target else ""


def _breakable(name: str) -> str:
    """A file name that wraps only after a "/" (not inside "dt=2026-11-26")."""
    parts = name.split("/")
    spans = [f"{part}/" for part in parts[:-1]] + parts[-1:]
    return "<wbr>".join(f'<span class="nw">{_e(part)}</span>' for part in spans)


def sources_table(sources: list[Mapping]) -> str:
    head = (
        "<tr><th>source</th><th>status</th><th>rows</th><th>vs 7-day median</th>"
        "<th>bad bytes</th><th>checksum invalid</th><th>quarantined</th><th>top errors</th>"
        "<th>expectations</th><th>landed</th><th>links</th></tr>"
    )
    rows = []
    for entry in sources:
        color = BADGE[entry["status"]]
        badge = f'<span class="badge" style="background:{color}">{_e(entry["status"])}</span>'
        if "failure" in entry:  # its first line; report.json has the files and frames
            badge += f"<br><small>{_e(entry['failure']['reason'].splitlines()[0])}</small>"
        checks = entry["expectations"]
        failures = "".join(
            f"<br><small>{'CRITICAL ' if f['critical'] else ''}{_e(f['expectation'])}"
            f"({_e(f['target'])}): {_e(f['observed'])}</small>"
            for f in checks["failures"]
        )
        links = entry["links"]
        anchors = [
            _link(f"data docs {table}", target) for table, target in links["data_docs"].items()
        ]
        anchors += [_link("manifest", links["manifest"]), _link("quarantine", links["quarantine"])]
        cells = [f"<td><b>{_e(entry['source'])}</b></td><td>{badge}</td>"]
        if "rows" in entry:
            change = entry["rows_change"]
            errors = "<br>".join(
                f"{_e(e['kind'])} x{e['count']:,} <small>{_breakable(e['example'])}</small>"
                for e in entry["top_errors"]
            )
            cells.append(
                f'<td class="n">{entry["rows"]:,}</td>'
                f'<td class="n">{NONE if change is None else f"{change:+.1%}"}</td>'
                f'<td class="n">{_percent(entry["bad_byte_rate"])}</td>'
                f'<td class="n">{_percent(entry["checksum_invalid_share"])}</td>'
                f'<td class="n">{entry["quarantined_frames"]:,}</td><td>{errors}</td>'
            )
        else:
            cells.append('<td colspan="6" class="muted">no figures for this day</td>')
        cells.append(
            f"<td>{checks['passed']} passed, {checks['failed']} failed{failures}</td>"
            f"<td><small>{_e(entry.get('landed_at') or NONE)}</small></td>"
            f"<td>{'<br>'.join(anchor for anchor in anchors if anchor)}</td>"
        )
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


# --- charts -------------------------------------------------------------------------------

_ID = re.compile(r'id="([^"]+)"')


def _svg(figure, name: str) -> str:
    """The figure as an SVG element for an HTML page (see the module docstring)."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(figure)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", svg).replace("xlink:href", "href")
    for found in set(_ID.findall(svg)):
        svg = svg.replace(f'id="{found}"', f'id="{name}-{found}"')
        svg = svg.replace(f'href="#{found}"', f'href="#{name}-{found}"')
        svg = svg.replace(f"url(#{found})", f"url(#{name}-{found})")
    return svg


def _grid(count: int, columns: int, height: float):
    rows = -(-count // columns)
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(
            rows, columns, figsize=(10, height * rows), squeeze=False, layout="constrained"
        )
    for extra in axes.flat[count:]:
        extra.set_visible(False)
    return figure, axes.flat


def hours_chart(landed: list[Mapping]) -> str:
    """Small multiples: events per hour of day D, per source."""
    if not landed:
        return ""
    with plt.rc_context(STYLE):
        figure, axes = _grid(len(landed), 3, 1.5)
        for ax, entry in zip(axes, landed, strict=False):
            ax.bar(range(24), entry["event_hours"], width=0.85, color=COLORS["decoded"])
            ax.set_title(
                f"{entry['source']}  (before the day {entry['events_before']:,}, "
                f"after {entry['events_after']:,})",
                loc="left",
            )
            ax.set_xticks([0, 6, 12, 18, 23])
            ax.set_xlim(-0.6, 23.6)
        return _svg(figure, "hours")


# key, title, y axis label (units), drawn in percent
TREND_SERIES = (
    ("rows", "rows", "rows", False),
    ("bad_byte_rate", "bad-byte rate", "% of bytes", True),
    ("checksum_invalid_share", "checksum-invalid share", "% of checked rows", True),
)
GATE_LABEL = {"bad_byte_rate": "gate", "checksum_invalid_share": "budget"}
GATE_COLOR = "#c62828"
HEADROOM = 1.15  # a trend's y axis runs from 0 to this multiple of its highest value or gate


def trend_top(values: list[float], gate: float | None, least: float) -> float:
    """The top of a trend's y axis, which starts at 0: room for its highest value and its
    gate, so that a figure reads against the gate rather than against its own wiggles (a
    bad-byte rate from 2.970 % to 2.975 % under a 5 % gate is a flat line); `least` when
    both are 0."""
    highest = max([*values, gate or 0.0])
    return HEADROOM * highest if highest > 0 else least


def _percent_tick(value: float, _position) -> str:
    return f"{value:.4g}%"


def _count_tick(value: float, _position) -> str:
    return f"{value:,.0f}"


def trends_chart(trends: Mapping) -> str:
    """Small multiples: one row per source, one column per figure, over the report's days.
    Each y axis starts at 0 (`trend_top`) and carries its unit; the source's gate for the
    figure (`thresholds`: the decode's max_bad_byte_rate, the suite's checksum error budget)
    is a dashed line with its value."""
    names = list(trends["sources"])
    if not names:
        return ""
    dates = trends["dates"]
    thresholds = trends.get("thresholds", {})
    with plt.rc_context(STYLE):
        figure, axes = _grid(len(names) * len(TREND_SERIES), len(TREND_SERIES), 1.2)
        axes = list(axes)
        for row, name in enumerate(names):
            for column, (key, label, unit, percent) in enumerate(TREND_SERIES):
                ax = axes[row * len(TREND_SERIES) + column]
                ax.set_gid(f"trend-{name}-{key}")
                ax.patch.set_gid(f"area-{name}-{key}")
                scale = 100 if percent else 1
                gate = thresholds.get(name, {}).get(key)
                gate = None if gate is None else scale * gate
                values = trends["sources"][name][key]
                points = [(x, scale * v) for x, v in enumerate(values) if v is not None]
                if points:
                    xs, ys = zip(*points, strict=True)
                    ax.plot(
                        xs,
                        ys,
                        marker="o",
                        markersize=2,
                        linewidth=1,
                        color=COLORS["decoded"],
                        gid=f"line-{name}-{key}",
                    )
                    ax.plot(xs[-1:], ys[-1:], marker="o", markersize=3, color="#222")
                if gate:  # a gate of 0 is the axis itself
                    ax.axhline(
                        gate,
                        color=GATE_COLOR,
                        linewidth=0.8,
                        dashes=(4, 2),
                        gid=f"gate-{name}-{key}",
                    )
                    ax.text(
                        0.995,
                        gate,
                        f"{GATE_LABEL[key]} {gate:.3g}%",
                        transform=ax.get_yaxis_transform(),
                        ha="right",
                        va="bottom",
                        color=GATE_COLOR,
                        fontsize=6.5,
                    )
                ax.set_ylim(0, trend_top([v for _, v in points], gate, 1.0))
                ax.yaxis.set_major_locator(MaxNLocator(3, integer=not percent))
                ax.yaxis.set_major_formatter(
                    FuncFormatter(_percent_tick if percent else _count_tick)
                )
                ax.set_ylabel(unit)
                ax.set_xlim(-0.5, len(dates) - 0.5)
                ax.set_xticks([0, len(dates) - 1], [dates[0][5:], dates[-1][5:]])
                ax.set_title(f"{name}: {label}", loc="left")
        return _svg(figure, "trends")


def bytes_chart(landed: list[Mapping]) -> str:
    """One stacked bar per source: the day's bytes by what became of them (shares)."""
    if not landed:
        return ""
    with plt.rc_context(STYLE):
        figure, ax = plt.subplots(figsize=(10, 0.3 * len(landed) + 0.8), layout="constrained")
        names = [entry["source"] for entry in landed][::-1]
        left = [0.0] * len(names)
        for kind, color in COLORS.items():
            totals = [sum(entry["bytes"].values()) or 1 for entry in landed][::-1]
            shares = [
                100 * entry["bytes"][kind] / t
                for entry, t in zip(landed[::-1], totals, strict=True)
            ]
            ax.barh(names, shares, left=left, color=color, label=kind.replace("_", " "))
            left = [a + b for a, b in zip(left, shares, strict=True)]
        for y, entry in enumerate(landed[::-1]):
            ax.text(
                100.5,
                y,
                f"{sum(entry['bytes'].values()):,} bytes, {entry['bad_byte_rate']:.2%} not decoded",
                va="center",
            )
        ax.set_xlim(0, 130)
        ax.set_xticks([0, 25, 50, 75, 100])
        ax.set_xlabel("share of the day's bytes (%)")
        ax.legend(ncols=4, loc="lower left", bbox_to_anchor=(0, 1), frameon=False, fontsize=7)
        return _svg(figure, "bytes")

"""The daily page in headless Chromium (tests/report/browser.py): it loads nothing from any
network, the browser builds its three charts with each source's gate line, names files
from the landing root, and the screenshot shows the gate lines."""

from __future__ import annotations

import re

import numpy as np
import pytest
from browser import render
from PIL import Image
from report_lake import LAKE_SOURCES, SPIKE_DAY

from jobs import report, report_page

pytestmark = pytest.mark.browser  # headless Chromium

WIDTH, HEIGHT = 1200, 3000


def test_the_check_sees_a_pages_requests(tmp_path):
    """A page that names a remote image and stylesheet: both requests are found (none leaves
    the machine: names resolve to nothing)."""
    page = tmp_path / "remote.html"
    page.write_text(
        '<html><head><link rel="stylesheet" href="https://cdn.invalid/a.css"></head>'
        '<body><img src="http://wirelake-test.invalid/x.png"></body></html>'
    )
    got = render(page, tmp_path / "chromium", screenshot=False)
    assert sorted(got.requests) == [
        "http://wirelake-test.invalid/x.png",
        "https://cdn.invalid/a.css",
    ]


def test_chromium_renders_the_page_offline(lake_root, tmp_path):
    argv = ["--date", SPIKE_DAY.isoformat(), "--days", "10", "--data-root", str(lake_root)]
    assert report.main([*argv, "--config", str(lake_root / "sources.yaml")]) == 0
    page = lake_root / "reports" / "_daily" / f"dt={SPIKE_DAY}" / "index.html"
    got = render(page, tmp_path / "chromium", WIDTH, HEIGHT)

    assert got.requests == []
    assert got.dom.count("<svg") == 3
    for source in LAKE_SOURCES:
        assert f'id="trends-gate-{source}-bad_byte_rate"' in got.dom, source
    assert str(lake_root) not in got.dom
    text = re.sub(r"<[^>]+>", "", got.dom)  # what a reader sees, names unbroken by <wbr>
    assert re.search(rf"kafka/dt={SPIKE_DAY}/[\w./-]+@\d+", text)

    image = np.asarray(Image.open(got.screenshot).convert("RGB")).astype(int)
    assert image.shape == (HEIGHT, WIDTH, 3)
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 50  # not a blank page
    # the gate lines: rows of the screenshot with many dashes of the gate's colour
    gate = np.array([int(report_page.GATE_COLOR[i : i + 2], 16) for i in (1, 3, 5)])
    red = (np.abs(image - gate).max(axis=2) <= 60) & (image[:, :, 0] - image[:, :, 1] > 80)
    dashes = (red[:, 1:] & ~red[:, :-1]).sum(axis=1)
    lines = np.flatnonzero(dashes >= 20)
    assert len(lines) == len(LAKE_SOURCES), lines  # one bad-byte gate per source

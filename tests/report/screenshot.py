"""The screenshot of docs/report.md: 30 sample days of every source of dags/sources.yaml
(a different sample each day, decoded without Spark by `operations.sample_history`, each with a
passing validation's metrics row), the last day's report rendered by headless Chromium.

    ./wirelake run python tests/report/screenshot.py [docs/daily-report.png]
"""

from __future__ import annotations

import datetime as dt
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml
from browser import render
from PIL import Image

from jobs import layout, metrics, report
from jobs.decode_settings import with_data_root
from operations import demo, sample_history

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "dags" / "sources.yaml"
DAY = dt.date(2026, 11, 26)
DAYS = 30
WIDTH = 1280


def validated(warehouse: str, reports: str, table: str, source: str, day: dt.date) -> None:
    """A passing validation of `table` on `day`, as the validate job records it."""
    metrics.record_validation(
        warehouse,
        {
            "source": source,
            "table": table,
            "suite": table,
            "dt": day.isoformat(),
            "validated_at": f"{day + dt.timedelta(days=1)}T03:10:00+00:00",
            "statistics": {
                "evaluated_expectations": 14,
                "successful_expectations": 14,
                "unsuccessful_expectations": 0,
            },
            "results": [],
            "failures": [],
            "critical_success": True,
            "data_docs": layout.join(layout.data_docs_dir(reports, table, day), "index.html"),
            "result_path": layout.validation_path(reports, table, day),
        },
    )


def build_lake(data_root: Path) -> None:
    config = yaml.safe_load(CONFIG.read_text())
    sources, lake = report.load_sources(CONFIG, str(data_root))
    demo.write_secrets(data_root)
    for name, entry in config["sources"].items():
        options = with_data_root(entry["decode"].get("options", {}), str(data_root))
        for back in range(DAYS - 1, -1, -1):
            day = DAY - dt.timedelta(days=back)
            landing = sample_history.land(data_root / "landing", name, day, day.toordinal())
            (landing / "_SUCCESS").touch()
            envelope, payload = entry["envelope"], entry.get("payload", "raw")
            sample_history.decode_day(
                lake["warehouse"], name, envelope, payload, options, day, landing
            )
            for table in sources[name]["tables"]:
                validated(lake["warehouse"], lake["reports"], table, name, day)


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="wirelake-screenshot-") as folder:
        data_root = Path(folder)
        build_lake(data_root)
        argv = ["--date", DAY.isoformat(), "--days", str(DAYS), "--config", str(CONFIG)]
        report.main([*argv, "--data-root", str(data_root)])
        page = data_root / "reports" / "_daily" / f"dt={DAY}" / "index.html"
        shot = render(page, data_root / "chromium", WIDTH, 8000).screenshot
        image = Image.open(shot).convert("RGB")
        pixels = np.asarray(image)
        used = np.flatnonzero((pixels < 250).any(axis=(1, 2)))  # rows with anything drawn
        image = image.crop((0, 0, WIDTH, int(used[-1]) + 24))
        image.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
            out, optimize=True
        )
    print(f"{out}: {image.width} x {image.height}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs" / "daily-report.png"))

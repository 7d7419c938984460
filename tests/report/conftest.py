"""The generated lake, built once for the report tests (they only read it and write pages)."""

from __future__ import annotations

from pathlib import Path

import pytest
import report_lake as lake


@pytest.fixture(scope="session")
def lake_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lake")
    lake.build_lake(root, lake.LAKE_SOURCES, lake.DAYS, lake.TROUBLE)
    lake.write_config(root / "sources.yaml", root, lake.LAKE_SOURCES)
    return root

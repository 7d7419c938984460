"""The generated lake, built once for the report tests (they only read it and write pages).

tests/scheduling goes on sys.path for `airflowrun`, the loopback alert receivers its tests
share with the report DAG's test."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import report_lake as lake

sys.path.append(str(Path(__file__).resolve().parents[1] / "scheduling"))


@pytest.fixture(scope="session")
def lake_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lake")
    lake.build_lake(root, lake.LAKE_SOURCES, lake.DAYS, lake.TROUBLE)
    lake.write_config(root / "sources.yaml", root, lake.LAKE_SOURCES)
    return root

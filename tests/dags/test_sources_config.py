"""Every source of dags/sources.yaml resolves against the registries its jobs look it up in:
the format (envelope + payload) and its decoder options in wirecodecs', each suite and its
parameters in the expectations registry, each suite's table among the format's tables.
The DAG folder cannot check this when it parses (it imports neither registry), so a typo
would otherwise surface only when a day's Spark job starts. Needs no Spark or Airflow.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from expectations import registry as suites
from wirecodecs import registry as formats
from wirecodecs.options import resolve

SOURCES = yaml.safe_load((Path(__file__).parents[2] / "dags" / "sources.yaml").read_text())[
    "sources"
]


def suite_entries(source: dict) -> list[dict]:
    """A source's `validate`: one entry, or a list of them (as dag_factory.validations)."""
    validate = source["validate"]
    return validate if isinstance(validate, list) else [validate]


@pytest.mark.parametrize("name", list(SOURCES))
def test_source_format_and_options_resolve(name):
    source = SOURCES[name]
    fmt = formats.source_format(source["envelope"], source.get("payload", "raw"))
    resolve(fmt, source["decode"].get("options", {}))


@pytest.mark.parametrize("name", list(SOURCES))
def test_source_suites_params_and_tables_resolve(name):
    source = SOURCES[name]
    fmt = formats.source_format(source["envelope"], source.get("payload", "raw"))
    for entry in suite_entries(source):
        spec = suites.get(entry["suite"])
        spec.resolve(entry.get("params", {}))
        assert spec.table is None or spec.table in fmt.tables, entry
        table = name if spec.table is None else f"{name}_{spec.table}"
        assert entry.get("table", name) == table, entry

"""The layers as imports: the operator commands (`operations/`) use the jobs, never the
reverse, and neither the DAG folder nor the jobs import them; what executors import to
decode a unit needs no Spark (nothing of the driver travels with it). Reads the sources
only: no Spark, no Airflow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXECUTOR_MODULES = ["parts", "units", "metrics", "layout", "storage"]


def imported(path: Path) -> set[str]:
    """The top-level names of the modules `path` imports, and `jobs.X` for a jobs module."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for module in modules:
            names.add(module.split(".")[0])
            if module.startswith("jobs."):
                names.add(".".join(module.split(".")[:2]))
    return names


@pytest.mark.parametrize("folder", ["jobs", "dags"])
def test_jobs_and_dags_do_not_import_the_operator_commands(folder):
    offenders = {
        str(path.relative_to(ROOT))
        for path in (ROOT / folder).rglob("*.py")
        if "operations" in imported(path)
    }
    assert offenders == set()


@pytest.mark.parametrize("module", EXECUTOR_MODULES)
def test_what_executors_import_needs_no_spark(module):
    names = imported(ROOT / "jobs" / f"{module}.py")
    assert "pyspark" not in names
    driver_modules = {"jobs.decode", "jobs.plan", "jobs.execute", "jobs.verify", "jobs.save"}
    assert not names & driver_modules


def test_the_suites_do_not_import_the_jobs():
    """The validate job uses the suites (`expectations/`), never the reverse: what both
    need (the usual volume) lives with the suites."""
    offenders = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "expectations").rglob("*.py")
        if "jobs" in imported(path)
    }
    assert offenders == set()

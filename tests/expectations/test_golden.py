"""Every format's suite gives the results the validation path gave before scan-shared
metrics (the golden files, written by that path), on a clean and a failing day."""

from __future__ import annotations

import json

import pytest
from golden_cases import GOLDEN, cases, comparable, run

CASES = cases()


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(CASES))
def test_results_equal_the_golden_files(spark, tmp_path, name):
    outcome = run(spark, CASES[name], tmp_path)
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    assert json.loads(json.dumps(comparable(outcome.result), default=str)) == golden

"""Every decoder's output on a fixed corpus is what it was when last meant to change.

The corpus and the digests are described in output_digests.py; the recorded digests in
tests/data/output_digests.json. A rewrite of a decoder (a compiled walk, columns instead
of rows) must leave every digest as it is; the failure lists the cases that differ.
"""

from __future__ import annotations

import pytest
from fuzz_targets import TARGETS
from output_digests import current, recorded


@pytest.mark.parametrize(
    ("target", "walk"),
    [(name, walk) for name in sorted(TARGETS) for walk in TARGETS[name].walks],
)
def test_output_is_unchanged(target: str, walk: str) -> None:
    expected, now = recorded(target), current(target, walk)
    assert sorted(now) == sorted(expected), "the corpus itself changed"
    changed = sorted(name for name in expected if now[name] != expected[name])
    assert not changed, f"{len(changed)} of {len(expected)} inputs changed, e.g. {changed[:5]}"

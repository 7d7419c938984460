"""Every decoder's output on a fixed corpus is what it was when last meant to change.

The corpus and the digests are described in output_digests.py; the recorded digests in
tests/data/output_digests.json. A rewrite of a decoder (a compiled walk, columns instead
of rows) must leave every digest as it is; the failure lists the cases that differ.
The corpus is swept as exhaustive tests are (tests/budget.py): every input under the
"full" profile, an evenly spread tenth of them under "quick"; the corpus itself is
compared whole either way.
"""

from __future__ import annotations

import pytest
from budget import sweep
from fuzz_targets import TARGETS
from output_digests import current, recorded


@pytest.mark.parametrize(
    ("target", "walk"),
    [(name, walk) for name in sorted(TARGETS) for walk in TARGETS[name].walks],
)
def test_output_is_unchanged(target: str, walk: str) -> None:
    expected = recorded(target)
    names = sweep(sorted(expected))
    now = current(target, walk, names)
    assert sorted(now) == sorted(expected), "the corpus itself changed"
    changed = [name for name in names if now[name] != expected[name]]
    assert not changed, f"{len(changed)} of {len(names)} inputs changed, e.g. {changed[:5]}"

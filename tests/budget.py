"""A property test's example budget, as a multiple of the loaded hypothesis profile's count
(tests/conftest.py): `settings(max_examples=examples(3))` tries 300 examples under "full"
(`./wirelake test`, CI) and 30 under "quick" (`./wirelake test --quick`). Read when the test
module is imported, after pytest has loaded the profile."""

from __future__ import annotations

from hypothesis import settings


def examples(scale: float) -> int:
    """`scale` times the loaded profile's max_examples, at least one."""
    return max(1, round(settings.default.max_examples * scale))

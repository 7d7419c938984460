"""How much work a test takes, as a share of the loaded hypothesis profile (tests/conftest.py).

A property test's example budget is a multiple of the profile's count:
`settings(max_examples=examples(3))` tries 300 examples under "full" (`./wirelake test`,
CI) and 30 under "quick" (`./wirelake test --quick`).

An exhaustive test (a byte flipped at every position, a file cut at every byte, every input
of a corpus) walks `sweep(positions, keep=...)`: every position under "full", and under
"quick" an evenly spread tenth of them (the profile's count over full's), always with the
first, the last and the `keep` positions the test exists for (frame boundaries, headers).
The subset follows from the positions and `keep` alone, so a commit always gets the same
verdict.

Both are read when called: at import or in a test, after pytest has loaded the profile."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from hypothesis import settings

T = TypeVar("T")


def examples(scale: float) -> int:
    """`scale` times the loaded profile's max_examples, at least one."""
    return max(1, round(settings.default.max_examples * scale))


def sweep(positions: Sequence[T], keep: Iterable[T] = ()) -> list[T]:
    """`positions` (in their order) as the loaded profile sweeps them: all of them under
    "full"; under a profile of fewer examples, the same share of them (its max_examples
    over full's, rounded down, at least two) evenly spread, the first and the last among
    them, and every position of `keep` (those not in `positions` are ignored)."""
    items = list(positions)
    have, full = settings.default.max_examples, settings.get_profile("full").max_examples
    if have >= full or len(items) <= 2:
        return items
    count = max(2, len(items) * have // full)
    step = (len(items) - 1) / (count - 1)
    chosen = {round(i * step) for i in range(count)}
    wanted = set(keep)
    chosen.update(index for index, item in enumerate(items) if item in wanted)
    return [items[index] for index in sorted(chosen)]

"""Every Heka codec test runs twice: with the compiled walk (`fastpath`, the decoder's
choice when numba is there) and with its pure-Python twin, so both meet the same vectors,
sidecars, mutation corpus and round trips (the compiled run is skipped without numba)."""

from __future__ import annotations

import pytest

from wirecodecs.heka import decoder


@pytest.fixture(scope="session", params=["compiled", "pure"], autouse=True)
def heka_walk(request):
    """Sets the decoder's walk for the session's tests with this parameter."""
    chosen, pure_below = decoder.COMPILED, decoder.PURE_BELOW
    decoder.PURE_BELOW = 0  # small inputs too take the walk under test
    walk = decoder.compiled_walk() if request.param == "compiled" else None
    if request.param == "compiled" and walk is None:
        pytest.skip("numba is missing: no compiled walk")
    decoder.COMPILED = walk
    yield request.param
    decoder.COMPILED, decoder.PURE_BELOW = chosen, pure_below

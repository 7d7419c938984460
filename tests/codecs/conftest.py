"""The codec tests' `each_walk` and `auto_walk` fixtures, and the kafka tests' `decode`
fixture (the shared helpers are in decoding.py).

A test that takes `each_walk` (or `decode`) runs once per walk, every decoder forced to it
(`wirecodecs.compiled.forced`) while the test runs: for the tests whose point is that both
walks meet the same vectors with the same expectations. Other tests run once, with the
decoders' own choice. WIRELAKE_WALK=pure|compiled keeps every test to that walk.
"""

from __future__ import annotations

import pytest
from decoding import decode_all

from wirecodecs import compiled

WALKS = ("pure", "compiled") if compiled.choice() == "auto" else (compiled.choice(),)


@pytest.fixture(scope="session", params=WALKS)
def each_walk(request) -> str:
    """The walk the test runs on (the compiled one is skipped without numba); forced
    for the test's call by `pytest_runtest_call`."""
    if request.param == "compiled":
        pytest.importorskip("numba")
    return request.param


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Every decoder takes the test's `each_walk` while it runs (scoped to the call, so that
    the session-scoped fixture, which Hypothesis allows, forces nothing between tests)."""
    params = getattr(item, "callspec", None)
    walk = params.params.get("each_walk") if params else None
    if walk is None:
        return (yield)
    with compiled.forced(walk):
        return (yield)


@pytest.fixture
def auto_walk(monkeypatch):
    """The decoders' own choice of walk (whatever WIRELAKE_WALK says), in a process that
    has read nothing and taken no compiled walk yet."""
    for walk in compiled.WALKS.values():
        monkeypatch.setattr(walk, "read", 0)
        monkeypatch.setattr(walk, "taken", False)
    with compiled.forced("auto"):
        yield monkeypatch


@pytest.fixture(scope="session")
def decode(each_walk):
    """`decoding.decode_all`, in a test that runs once per walk (the kafka tests)."""
    return decode_all

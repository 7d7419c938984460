"""Every cernan decoder test runs twice: with the compiled JSON walk (`fastjson.py`) and
with the pure path alone (fastavro and `render.py`), so both meet the same vectors, round
trips and mutation corpus with the same expectations."""

from __future__ import annotations

import pytest

from wirecodecs.cernan import decoder

WALKS = {"compiled": True, "pure": False}


@pytest.fixture(autouse=True, params=list(WALKS))
def walk(request):
    """`decoder.COMPILED` set for the test (the compiled walk needs numba)."""
    if WALKS[request.param]:
        pytest.importorskip("numba")
    chosen = decoder.COMPILED
    decoder.COMPILED = WALKS[request.param]
    try:
        yield request.param
    finally:
        decoder.COMPILED = chosen

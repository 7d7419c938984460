"""The loopback alert receivers, one pair per test module (each module counts its alerts)."""

from __future__ import annotations

import pytest
from airflowrun import receivers


@pytest.fixture(scope="module")
def alerting():
    with receivers() as started:
        yield started

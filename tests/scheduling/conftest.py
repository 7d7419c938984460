"""The metadata database of a scheduler test module: a fresh PostgreSQL server where one
is installed (CI installs it; tests/pgserver.py), else None, meaning SQLite in the
module's Airflow home ($WIRELAKE_TEST_DB=sqlite or =postgresql chooses)."""

from __future__ import annotations

from collections.abc import Iterator

import pgserver
import pytest


@pytest.fixture(scope="module")
def metadata_db() -> Iterator[str | None]:
    if not pgserver.wanted():
        yield None
        return
    with pgserver.postgres_server() as url:
        yield url

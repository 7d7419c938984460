"""A day replaced again and again while a reader reads it in a loop, on local disk and on
S3 (moto on loopback): every read finds exactly one complete run, never a mix of two and
never nothing (`lake.replace_day`: one log entry per commit)."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from s3server import moto_server

from jobs import lake, layout, storage

DAY = dt.date(2026, 11, 26)
PARTS, ROWS = 4, 50  # per run: a read that is not 200 rows of one run is torn
RUNS = [f"{index:012x}" for index in range(6)]


def write_run(table: str, run: str) -> str:
    """The parts of run `run`, every row naming it; their folder."""
    folder = layout.run_dir(table, DAY, run)
    filesystem, path = storage.resolve(folder)
    filesystem.create_dir(path, recursive=True)
    rows = pa.table({"run": [run] * ROWS, "row": list(range(ROWS))})
    for index in range(PARTS):
        pq.write_table(rows, f"{path}/part-{index:05d}.parquet", filesystem=filesystem)
    return folder


def what_a_reader_sees(table: str) -> str:
    """The run a read of the day found, or what else it found."""
    rows = lake.read_day(table, DAY)
    if rows is None:
        return "nothing"
    runs = set(rows["run"].to_pylist())
    if len(runs) == 1 and rows.num_rows == PARTS * ROWS:
        return runs.pop()
    return f"torn: {sorted(runs)} in {rows.num_rows} rows"


@pytest.fixture(params=["local disk", pytest.param("s3", marks=pytest.mark.service)])
def table(request, tmp_path, monkeypatch) -> str:
    if request.param == "local disk":
        yield str(tmp_path / "warehouse" / "events")
        return
    with moto_server(str(tmp_path / "moto.log")) as server:
        server.filesystem().create_dir("lake")
        for key, value in server.environment().items():
            monkeypatch.setenv(key, value)
        yield "s3://lake/warehouse/events"


def test_every_read_during_replacements_finds_one_whole_run(table):
    lake.replace_day(table, DAY, write_run(table, RUNS[0]))
    folders = [write_run(table, run) for run in RUNS[1:]]
    seen: list[str] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            seen.append(what_a_reader_sees(table))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for run, folder in zip(RUNS[1:], folders, strict=True):
            lake.replace_day(table, DAY, folder)
            deadline = time.monotonic() + 60
            while run not in seen and time.monotonic() < deadline:  # reads between commits
                time.sleep(0.01)
    finally:
        done.set()
        thread.join()
    assert set(seen) <= set(RUNS), sorted(set(seen) - set(RUNS))
    assert set(seen) == set(RUNS)  # the reader read every run while the next was committed

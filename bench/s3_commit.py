"""What committing a day costs, and what a reader sees meanwhile: the decode job's commit
(`lake.replace_day`: one Delta log entry naming the run's parts) beside the folder swap it
replaced (`storage.replace_dir`: two renames on local disk; on an object store a delete, a
server-side copy of every part and a delete), on local disk and on an S3-compatible server
on loopback (moto's, as the tests start it), for a day of --parts Parquet parts of
--part-mb MB each.

Not a test. For each store and each commit: the old day and the new run's parts are
written, then the commit is timed while a reader thread reads the day as fast as it can
(the swap: a listing of the partition folder; Delta: the table's files of the day) and
classifies each read: the old day complete, the new day complete, nothing, or anything
else (a mix, or a day partly there).

    ./wirelake run python bench/s3_commit.py [--parts 8] [--part-mb 128] [--store s3|local|both]
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "store"))  # the loopback server the tests start

from s3server import moto_server  # noqa: E402

from jobs import lake, layout, storage  # noqa: E402

DAY = dt.date(2026, 11, 26)
BLOCK = 1 << 20  # one value per MB: a part of N MB holds N rows


def write_parts(location: str, parts: int, megabytes: int, name: str) -> None:
    """`parts` uncompressed Parquet files of about `megabytes` MB each, named `name-N`."""
    filesystem, folder = storage.resolve(location)
    filesystem.create_dir(folder, recursive=True)
    rows = pa.table({"value": pa.array([name.encode()[:1] * BLOCK] * megabytes, pa.binary())})
    for index in range(parts):
        path = f"{folder}/{name}-{index:05d}.parquet"
        pq.write_table(rows, path, filesystem=filesystem, compression="none", use_dictionary=False)


def classify(names: list[str], parts: int) -> str:
    """'old', 'new', 'empty' or 'partial/mixed' for the part names one read found."""
    if not names:
        return "empty"
    for day in ("old", "new"):
        if len(names) == parts and all(name.startswith(day) for name in names):
            return day
    return "partial/mixed"


def watched(read: Callable[[], list[str]], parts: int, commit: Callable[[], None]) -> dict:
    """`commit` timed while a reader classifies the day in a loop."""
    seen: collections.Counter = collections.Counter()
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            seen[classify(read(), parts)] += 1

    thread = threading.Thread(target=reader)
    thread.start()
    time.sleep(0.5)  # the reader sees the old day first
    started = time.monotonic()
    commit()
    seconds = time.monotonic() - started
    time.sleep(0.5)
    done.set()
    thread.join()
    return {"commit_s": round(seconds, 3), "reader_saw": dict(seen)}


def folder_swap(location: str, parts: int, megabytes: int) -> dict:
    filesystem, _ = storage.resolve(location)
    partition, staged = f"{location}/swap/dt={DAY}", f"{location}/swap/.staging-x"
    started = time.monotonic()
    write_parts(partition, parts, megabytes, "old")
    write_parts(staged, parts, megabytes, "new")
    written = time.monotonic() - started

    def read() -> list[str]:
        path = storage.resolve(partition)[1]
        infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        return [info.base_name for info in infos if info.type == pafs.FileType.File]

    result = watched(read, parts, lambda: storage.replace_dir(staged, partition))
    return {"write_both_days_s": round(written, 2), **result}


def delta_commit(location: str, parts: int, megabytes: int) -> dict:
    table = f"{location}/delta"
    old, new = layout.run_dir(table, DAY, "old"), layout.run_dir(table, DAY, "new")
    started = time.monotonic()
    write_parts(old, parts, megabytes, "old")
    lake.replace_day(table, DAY, old)
    write_parts(new, parts, megabytes, "new")
    written = time.monotonic() - started

    def read() -> list[str]:
        return [file.rsplit("/", 1)[1] for file in lake.day_files(table, DAY)]

    result = watched(read, parts, lambda: lake.replace_day(table, DAY, new))
    return {"write_both_days_s": round(written, 2), **result}


def measure(location: str, parts: int, megabytes: int) -> dict:
    return {
        "folder_swap": folder_swap(location, parts, megabytes),
        "delta_commit": delta_commit(location, parts, megabytes),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--part-mb", type=int, default=128)
    parser.add_argument("--store", choices=("s3", "local", "both"), default="both")
    args = parser.parse_args()
    results = {"day_mb": args.parts * args.part_mb, "parts": args.parts}
    if args.store in ("local", "both"):
        with tempfile.TemporaryDirectory(dir=ROOT / ".tmp") as folder:
            results["local"] = measure(folder, args.parts, args.part_mb)
    if args.store in ("s3", "both"):
        with tempfile.TemporaryDirectory() as folder, moto_server(f"{folder}/moto.log") as server:
            server.filesystem().create_dir("bench")
            os.environ.update(server.environment())
            results["s3"] = measure("s3://bench/lake", args.parts, args.part_mb)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

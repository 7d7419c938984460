"""What committing a day costs, and what a reader sees meanwhile: `storage.replace_dir` (the
decode job's commit) on local disk and on an S3-compatible server on loopback (moto's, as
the tests start it), for a day of --parts part files of --part-mb MB each.

Not a test. For each store: the old day and the new day's staging folder are written, then
the commit is timed while a reader thread lists the partition as fast as it can and
classifies each listing: the old day complete, the new day complete, nothing, or anything
else (a mix, or a day partly there). A commit that copies no data (a table format's
snapshot) is measured too, as its floor: writing one JSON object that lists the new parts
(what an Iceberg or Delta commit writes, besides its catalog update).

    ./wirelake run python bench/s3_commit.py [--parts 8] [--part-mb 128] [--store s3|local|both]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from pyarrow import fs as pafs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "store"))  # the loopback server the tests start

from s3server import moto_server  # noqa: E402

from jobs import storage  # noqa: E402

CHUNK = 8 << 20
OLD, NEW = b"o", b"n"  # the byte each day's parts are made of: a reader tells them apart


def write_parts(filesystem: pafs.FileSystem, folder: str, parts: int, size: int, fill: bytes):
    filesystem.create_dir(folder, recursive=True)
    block = fill * CHUNK
    for index in range(parts):
        with filesystem.open_output_stream(f"{folder}/part-{index:05d}.parquet") as out:
            for start in range(0, size, CHUNK):
                out.write(block[: min(CHUNK, size - start)])


def classify(filesystem: pafs.FileSystem, folder: str, parts: int, sizes: dict[bytes, int]):
    """'old', 'new', 'empty' or 'partial/mixed' for one listing of the partition; a part's
    day is told by its size (the new day's parts are one byte longer)."""
    infos = filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
    found = [info.size for info in infos if info.type == pafs.FileType.File]
    if not found:
        return "empty"
    for name, size in (("old", sizes[OLD]), ("new", sizes[NEW])):
        if len(found) == parts and all(got == size for got in found):
            return name
    return "partial/mixed"


def measure(location: str, parts: int, size: int) -> dict:
    filesystem, root = storage.resolve(location)
    partition, staging = f"{location}/table/dt=2026-11-26", f"{location}/table/.staging-x"
    sizes = {OLD: size, NEW: size + 1}
    started = time.monotonic()
    write_parts(filesystem, f"{root}/table/dt=2026-11-26", parts, sizes[OLD], OLD)
    write_parts(filesystem, f"{root}/table/.staging-x", parts, sizes[NEW], NEW)
    written = time.monotonic() - started
    seen: collections.Counter = collections.Counter()
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            seen[classify(filesystem, f"{root}/table/dt=2026-11-26", parts, sizes)] += 1

    thread = threading.Thread(target=reader)
    thread.start()
    time.sleep(0.5)  # the reader sees the old day first
    started = time.monotonic()
    storage.replace_dir(staging, partition)
    commit = time.monotonic() - started
    time.sleep(0.5)
    done.set()
    thread.join()
    listing = {"parts": [f"part-{index:05d}.parquet" for index in range(parts)]}
    started = time.monotonic()
    storage.write_json(f"{location}/table/_commits/00001.json", listing)
    pointer = time.monotonic() - started
    return {
        "write_both_days_s": round(written, 2),
        "replace_dir_s": round(commit, 3),
        "reader_saw": dict(seen),
        "metadata_only_commit_s": round(pointer, 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--part-mb", type=int, default=128)
    parser.add_argument("--store", choices=("s3", "local", "both"), default="both")
    args = parser.parse_args()
    size = args.part_mb << 20
    results = {"day_mb": args.parts * args.part_mb, "parts": args.parts}
    if args.store in ("local", "both"):
        with tempfile.TemporaryDirectory(dir=ROOT / ".tmp") as folder:
            results["local"] = measure(folder, args.parts, size)
    if args.store in ("s3", "both"):
        with tempfile.TemporaryDirectory() as folder, moto_server(f"{folder}/moto.log") as server:
            server.filesystem().create_dir("bench")
            os.environ.update(server.environment())
            results["s3"] = measure("s3://bench/lake", args.parts, size)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

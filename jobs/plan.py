"""Step 1 of a decode run, on the driver: list the landing, find where large files may be
cut (executors read them: `jobs.parts.find_splits`) and plan the work units, grouped into
Spark partitions of similar size.

A file above `--split-bytes` whose format can find a frame from any offset
(`WireFormat.split`, which also checks companion files such as Kafka's offset indexes) is
planned as byte ranges of about that size that start at frames; any other file as one unit.
"""

from __future__ import annotations

import dataclasses
import heapq
import logging
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import TypeVar

from pyarrow import fs as pafs
from pyspark.sql import SparkSession

from jobs import layout, storage
from jobs.decode_args import DecodeRun
from jobs.parts import find_splits
from jobs.units import DataFile, FileSplits, Unit, Work
from wirecodecs import WireFormat

log = logging.getLogger("wirelake.decode")

TARGET_PARTITION_BYTES = 128 << 20


@dataclasses.dataclass(frozen=True)
class Listing:
    """The landing folder as the driver found it: the files to decode, in path order, and
    the files set aside (they go to the manifest's `ignored_files`)."""

    filesystem: pafs.FileSystem
    files: list[DataFile]
    ignored: list[dict]  # {"uri", "size", "reason"} for files that hold no frames


def list_landing(landing: str, fmt: WireFormat) -> Listing:
    """Every file under `landing` with its size; markers and companion files set aside."""
    filesystem, root = storage.resolve(landing)
    infos = filesystem.get_file_info(pafs.FileSelector(root, recursive=True))
    files, ignored = [], []
    for info in sorted(infos, key=lambda info: info.path):
        if info.type != pafs.FileType.File:
            continue
        relative = info.path[len(root) :].lstrip("/")
        uri = layout.join(landing, relative)
        if any(part.startswith((".", "_")) for part in PurePosixPath(relative).parts):
            ignored.append({"uri": uri, "size": info.size, "reason": "hidden or marker"})
        elif not fmt.data_file(relative):
            ignored.append({"uri": uri, "size": info.size, "reason": f"not {fmt.name} data"})
        else:
            files.append(DataFile(uri, info.path, info.size))
    return Listing(filesystem, files, ignored)


Sized = TypeVar("Sized", DataFile, Unit)


def log_listing(job: DecodeRun, listing: Listing) -> None:
    if not listing.files:
        log.warning(
            "no %s data files under %s: the day is written empty", job.fmt.name, job.landing
        )
    log.info(
        "planned %d file(s), %d bytes; %d file(s) ignored",
        len(listing.files),
        sum(file.size for file in listing.files),
        len(listing.ignored),
    )


def group_by_size(items: list[Sized], groups: int) -> list[list[Sized]]:
    """Files or units in at most `groups` groups of similar total size, largest first into
    the lightest group (python_moztelemetry's `_group_by_size_greedy`)."""
    count = min(groups, len(items))
    heap = [(0, index) for index in range(count)]
    grouped: list[list[Sized]] = [[] for _ in range(count)]
    for item in sorted(items, key=lambda item: (-item.size, item.uri)):
        total, index = heapq.heappop(heap)
        grouped[index].append(item)
        heapq.heappush(heap, (total + item.size, index))
    return [sorted(group, key=lambda item: item.uri) for group in grouped]


def default_partitions(spark: SparkSession, items: list[DataFile] | list[Unit]) -> int:
    """Enough partitions to keep every core busy and each one near TARGET_PARTITION_BYTES."""
    total = sum(item.size for item in items)
    return max(2 * spark.sparkContext.defaultParallelism, -(-total // TARGET_PARTITION_BYTES))


def find_split_points(
    spark: SparkSession,
    files: list[DataFile],
    fmt: WireFormat,
    work: Work,
    split_bytes: int,
    partitions: int,
) -> dict[str, FileSplits]:
    """uri -> where the file may be cut and what the format checked, found by executors
    (they read the files) for each file as a whole-file unit; {} for a format that decodes
    files whole. A check's mismatches (a Kafka index that disagrees) are logged."""
    if fmt.split is None or not files:
        return {}
    units = [Unit.whole(index, file) for index, file in enumerate(files)]
    groups = group_by_size(units, partitions)
    found = (
        spark.sparkContext.parallelize(groups, len(groups))
        .mapPartitions(lambda parts: find_splits((u for g in parts for u in g), work, split_bytes))
        .collect()
    )
    for splits in found:
        for name, check in splits.checks.items():
            if check.get("mismatches"):
                log.warning("%s: %s found %d mismatch(es)", splits.uri, name, check["mismatches"])
    return {splits.uri: splits for splits in found}


def plan_units(files: list[DataFile], splits: Mapping[str, FileSplits]) -> list[Unit]:
    """Every file as work units: whole, or one per range between its split points; numbered
    in file order (the numbers name the part files, so a rerun writes the same names)."""
    units: list[Unit] = []
    for file in sorted(files, key=lambda file: file.uri):
        found = splits.get(file.uri)
        units += Unit.whole(0, file).ranges(found.points if found else [], len(units))
    return units

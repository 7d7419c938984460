"""The byte gate on local Spark: damage that hides much of a file in one frame fails the run
and leaves the previous day as it was.

The case from the field: a day of four Kafka segments, and random bytes written over the
middle of one of them, so that an entry header there claims a length running past the end
of the file. Frame by frame that is one bad frame of hundreds; byte by byte it is a large
share of the day.
"""

from __future__ import annotations

import io
import logging
import random
import shutil
import struct
from pathlib import Path

import pytest
from jobrun import decoded_day

pytestmark = pytest.mark.spark

VECTORS = Path(__file__).resolve().parents[1] / "data" / "kafka"
DAY = "2024-03-01"
SEGMENTS = {  # landing path -> golden vector; the first one, three ~45 KB batches, is damaged
    "orders-0/00000000000000000000.log": "v2_gzip_large.log",
    "orders-1/00000000000000000000.log": "v2_none.log",
    "orders-2/00000000000000000000.log": "v2_lz4.log",
    "orders-3/00000000000000000000.log": "v2_zstd.log",
}
DAMAGED = "orders-0/00000000000000000000.log"
# frames would not trip the run: only bytes can
GATES = ("--envelope", "kafka", "--max-error-rate", "0.5", "--max-bad-byte-rate", "0.05")


def entry_starts(data: bytes) -> list[int]:
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    return starts


def random_header_past_the_end(data: bytes) -> bytes:
    """64 random bytes over the middle entry, whose size field then runs past the end."""
    at = entry_starts(data)[len(entry_starts(data)) // 2]
    noise = bytearray(random.Random(20261124).randbytes(64))
    struct.pack_into(">i", noise, 8, len(data) - at)  # 12 + size > what is left
    return data[:at] + bytes(noise) + data[at + len(noise) :]


def cut_in_the_middle(data: bytes) -> bytes:
    """A plausible truncated tail: the file ends halfway through its middle entry."""
    starts = entry_starts(data)
    middle = len(starts) // 2
    return data[: (starts[middle] + starts[middle + 1]) // 2]


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("gates")
    landing, warehouse = root / "landing", root / "warehouse"
    for landed, vector in SEGMENTS.items():
        (landing / landed).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(VECTORS / vector, landing / landed)
    good = decoded_day(spark, "kafka", DAY, landing, warehouse, *GATES)
    damaged = {}
    original = (landing / DAMAGED).read_bytes()
    for name, damage in (("random", random_header_past_the_end), ("cut", cut_in_the_middle)):
        (landing / DAMAGED).write_bytes(damage(original))
        logged = io.StringIO()
        handler = logging.StreamHandler(logged)
        logging.getLogger("wirelake").addHandler(handler)
        try:
            damaged[name] = decoded_day(spark, "kafka", DAY, landing, warehouse, *GATES)
        finally:
            logging.getLogger("wirelake").removeHandler(handler)
        damaged[name]["log"] = logged.getvalue()
    return {"good": good, **damaged, "damaged_uri": str(landing / DAMAGED)}


def test_the_clean_day_passes(runs):
    good = runs["good"]
    assert good["code"] == 0
    assert good["manifest"]["totals"]["bad_byte_rate"] == 0
    assert good["manifest"]["max_bad_byte_rate"] == 0.05


@pytest.mark.parametrize("damage", ["random", "cut"])
def test_bytes_hidden_behind_one_frame_fail_the_gate_and_keep_the_previous_day(runs, damage):
    run, good = runs[damage], runs["good"]
    assert run["code"] == 1
    assert run["rows"].equals(good["rows"])
    assert run["manifest"] == good["manifest"]


def test_the_failure_names_the_gate_its_figures_and_the_bytes(runs):
    at = entry_starts((VECTORS / SEGMENTS[DAMAGED]).read_bytes())
    middle = at[len(at) // 2]
    random_log, cut_log = runs["random"]["log"], runs["cut"]["log"]
    assert "is above --max-bad-byte-rate 5.0000%" in random_log
    assert f"{runs['damaged_uri']}@{middle} implausible_tail" in random_log
    assert "stop: implausible_tail" in random_log
    assert "in truncated tails) is above --max-bad-byte-rate 5.0000%" in cut_log
    assert "stop: truncated_tail" in cut_log

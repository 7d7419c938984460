"""Kafka's split finder: the segment's `.index` checked against the segment as
`kafka-dump-log --verify-index-only` does (docs/kafka.md §2.10, §6), and split points at
indexed batches. The truth is the golden segments' sidecars (their `index_entries`, batch
positions and last offsets), and the whole segment's decode for the ranges."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import pytest
from ranges import fits, in_memory, in_ranges, whole

from wirecodecs import source_format
from wirecodecs.kafka import KAFKA
from wirecodecs.kafka.index import SHOWN_MISMATCHES, split
from wirecodecs.registry import SplitPoint

VECTORS = Path(__file__).resolve().parents[2] / "data" / "kafka"
SEGMENTS = VECTORS / "segment_dir" / "orders-0"
BASES = ["00000000000000000000", "00000000000000002331"]
FOLDER = "landing/orders-0"


def sidecar(base: str) -> dict:
    return json.loads(gzip.decompress((SEGMENTS / f"{base}.json.gz").read_bytes()))


def index_bytes(entries) -> bytes:
    """An index as LogSegment writes it: (relative offset, position) int32 pairs."""
    return b"".join(struct.pack(">ii", *entry) for entry in entries)


def find(base: str, index: bytes | None, boundaries=(), log: bytes | None = None):
    """Kafka's split of segment `base` landed with `index` (None: no index beside it)."""
    log = (SEGMENTS / f"{base}.log").read_bytes() if log is None else log
    files = {f"{FOLDER}/{base}.log": log}
    if index is not None:
        files[f"{FOLDER}/{base}.index"] = index
    return split(in_memory(files), f"{FOLDER}/{base}.log", len(log), list(boundaries), {})


@pytest.mark.parametrize("base", BASES)
def test_golden_index_checks_clean_and_splits_at_the_first_indexed_batch(base):
    truth = sidecar(base)
    log = (SEGMENTS / f"{base}.log").read_bytes()
    last_offsets = {batch["position"]: batch["last_offset"] for batch in truth["batches"]}
    indexed = [position for _, position in truth["index_entries"]]
    for relative, position in truth["index_entries"]:  # the sidecar's index is the spec's
        assert last_offsets[position] == int(base) + relative
    boundaries = [len(log) // 4, len(log) // 2, 3 * len(log) // 4]

    found = find(base, (SEGMENTS / f"{base}.index").read_bytes(), boundaries)

    assert found.checks == {
        "index_check": {
            "index": f"{base}.index",
            "status": "ok",
            "entries": len(truth["index_entries"]),
            "mismatches": 0,
            "first_mismatches": [],
        }
    }
    expected = [min(p for p in indexed if p >= boundary) for boundary in boundaries]
    assert [point.offset for point in found.points] == expected
    assert all(not point.shifts for point in found.points)


@pytest.mark.parametrize("base", BASES)
def test_segment_decoded_in_ranges_reads_as_the_whole_segment(base):
    log = (SEGMENTS / f"{base}.log").read_bytes()
    boundaries = [len(log) * k // 6 for k in range(1, 5)]  # the index covers them all
    points = find(base, (SEGMENTS / f"{base}.index").read_bytes(), boundaries).points
    assert len(points) == len(boundaries)

    outcome, accountings = in_ranges(log, "kafka", points)

    assert fits(accountings)
    assert outcome == whole(log, "kafka")


@pytest.mark.parametrize(
    "vector",
    [
        "corrupt_v2_gzip_payload",
        "corrupt_v1_snappy_wrapper",
        "mixed_magic",
        "truncated_v2_lz4",
        "zero_tail_v2_none",
        "length_overrun_v2_none",
    ],
)
def test_damaged_logs_cut_at_every_batch_read_as_whole(vector):
    """Cut at every batch the sidecar lists: bad entries, cut and zero tails stay where
    the whole walk puts them (the last range keeps a good batch before its tail)."""
    log = (VECTORS / f"{vector}.log").read_bytes()
    batches = json.loads(gzip.decompress((VECTORS / f"{vector}.json.gz").read_bytes()))["batches"]
    points = [SplitPoint(batch["position"]) for batch in batches[1:]]

    outcome, accountings = in_ranges(log, "kafka", points)

    assert fits(accountings)
    assert outcome == whole(log, "kafka")


def test_zero_tail_of_a_preallocated_index_ends_the_entries():
    base = BASES[0]
    entries = sidecar(base)["index_entries"]
    found = find(base, index_bytes(entries) + bytes(8 * 1000), [60000])
    assert found.checks["index_check"]["entries"] == len(entries)
    assert found.checks["index_check"]["status"] == "ok"
    assert len(found.points) == 1


def _mismatch(base: str, index: bytes, log: bytes | None = None) -> dict:
    found = find(base, index, [50000], log)
    check = found.checks["index_check"]
    assert check["status"] == "mismatch"
    assert found.points == []  # a segment with a wrong index is decoded whole
    return check


def test_an_offset_that_is_not_the_batch_last_offset_is_a_mismatch():
    base = BASES[1]
    truth = sidecar(base)
    entries = [list(entry) for entry in truth["index_entries"]]
    relative, position = entries[3]
    entries[3][0] = relative - 1  # still increasing: the offset of a record inside the batch
    check = _mismatch(base, index_bytes(entries))
    assert check["mismatches"] == 1
    last = next(b["last_offset"] for b in truth["batches"] if b["position"] == position)
    assert check["first_mismatches"] == [
        {
            "offset": int(base) + relative - 1,
            "position": position,
            "reason": "offset_mismatch",
            "detail": f"the entry there ends at offset {last}",
        }
    ]


def test_a_position_off_a_batch_start_is_a_mismatch():
    base = BASES[0]
    truth = sidecar(base)
    entries = [list(entry) for entry in truth["index_entries"]]
    position = entries[1][1]
    # its size field is then the batch's partitionLeaderEpoch (docs/kafka.md §2.5)
    entries[1][1] += 4
    check = _mismatch(base, index_bytes(entries))
    epoch = next(b["partition_leader_epoch"] for b in truth["batches"] if b["position"] == position)
    assert check["mismatches"] == 1
    (found,) = check["first_mismatches"]
    assert (found["position"], found["reason"]) == (position + 4, "no_entry")
    assert found["detail"].startswith(f"no log entry starts there (size {epoch}, magic ")


def test_entries_that_go_back_are_a_mismatch():
    base = BASES[0]
    entries = [list(entry) for entry in sidecar(base)["index_entries"]]
    entries[2], entries[3] = entries[3], entries[2]
    check = _mismatch(base, index_bytes(entries))
    assert check["mismatches"] == 1
    (found,) = check["first_mismatches"]
    assert (found["offset"], found["position"], found["reason"]) == (
        int(base) + entries[3][0],
        entries[3][1],
        "not_increasing",
    )


def test_a_position_outside_the_segment_is_a_mismatch():
    base = BASES[0]
    truth = sidecar(base)
    size = truth["valid_bytes"]
    entries = [*truth["index_entries"], [truth["index_entries"][-1][0] + 10, size + 100]]
    check = _mismatch(base, index_bytes(entries))
    assert check["first_mismatches"] == [
        {
            "offset": int(base) + entries[-1][0],
            "position": size + 100,
            "reason": "outside_segment",
            "detail": f"position {size + 100} in a {size}-byte segment",
        }
    ]


def test_a_partial_last_entry_is_a_mismatch_and_only_a_few_are_listed():
    base = BASES[0]
    entries = sidecar(base)["index_entries"]
    check = _mismatch(base, index_bytes(entries) + b"\x00\x00\x01")
    assert check["first_mismatches"][-1]["reason"] == "partial_entry"
    backwards = [(relative, 10) for relative in range(1, 20)]  # all at one position
    check = _mismatch(base, index_bytes(backwards))
    assert check["mismatches"] == 19
    assert len(check["first_mismatches"]) == SHOWN_MISMATCHES


def test_a_segment_without_index_is_decoded_whole_and_a_fetch_dump_has_no_check():
    missing = find(BASES[0], None, [50000])
    assert missing.points == []
    assert missing.checks["index_check"]["status"] == "missing"
    dump = b"\x00" * 100
    fetch = split(
        in_memory({"landing/fetch/records.bin": dump}), "landing/fetch/records.bin", 100, [50], {}
    )
    assert (fetch.points, dict(fetch.checks)) == ([], {})


def test_carried_payloads_split_like_plain_kafka():
    for payload in ("hercules", "inlong"):
        assert source_format("kafka", payload).split is KAFKA.split

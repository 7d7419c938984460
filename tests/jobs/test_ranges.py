"""Work units smaller than a file: a large file cut into ranges at frame starts decodes to
exactly what it decodes to as one unit (rows, companion tables, quarantine, per-file
accounting); a false split point sends its file back to one whole decode; a Kafka segment
whose index disagrees with it is reported and decoded whole.

The truth is the same day decoded with files as single units (the default `--split-bytes`
is far above these files), never figures the split run reports about itself.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import struct
from pathlib import Path

import pytest
from jobrun import run_quietly

from jobs import lake, metrics
from jobs.decode_args import SPLIT_BYTES
from jobs.execute import combined, split_failure
from jobs.parts import boundaries
from jobs.plan import plan_units
from jobs.units import BadFrame, DataFile, FileSplits, Unit, UnitReport
from wirecodecs import FileAccounting, samples
from wirecodecs.heka import encoder as heka_enc
from wirecodecs.registry import SplitPoint

DAY = "2026-11-20"
SPLIT = 4096  # --split-bytes of the split runs: the sample files are 10-70 KiB
KAFKA_DATA = Path(__file__).resolve().parents[1] / "data" / "kafka" / "segment_dir" / "orders-0"
ACCOUNTING = [field.name for field in dataclasses.fields(FileAccounting)]

# --- the driver's plan, without Spark -------------------------------------------------------


def test_boundaries_cut_a_file_into_equal_ranges_of_at_most_split_bytes():
    assert boundaries(100, 100) == []
    assert boundaries(101, 100) == [50]
    assert boundaries(100, 30) == [25, 50, 75]
    assert boundaries(10, 1) == list(range(1, 10))


def test_units_cover_each_file_in_order_and_number_the_ranges():
    files = [_file("b", 100), _file("a", 50)]
    points = {"b": [SplitPoint(30, {"packet_index": 4}), SplitPoint(70, {"packet_index": 9})]}
    units = plan_units(files, {uri: FileSplits(uri, found, {}) for uri, found in points.items()})
    assert [(u.index, u.uri, u.start, u.size, u.to_end, dict(u.shifts)) for u in units] == [
        (0, "a", 0, 50, True, {}),
        (1, "b", 0, 30, False, {}),
        (2, "b", 30, 40, False, {"packet_index": 4}),
        (3, "b", 70, 30, True, {"packet_index": 9}),
    ]


def _file(uri: str, size: int) -> DataFile:
    return DataFile(uri, f"/landing/{uri}", size)


def _account(stop: str = "eof", good: int = 1, first_bad=(), figures=None, **counts) -> UnitReport:
    return UnitReport(
        FileAccounting("f", "heka", frames_good=good, stop_reason=stop, **counts),
        rows=good,
        quarantine_items=0,
        table_rows={"packets": good},
        unit=0,
        first_bad=list(first_bad),
        figures=figures or metrics.empty(),
    )


def _bad(n: int) -> BadFrame:
    return BadFrame("f", n, "bad_crc", f"frame {n}")


RANGES = [Unit(0, "f", "/f", 10), Unit(1, "f", "/f", 10, 10, False), Unit(2, "f", "/f", 5, 20)]


@pytest.mark.parametrize(
    ("stops", "reason"),
    [
        ([("eof", 1), ("eof", 0), ("truncated_tail", 1)], None),  # the file's own cut tail
        ([("eof", 1), ("eof", 1), ("eof", 0)], None),
        ([("eof", 1), ("truncated_tail", 0), ("eof", 1)], "range 2 of 3 (bytes 10-20)"),
        ([("length_out_of_range", 1), ("eof", 1), ("eof", 1)], "range 1 of 3 (bytes 0-10)"),
        ([("eof", 1), ("eof", 1), ("implausible_tail", 0)], "the last range (from byte 20)"),
    ],
)
def test_ranges_fit_unless_one_ends_inside_a_frame(stops, reason):
    found = split_failure(RANGES, [_account(stop, good) for stop, good in stops])
    assert (found is None) if reason is None else found.startswith(reason)


def _figures(**errors: list) -> dict:
    return {**metrics.empty(), "errors": errors}  # kind -> [count, file, offset]


def test_a_files_ranges_add_up_to_its_accounting():
    reports = [
        _account(bytes_total=10, bytes_decoded=10, first_bad=[_bad(1)],
                 figures=_figures(bad_crc=[1, "f", 4])),
        _account(bytes_total=7, bytes_skipped=7, good=0, figures=_figures()),
        _account("truncated_tail", bytes_total=5, bytes_truncated_tail=5, first_bad=[_bad(2)],
                 figures=_figures(bad_crc=[2, "f", 18], truncated_tail=[1, "f", 17])),
    ]  # fmt: skip
    report = combined(reports)
    accounting = report.to_dict()
    assert {key: accounting[key] for key in ("bytes_total", "bytes_decoded", "bytes_skipped")} == {
        "bytes_total": 22,
        "bytes_decoded": 10,
        "bytes_skipped": 7,
    }
    assert (accounting["frames_good"], accounting["rows"], accounting["table_rows"]) == (
        2,
        2,
        {"packets": 2},
    )
    assert (accounting["stop_reason"], report.ranges) == ("truncated_tail", 3)
    assert report.first_bad == [_bad(1), _bad(2)]
    # each error kind counted over the ranges, with its first example in the file
    assert report.figures["errors"] == {"bad_crc": [3, "f", 4], "truncated_tail": [1, "f", 17]}


# --- landing days -------------------------------------------------------------------------


def kafka_index(log: bytes, interval: int) -> bytes:
    """The offset index LogSegment.append writes for `log` (docs/kafka.md §2.10): after more than
    `interval` bytes since the last entry, (batch last offset - base, position), the
    entries walked by their size fields (§2.2) and the last offset read from the batch."""
    entries, since, position = [], 0, 0
    while position + 12 <= len(log):
        base, size = struct.unpack_from(">qi", log, position)
        if position + 12 + size > len(log):
            break
        last = (
            base + struct.unpack_from(">i", log, position + 23)[0]
            if log[position + 16] == 2
            else base
        )
        if since > interval:
            entries.append(struct.pack(">ii", last, position))  # base offset 0: relative
            since = 0
        since += 12 + size
        position += 12 + size
    return b"".join(entries)


def index_sample_segments(landing: Path) -> None:
    for log in landing.rglob("00000000000000000000.log"):
        log.with_suffix(".index").write_bytes(kafka_index(log.read_bytes(), 1024))


def kafka_day(landing: Path) -> None:
    samples.write_sample_day("kafka", landing, DAY, seed=5)
    index_sample_segments(landing)
    (landing / "orders-9").mkdir()
    for base in ("00000000000000000000", "00000000000000002331"):
        for suffix in ("log", "index"):
            shutil.copyfile(
                KAFKA_DATA / f"{base}.{suffix}", landing / "orders-9" / f"{base}.{suffix}"
            )
    wrong = landing / "orders-8"
    wrong.mkdir()
    base = "00000000000000000000"
    shutil.copyfile(KAFKA_DATA / f"{base}.log", wrong / f"{base}.log")
    index = bytearray((KAFKA_DATA / f"{base}.index").read_bytes())
    index[8 * 5 + 3] ^= 1  # the sixth entry's offset, one off
    (wrong / f"{base}.index").write_bytes(bytes(index))


def hercules_kafka_day(landing: Path) -> None:
    samples.write_sample_day("hercules_kafka", landing, DAY, seed=5)
    index_sample_segments(landing)


def heka_day(landing: Path) -> None:
    """The sample day, and a file whose frames carry whole frames in their payloads: a
    boundary inside one finds a false frame start."""
    samples.write_sample_day("heka", landing, DAY, seed=5)
    inner = heka_frame(b"inner", 1)
    frames = [heka_frame(b"".join(inner + b"...." for _ in range(70)), n) for n in range(20)]
    (landing / "nested").mkdir()
    (landing / "nested" / "frames.heka").write_bytes(b"".join(frames))


def heka_frame(payload: bytes, number: int) -> bytes:
    message = heka_enc.Message(
        uuid=bytes(16), timestamp=1_790_000_000 * 10**9 + number, payload=payload
    )
    return heka_enc.frame(heka_enc.encode_message(message))


def cernan_day(landing: Path) -> None:
    samples.write_sample_day("cernan", landing, DAY, seed=5)


# source -> (job arguments, landing writer, the files that must have been split)
SOURCES = {
    "kafka": (["--envelope", "kafka"], kafka_day),
    "hercules_kafka": (["--envelope", "kafka", "--payload", "hercules"], hercules_kafka_day),
    "heka": (["--envelope", "heka"], heka_day),
    "cernan": (["--envelope", "cernan"], cernan_day),
}
TABLES = {"cernan": ["packets"]}
GATES = ["--max-error-rate", "0.5", "--max-bad-byte-rate", "0.5"]


def read_table(warehouse: Path, name: str):
    """A written partition in a fixed row order (None when the run wrote none)."""
    table = lake.read_day(str(warehouse / name), dt.date.fromisoformat(DAY))
    if table is None:
        return None
    keys = ["source_file", "byte_offset", "offset", "kafka_offset", "record_index", "detail"]
    return table.sort_by([(key, "ascending") for key in keys if key in table.column_names])


def decode(spark, source: str, landing: Path, warehouse: Path, *extra: str) -> dict:
    args, _ = SOURCES[source]
    argv = ["--source", source, "--date", DAY, "--landing", str(landing)]
    argv += ["--warehouse", str(warehouse), "--reports", str(warehouse / "_reports")]
    assert run_quietly(spark, [*argv, *args, *GATES, *extra]) == 0
    tables = [
        source,
        *(f"{source}_{name}" for name in TABLES.get(source, [])),
        f"_quarantine/{source}",
    ]
    manifest = warehouse / "_manifests" / source / f"dt={DAY}" / "manifest.json"
    return {
        "tables": {name: read_table(warehouse, name) for name in tables},
        "manifest": json.loads(manifest.read_text()),
    }


@pytest.fixture(scope="module", params=list(SOURCES))
def runs(request, spark, tmp_path_factory):
    source = request.param
    root = tmp_path_factory.mktemp(f"ranges-{source}")
    landing = root / "landing"
    SOURCES[source][1](landing)
    return {
        "source": source,
        "landing": landing,
        "whole": decode(spark, source, landing, root / "whole"),
        "split": decode(spark, source, landing, root / "split", "--split-bytes", str(SPLIT)),
    }


@pytest.mark.spark
def test_split_decode_writes_what_the_whole_decode_writes(runs):
    whole, split = runs["whole"], runs["split"]
    for name, table in whole["tables"].items():
        assert table is not None or name.startswith("_quarantine"), name
        assert (table is None) == (split["tables"][name] is None), name
        if table is not None:
            assert split["tables"][name].equals(table), name


@pytest.mark.spark
def test_each_files_accounting_summed_over_its_ranges_is_its_whole_accounting(runs):
    def accounts(run):
        fields = [*ACCOUNTING, "rows", "quarantine_items", "table_rows"]
        return {e["source"]: {k: e[k] for k in fields} for e in run["manifest"]["files"]}

    assert accounts(runs["split"]) == accounts(runs["whole"])
    assert runs["split"]["manifest"]["totals"] == runs["whole"]["manifest"]["totals"]


@pytest.mark.spark
def test_large_files_were_decoded_in_ranges(runs):
    whole, split = runs["whole"]["manifest"], runs["split"]["manifest"]
    assert (whole["split_bytes"], split["split_bytes"]) == (SPLIT_BYTES, SPLIT)
    assert whole["run"]["units"] == len(whole["files"])
    assert {entry["ranges"] for entry in whole["files"]} == {1}
    landing = str(runs["landing"])
    ranges = {entry["source"][len(landing) + 1 :]: entry["ranges"] for entry in split["files"]}
    whole_again = {
        entry["source"][len(landing) + 1 :]
        for entry in split["files"]
        if entry["split_fallback"] is not None
    }
    big = {name for name, count in ranges.items() if count > 1}
    assert len(big) >= 2
    assert split["run"]["split_files"] == len(big) + len(whole_again)
    assert split["run"]["split_fallback_files"] == len(whole_again)
    extra = split["run"]["units"] - sum(ranges.values())  # a file decoded again: its ranges
    assert extra >= 2 * len(whole_again) and (extra == 0) == (not whole_again)
    if runs["source"] == "heka":
        assert whole_again == {"nested/frames.heka"}
        assert ranges["nested/frames.heka"] == 1
        assert ranges["edge-01/heka-20261120.heka.gz"] == 1  # whole-file gzip
    else:
        assert whole_again == set()


@pytest.mark.spark
@pytest.mark.parametrize("runs", ["kafka"], indirect=True)
def test_kafka_segments_have_their_index_checked(runs):
    landing = str(runs["landing"])
    files = {
        entry["source"][len(landing) + 1 :]: entry for entry in runs["split"]["manifest"]["files"]
    }
    golden = files["orders-9/00000000000000000000.log"]["index_check"]
    entries = (KAFKA_DATA / "00000000000000000000.index").stat().st_size // 8
    assert (golden["status"], golden["entries"], golden["mismatches"]) == ("ok", entries, 0)
    assert files["orders-9/00000000000000000000.log"]["ranges"] > 1
    wrong = files["orders-8/00000000000000000000.log"]
    assert wrong["ranges"] == 1
    check = wrong["index_check"]
    assert (check["status"], check["mismatches"]) == ("mismatch", 1)
    assert check["first_mismatches"][0]["reason"] == "offset_mismatch"

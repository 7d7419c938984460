"""`python -m wirecodecs dump cernan` (records, then tagged packets rows) and the cernan
sample day, checked against what the sample writer says it wrote."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from collections import Counter

import pytest
from cernan_helpers import DATA, check_invariants, run, sidecar

from wirecodecs.cernan.avro import writer_schema
from wirecodecs.cernan.samples import ORDER, PAGE_VIEW, blueox_event
from wirecodecs.samples import write_sample_day

DAY = dt.date(2026, 11, 20)


def test_dump_prints_records_and_packets_rows():
    truth = sidecar("corrupt_kv")["expected"]
    path = DATA / "corrupt_kv.bin"
    done = subprocess.run(
        [sys.executable, "-m", "wirecodecs", "dump", "cernan", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    records = [line for line in lines if "table" not in line]
    packets = [line for line in lines if line.get("table") == "packets"]
    assert len(records) == truth["summary"]["rows"]
    assert [json.loads(r["record_json"]) for r in records] == [r["record"] for r in truth["rows"]]
    assert [r["id"] for r in records] == [r["id"] for r in truth["rows"]]  # exact integers
    assert [(p["packet_index"], p["status"], p["error_code"]) for p in packets] == [
        (p["index"], p["status"], p["error"] and p["error"]["code"]) for p in truth["packets"]
    ]
    errors = [json.loads(line) for line in done.stderr.splitlines()]
    assert [e["quarantined"]["kind"] for e in errors[:-1]] == ["kv_truncated"] * 3
    summary = errors[-1]["summary"]
    assert (summary["balanced"], summary["rows"], summary["frames_bad"]) == (True, 4, 3)


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    return write_sample_day("cernan", tmp_path_factory.mktemp("cernan"), DAY, seed=11)


def test_sample_day_is_deterministic(day, tmp_path):
    again = write_sample_day("cernan", tmp_path, DAY, seed=11)
    assert [p.read_bytes() for p in again.paths] == [p.read_bytes() for p in day.paths]
    other = write_sample_day("cernan", tmp_path / "other", DAY, seed=12)
    assert other.files[0].path.read_bytes() != day.files[0].path.read_bytes()
    assert sum(p.stat().st_size for p in day.paths) < 300_000


def test_sample_files_decode_to_what_was_written(day):
    fingerprints = Counter()
    for written in day.files:
        data = written.path.read_bytes()
        result = run(data, source=str(written.path), event_time_field="event_time")
        check_invariants(result, len(data))
        acc = result.accounting
        assert acc.frames_good + acc.frames_bad == written.frames
        assert acc.frames_bad == written.undecodable_frames
        assert acc.records_good == written.decodable_records
        assert acc.bytes_truncated_tail == written.truncated_tail_bytes
        start = dt.datetime.combine(DAY, dt.time(), tzinfo=dt.UTC)
        times = [row["event_time"] for row in result.records]
        assert all(start <= t < start + dt.timedelta(days=1) for t in times)
        fingerprints.update(row["schema_fingerprint"] for row in result.records)
        packets = result.packets
        assert {p["codec"] for p in packets if p["status"] == "ok"} == {"null", "deflate", "snappy"}
        assert {p["version"] for p in packets if p["status"] == "ok"} == {1, 2}
        assert {p["sync"] for p in packets if p["status"] == "ok"} == {True, False}
    schemas = [PAGE_VIEW, ORDER, blueox_event("web-1"), blueox_event("worker-7")]
    expected = {writer_schema(json.dumps(s).encode()).fingerprint for s in schemas}
    assert set(fingerprints) == expected
    assert sum(f.undecodable_frames for f in day.files) == 3
    assert sum(bool(f.truncated_tail_bytes) for f in day.files) == 1

"""`python -m wirecodecs dump inlong` on golden vectors, and the three InLong sample days
decoded against what their writers say they wrote."""

from __future__ import annotations

import base64
import datetime as dt
import json
import subprocess
import sys

import pytest
from inlong_helpers import DATA, b64, checked, sidecar

from wirecodecs import FileAccounting, get
from wirecodecs.options import resolve
from wirecodecs.samples import write_sample_day

DAY = dt.date(2024, 3, 1)
# source -> (format name, decoder options), as dags/sources.yaml declares them
SOURCES = {
    "inlong": ("inlong", {"framing": "length_prefixed"}),
    "inlong_messages": ("inlong", {"framing": "message"}),
    "inlong_kafka": ("kafka+inlong", {}),
}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "wirecodecs", "dump", "inlong", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_dump_rows_quarantine_and_summary():
    good, bad = DATA / "v4_private_attrs.bin", DATA / "err_v4_bad_snappy.bin"
    result = run_cli(str(good), str(bad))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    items = sidecar("v4_private_attrs")["expected"]["attrs"]
    assert sorted(base64.b64decode(r["body"]) for r in rows) == sorted(
        b64(item["b64"]) for attr in items for item in attr["items"]
    )
    assert {r["event_time"] for r in rows} == {"2023-11-14T22:13:20Z"}
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [list(line) for line in lines] == [["summary"], ["quarantined"], ["summary"]]
    assert lines[1]["quarantined"]["kind"] == "decompress_failed"
    assert lines[0]["summary"]["rows"] == 4 and lines[2]["summary"]["balanced"]


def test_cli_length_prefixed_option(tmp_path):
    path = tmp_path / "two.bin"
    one = (DATA / "v1_plain_single.bin").read_bytes()
    path.write_bytes(b"".join(len(one).to_bytes(4, "big") + one for _ in range(2)))
    result = run_cli(str(path), "-o", '{"framing": "length_prefixed"}')
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["byte_offset"] for line in result.stdout.splitlines()] == [
        0,
        4 + len(one),
    ]
    bad = run_cli(str(path), "-o", '{"framing": "lines"}')
    assert bad.returncode != 0 and "framing" in bad.stderr


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_sample_day_decodes_as_written(source, tmp_path):
    day = write_sample_day(source, tmp_path, DAY, seed=3)
    name, options = SOURCES[source]
    fmt = get(name)
    start = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    totals = day.totals()
    assert totals["undecodable_frames"] >= 1 and totals["records"] > 0
    assert sum(path.stat().st_size for path in day.paths) < 400_000
    versions = set()
    for written in day.files:
        acc = FileAccounting(str(written.path), name)
        with open(written.path, "rb") as stream:
            items = list(fmt.decode(stream, str(written.path), acc, resolve(fmt, options)))
        rows = [row for item in items if hasattr(item, "num_rows") for row in item.to_pylist()]
        assert acc.balanced
        assert acc.records_good == len(rows) == written.decodable_records
        assert (
            len(items) - sum(hasattr(item, "num_rows") for item in items)
            == written.undecodable_frames
        )
        assert acc.bytes_truncated_tail == written.truncated_tail_bytes
        for row in rows:
            assert start <= row["event_time"] < start + dt.timedelta(days=1)
            assert row["group_id"] and row["stream_id"]
        versions |= {(row["version"], row["compressed"]) for row in rows}
    assert versions == {(v, c) for v in range(5) for c in (False, True)}


def test_sample_day_is_deterministic(tmp_path):
    one = write_sample_day("inlong", tmp_path / "a", DAY, seed=1)
    two = write_sample_day("inlong", tmp_path / "b", DAY, seed=1)
    assert [p.read_bytes() for p in one.paths] == [p.read_bytes() for p in two.paths]


def test_damaged_sample_frames_are_quarantined_in_place(tmp_path):
    day = write_sample_day("inlong", tmp_path, DAY, seed=0)
    got = checked(day.files[0].path.read_bytes(), framing="length_prefixed")
    assert [q.kind for q in got.quarantined] == ["decompress_failed"]

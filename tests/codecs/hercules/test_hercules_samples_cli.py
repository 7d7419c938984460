"""The Hercules sample days decode to what their writers recorded, and the generic
`python -m wirecodecs dump hercules FILE` inspector works on gate batches and events."""

from __future__ import annotations

import base64
import datetime as dt
import json
import subprocess
import sys

import pyarrow as pa
import pytest
from hercules_helpers import DATA, sidecar

from wirecodecs import FileAccounting, source_format
from wirecodecs.cli import main
from wirecodecs.hercules import HERCULES
from wirecodecs.options import resolve
from wirecodecs.samples import write_sample_day

DAY = dt.date(2026, 11, 3)
DAY_START = dt.datetime(2026, 11, 3, tzinfo=dt.UTC)
FORMATS = {"hercules": HERCULES, "hercules_kafka": source_format("kafka", "hercules")}


@pytest.fixture(scope="module", params=sorted(FORMATS))
def decoded_day(request, tmp_path_factory):
    """(source, sample day, [(file, rows, quarantined, accounting)])."""
    source = request.param
    day = write_sample_day(source, tmp_path_factory.mktemp(source) / f"dt={DAY}", DAY, 3)
    fmt = FORMATS[source]
    out = []
    for item in day.files:
        accounting = FileAccounting(str(item.path), fmt.name)
        with item.path.open("rb") as stream:
            items = list(fmt.decode(stream, str(item.path), accounting, resolve(fmt, {})))
        batches = [i for i in items if isinstance(i, pa.RecordBatch)]
        rows = pa.Table.from_batches(batches, schema=fmt.schema)
        out.append(
            (item, rows, [i for i in items if not isinstance(i, pa.RecordBatch)], accounting)
        )
    return source, day, out


def test_sample_day_decodes_to_what_was_written(decoded_day):
    source, day, files = decoded_day
    totals = day.totals()
    assert totals["undecodable_frames"] == 1
    assert 100_000 < sum(item.path.stat().st_size for item in day.files) < 600_000
    if source == "hercules":
        assert totals["truncated_tail_bytes"] > 0
        assert any(item.path.name.endswith(".lz4") for item in day.files)
    for item, rows, quarantined, accounting in files:
        assert accounting.balanced and accounting.bytes_total == item.path.stat().st_size
        assert rows.num_rows == accounting.records_good == item.decodable_records, item.path
        assert accounting.records_bad == item.undecodable_records
        assert accounting.frames_good + accounting.frames_bad == item.frames
        assert len(quarantined) == item.undecodable_frames
        assert accounting.bytes_truncated_tail == item.truncated_tail_bytes
        assert accounting.stop_reason == ("truncated_tail" if item.truncated_tail_bytes else "eof")


def test_sample_events_are_realistic_log_events_of_the_day(decoded_day):
    source, _, files = decoded_day
    for _, rows, _, _ in files:
        for row in rows.to_pylist():
            assert DAY_START <= row["event_time"] < DAY_START + dt.timedelta(days=1)
            assert 10 <= row["tag_count"] <= 30
            paths = {tag["path"]: tag for tag in row["tags"]}
            assert paths["properties/project"]["type"] == "String"
            assert paths["properties/environment"]["string_value"] in ("production", "staging")
            assert json.loads(row["tags_json"])["level"] == paths["level"]["string_value"]
            if source == "hercules_kafka":
                assert row["kafka_key"].hex() == row["uuid"].replace("-", "")


def test_the_kafka_day_quarantines_the_cut_value(decoded_day):
    source, _, files = decoded_day
    kinds = [item.kind for _, _, quarantined, _ in files for item in quarantined]
    assert kinds == (["payload_truncated"] if source == "hercules_kafka" else ["unknown_type"])


def test_cli_dumps_a_gate_batch(capsys):
    path = str(DATA / "batch_all.bin")
    assert main(["dump", "hercules", path]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    truth = sidecar("batch_all.bin")["events"]
    assert [row["uuid"] for row in rows] == [event["uuid"] for event in truth]
    assert [json.loads(row["tags_json"]) for row in rows] == [event["tags"] for event in truth]
    raw = next(t["key_raw"] for row in rows for t in row["tags"] if t["key_raw"] is not None)
    assert base64.b64decode(raw) == bytes.fromhex("626164c36b6579")  # bytes as base64
    summary = json.loads(err.splitlines()[-1])["summary"]
    assert summary["balanced"] and summary["rows"] == 12


def test_python_m_wirecodecs_dump_with_an_option():
    """The real entry point, as a person runs it, on a single event (framing=events)."""
    done = subprocess.run(
        [sys.executable, "-m", "wirecodecs", "dump", "hercules",
         str(DATA / "event_readme_sample.bin"), "-o", '{"framing": "events"}'],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert row["event_time"] == "2018-05-30T11:32:00Z"
    assert row["timestamp"] == 15276799200000000
    bad = subprocess.run(
        [sys.executable, "-m", "wirecodecs", "dump", "hercules",
         str(DATA / "batch_empty.bin"), "-o", '{"framing": "nope"}'],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode != 0 and "framing" in bad.stderr

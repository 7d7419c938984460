"""`python -m wirecodecs` run as a real subprocess on golden vectors."""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wirecodecs import compiled

VECTORS = Path(__file__).resolve().parents[1] / "data" / "kafka"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "wirecodecs", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def sidecar(name: str) -> dict:
    with gzip.open(VECTORS / f"{name}.json.gz") as fh:
        return json.load(fh)


def stderr_lines(result: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in result.stderr.splitlines()]


def summary_of(result: subprocess.CompletedProcess) -> dict:
    lines = stderr_lines(result)
    assert list(lines[-1]) == ["summary"]
    return lines[-1]["summary"]


@pytest.fixture(scope="module")
def transactions():
    """The v2_transactions vector, dumped from a `<topic>-<partition>` folder."""
    data = (VECTORS / "v2_transactions.log").read_bytes()
    return sidecar("v2_transactions"), data


def test_dump_rows_match_the_sidecar(transactions, tmp_path):
    expected, data = transactions
    path = tmp_path / "payments-7" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(data)
    result = run_cli("dump", "kafka", str(path))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    want = [record for batch in expected["batches"] for record in batch["records"]]
    assert len(rows) == expected["record_count"] == len(want)
    for row, record in zip(rows, want, strict=True):
        assert row["offset"] == record["offset"]
        assert row["key"] == record["key_b64"]
        assert row["value"] == record["value_b64"]
        assert [[h["key"], h["value"]] for h in row["headers"]] == record["headers"]
        assert row["topic"] == "payments" and row["partition"] == 7
        when = dt.datetime.fromisoformat(row["event_time"].replace("Z", "+00:00"))
        assert row["event_time"].endswith("Z")
        assert when == EPOCH + dt.timedelta(milliseconds=record["timestamp"])
    markers = [row for row in rows if row["is_control"]]
    assert {row["control_type"] for row in markers} == {"commit", "abort"}
    summary = summary_of(result)
    assert summary["bytes_total"] == expected["size"]
    assert summary["bytes_decoded"] == expected["valid_bytes"]
    assert summary["frames_good"] == len(expected["batches"])
    assert summary["records_good"] == summary["rows"] == expected["record_count"]
    assert summary["balanced"] is True
    assert summary["stop_reason"] == "eof"


def test_dump_reports_quarantined_frames_on_stderr():
    expected = sidecar("corrupt_v2_gzip_payload")
    bad = expected["batches"][expected["corrupted_batch_index"]]
    result = run_cli("dump", "kafka", str(VECTORS / expected["file"]))
    assert result.returncode == 0, result.stderr
    lines = stderr_lines(result)
    quarantined = [line["quarantined"] for line in lines if "quarantined" in line]
    assert [q["byte_offset"] for q in quarantined] == [bad["position"]]
    assert quarantined[0]["length"] == bad["size"]
    head = base64.b64decode(quarantined[0]["head"])
    data = (VECTORS / expected["file"]).read_bytes()
    assert data[bad["position"] :].startswith(head) and head
    assert bad["records"] == []  # gzip fails: the sidecar lists no records for it
    assert len(result.stdout.splitlines()) == expected["record_count"]
    summary = summary_of(result)
    assert summary["frames_bad"] == 1
    assert summary["records_bad"] == bad["records_count"]
    assert summary["bytes_quarantined"] == bad["size"]
    assert summary["balanced"] is True


def test_dump_reports_a_truncated_tail():
    expected = sidecar("truncated_v2_lz4")
    result = run_cli("dump", "kafka", str(VECTORS / expected["file"]))
    assert result.returncode == 0, result.stderr
    summary = summary_of(result)
    assert summary["bytes_truncated_tail"] == expected["trailing_bytes"] > 0
    assert summary["bytes_decoded"] == expected["valid_bytes"]
    assert summary["stop_reason"] == "truncated_tail"
    assert len(result.stdout.splitlines()) == expected["record_count"]


def test_dump_passes_options_to_the_decoder():
    """A frame bound below the first batch's size quarantines the whole file."""
    size = (VECTORS / "v2_none.log").stat().st_size
    result = run_cli(
        "dump", "kafka", str(VECTORS / "v2_none.log"), "-o", '{"max_frame_bytes": 100}'
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    summary = summary_of(result)
    assert summary["bytes_quarantined"] == size
    assert summary["stop_reason"] == "length_out_of_range"


def test_missing_file_exits_2(tmp_path):
    result = run_cli("dump", "kafka", str(tmp_path / "nope.log"))
    assert result.returncode == 2
    assert "nope.log" in result.stderr and "Traceback" not in result.stderr


def test_directory_exits_2(tmp_path):
    result = run_cli("dump", "kafka", str(tmp_path))
    assert result.returncode == 2
    assert str(tmp_path) in result.stderr and "Traceback" not in result.stderr


def test_unknown_format_exits_2_and_lists_known_ones():
    result = run_cli("dump", "avro", str(VECTORS / "v2_none.log"))
    assert result.returncode == 2
    assert "'avro'" in result.stderr and "kafka" in result.stderr
    assert result.stdout == ""


def test_unknown_option_exits_2_and_lists_known_ones():
    result = run_cli("dump", "kafka", str(VECTORS / "v2_none.log"), "-o", '{"colour": "blue"}')
    assert result.returncode == 2
    assert "colour" in result.stderr and "batch_rows" in result.stderr


def test_sample_writes_a_day_and_prints_its_counts(tmp_path):
    out = tmp_path / "dt=2026-11-03"
    result = run_cli("sample", "kafka", str(out), "--date", "2026-11-03", "--seed", "5")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["date"] == "2026-11-03" and report["seed"] == 5
    assert report["totals"]["files"] == len(report["files"]) == 4
    assert (out / "_SUCCESS").exists()
    for item in report["files"]:
        assert Path(item["path"]).stat().st_size > 0
    dumped = run_cli("dump", "kafka", report["files"][0]["path"])
    assert len(dumped.stdout.splitlines()) == report["files"][0]["records"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sample", "protobuf", "out", "--date", "2026-11-03"], "known: "),
        (["sample", "kafka", "out", "--date", "03/11/2026"], "YYYY-MM-DD"),
        (["dump", "kafka"], "FILE"),
        (["warm", "avro"], "invalid choice: 'avro'"),
        ([], "COMMAND"),
    ],
)
def test_usage_errors_exit_2(args, message, tmp_path):
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "out" / "_SUCCESS").exists()


def test_help_describes_both_commands_and_the_channels():
    result = run_cli("--help")
    assert result.returncode == 0
    for word in ("dump", "sample", "stdout", "stderr", "summary", "quarantined"):
        assert word in result.stdout


def test_warm_without_formats_loads_every_formats_walk():
    """As the Docker image's build runs it (here on the cache the suite's start filled):
    the command line of `python -m wirecodecs warm`, then the modules it imported."""
    script = (
        "import sys; from wirecodecs import cli; code = cli.main(['warm']); "
        "print(*sorted(m for m in sys.modules if m.endswith('.compiled'))); sys.exit(code)"
    )
    warmed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "WIRELAKE_WALK": "auto"},
        timeout=600,
    )
    assert warmed.returncode == 0, warmed.stderr[-2000:]
    ready, imported = warmed.stdout.splitlines()
    assert ready.startswith("wirecodecs: compiled walks ready in")
    walks = {f"wirecodecs.{name}.compiled" for name in compiled.WALKS}
    assert set(imported.split()) - {"wirecodecs.compiled"} == walks


def test_warm_fills_the_cache_with_the_named_formats_walks_only(tmp_path):
    warmed = subprocess.run(
        [sys.executable, "-m", "wirecodecs", "warm", "kafka"],
        capture_output=True,
        text=True,
        env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "WIRELAKE_WALK": "auto"},
        timeout=600,
    )
    assert warmed.returncode == 0, warmed.stderr
    assert "compiled walks ready in" in warmed.stdout
    # numba keeps a folder per source folder: <name>_<hash>
    folders = {path.parent.name.rsplit("_", 1)[0] for path in tmp_path.rglob("*.nbi")}
    assert "kafka" in folders and not folders & {"heka", "hercules", "inlong", "cernan"}, folders

"""The Heka sample day decodes to what was written into it, and the generic CLI dumps it."""

from __future__ import annotations

import base64
import datetime as dt
import json
import subprocess
import sys

import pytest
from heka_support import DATA, decode

from wirecodecs import cli
from wirecodecs.heka.samples import SAMPLE_KEYS, SAMPLE_SECRETS_FILE
from wirecodecs.samples import SAMPLE_SECRETS, write_sample_day

DAY = dt.date(2026, 11, 20)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("heka-sample")
    keys = root / "secrets" / SAMPLE_SECRETS_FILE
    keys.parent.mkdir()
    keys.write_bytes(SAMPLE_SECRETS[SAMPLE_SECRETS_FILE])
    return write_sample_day("heka", root / "landing", DAY, seed=3), str(keys)


def test_demo_secrets_are_the_signing_keys():
    assert json.loads(SAMPLE_SECRETS[SAMPLE_SECRETS_FILE]) == SAMPLE_KEYS


def test_sample_day_decodes_to_what_was_written(sample):
    day, keys = sample
    start = dt.datetime.combine(DAY, dt.time(), tzinfo=dt.UTC)
    assert day.paths[-1].name == "_SUCCESS"
    assert sum(path.stat().st_size for path in day.paths) < 400_000
    for item in day.files:
        with item.path.open("rb") as fh:
            got = decode(fh, source=str(item.path), hmac_keys_file=keys)
        acc = got.accounting
        assert acc.balanced and acc.bytes_total == item.path.stat().st_size
        assert (acc.frames_good + acc.frames_bad, acc.records_good) == (
            item.frames,
            item.decodable_records,
        )
        assert (acc.frames_bad, acc.bytes_truncated_tail) == (
            item.undecodable_frames,
            item.truncated_tail_bytes,
        )
        verdicts = [row["hmac_valid"] for row in got.rows]
        assert verdicts.count(False) == item.crc_invalid_records
        assert all(start <= row["event_time"] < start + dt.timedelta(days=1) for row in got.rows)
        assert len({row["uuid"] for row in got.rows}) == len(got.rows)
        assert {row["severity"] for row in got.rows} <= set(range(8))
        assert (acc.bytes_skipped > 0) == item.path.parent.name.startswith("web")
    signed = {item.path.parent.name: item for item in day.files}
    with signed["edge-01"].path.open("rb") as fh:
        rows = decode(fh, hmac_keys_file=keys).rows
    assert {row["hmac_status"] for row in rows} == {"valid"}


def dump(*argv: str, capsys) -> tuple[int, list[dict], list[dict]]:
    code = cli.main(["dump", "heka", *argv])
    out, err = capsys.readouterr()
    return (
        code,
        [json.loads(x) for x in out.splitlines()],
        [json.loads(x) for x in err.splitlines()],
    )


def test_cli_dumps_rows_quarantine_and_summary(capsys, tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"ops_0": "4865ey9urgkidls xtb0[7lf9rzcivthkm"}))
    code, rows, err = dump(
        str(DATA / "invalid_bodies.heka"),
        str(DATA / "signed_md5.heka"),
        "-o",
        json.dumps({"hmac_keys_file": str(keys)}),
        capsys=capsys,
    )
    assert code == 0
    assert len(rows) == 3 + 4
    assert rows[0]["uuid"] and isinstance(rows[0]["timestamp"], int)
    assert rows[0]["event_time"].endswith("Z")
    quarantined = [line["quarantined"] for line in err if "quarantined" in line]
    assert [(q["byte_offset"], q["kind"]) for q in quarantined] == [
        (674, "missing_timestamp"),
        (711, "invalid_protobuf"),
        (728, "invalid_protobuf"),
    ]
    assert base64.b64decode(quarantined[0]["head"])[:1] == b"\x1e"
    summaries = [line["summary"] for line in err if "summary" in line]
    assert [(s["rows"], s["frames_bad"], s["balanced"]) for s in summaries] == [
        (3, 3, True),
        (4, 0, True),
    ]
    assert [row["uuid_valid"] for row in rows[:3]] == [True, False, True]
    assert [row["hmac_status"] for row in rows[3:]] == ["valid"] + ["unknown_signer"] * 3


def test_cli_rejects_unknown_options(capsys):
    code = cli.main(["dump", "heka", str(DATA / "basic.heka"), "-o", '{"max_frame_bytes": 3}'])
    _, err = capsys.readouterr()
    assert code == 2
    assert "known: batch_rows, hmac_keys_file, max_message_size" in err


def test_python_dash_m_wirecodecs_dump_heka():
    """The real entry point, over a gzip file."""
    done = subprocess.run(
        [sys.executable, "-m", "wirecodecs", "dump", "heka", str(DATA / "basic_gzip.heka.gz")],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row["type"] for row in rows] == ["TEST", None, "", "neg", "telemetry"]
    summary = json.loads(done.stderr.splitlines()[-1])["summary"]
    assert (summary["rows"], summary["balanced"], summary["bytes_decoded"]) == (5, True, 1097)

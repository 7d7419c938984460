"""The decode job end to end on local Spark, checked against the golden sidecars.

One landing day in the `<topic>-<partition>/` layout (two rolled segments with their index
files, a v1 gzip log, a CRC-damaged batch, an undecodable gzip batch, a zero-filled tail, a
cut last batch, a raw fetch dump outside any partition folder) is decoded five times in a
row (the Spark runs are the slow part), and every test reads what those runs left behind.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import gzip
import io
import json
import logging
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from jobrun import read_day, read_manifest

from jobs import decode, lake

pytestmark = pytest.mark.spark

VECTORS = Path(__file__).resolve().parents[1] / "data" / "kafka"
DAY = "2024-03-01"
OTHER_DAY = "2024-02-29"
# landing path -> golden vector (a sidecar <vector>.json.gz beside it)
LANDED = {
    "orders-0/00000000000000000000.log": "segment_dir/orders-0/00000000000000000000.log",
    "orders-0/00000000000000002331.log": "segment_dir/orders-0/00000000000000002331.log",
    "payments-1/v1_gzip.log": "v1_gzip.log",
    "audit-2/corrupt_v2_none_crc.log": "corrupt_v2_none_crc.log",
    "audit-3/corrupt_v2_gzip_payload.log": "corrupt_v2_gzip_payload.log",
    "clicks-4/zero_tail_v2_none.log": "zero_tail_v2_none.log",
    "clicks-5/truncated_v2_lz4.log": "truncated_v2_lz4.log",
    "fetch/fetch_recordset_partial.bin": "fetch_recordset_partial.bin",
}
SEGMENTS = ("00000000000000000000", "00000000000000002331")
COMPANIONS = {  # landed next to the segments; none of them holds log entries
    f"orders-0/{base}.{suffix}": f"segment_dir/orders-0/{base}.{suffix}"
    for base in SEGMENTS
    for suffix in ("index", "timeindex")
}


def sidecar(vector: str) -> dict:
    name = vector.rsplit(".", 1)[0] + ".json.gz"
    return json.loads(gzip.decompress((VECTORS / name).read_bytes()))


def expected_accounting(vector: str) -> dict:
    """What the manifest must say for a file, worked out from its sidecar: entries whose
    records could not be decoded are quarantined, and a tail Kafka stops at with an
    error (`file_error`: size below 14) is quarantined; any other tail is truncated."""
    truth = sidecar(vector)
    bad = [batch for batch in truth["batches"] if batch["records_error"]]
    bad_bytes = sum(batch["size"] for batch in bad)
    tail = truth["trailing_bytes"]
    return {
        "bytes_total": truth["valid_bytes"] + tail,
        "bytes_decoded": truth["valid_bytes"] - bad_bytes,
        "bytes_quarantined": bad_bytes + (tail if truth["file_error"] else 0),
        "bytes_truncated_tail": 0 if truth["file_error"] else tail,
        "bytes_skipped": 0,
        "frames_good": len(truth["batches"]) - len(bad),
        "frames_bad": len(bad) + bool(truth["file_error"]),
        "records_good": sum(len(batch["records"]) for batch in truth["batches"]),
    }


def expected_rows(landed: str, vector: str) -> list[tuple]:
    """(byte_offset, offset, crc_valid, timestamp ms, value) of every record, in file order."""
    return [
        (
            batch["position"],
            record["offset"],
            batch["crc_valid"],
            record["timestamp"],
            None if record["value_b64"] is None else base64.b64decode(record["value_b64"]),
        )
        for batch in sidecar(vector)["batches"]
        for record in batch["records"]
    ]


def build_landing(landing: Path) -> None:
    for landed, vector in {**LANDED, **COMPANIONS}.items():
        (landing / landed).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(VECTORS / vector, landing / landed)
    (landing / "orders-0" / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (landing / "_SUCCESS").write_text("")


class Run:
    """One in-process run of the job: exit code, what it logged and printed, what it left."""

    def __init__(self, spark, landing: Path, warehouse: Path, *extra: str) -> None:
        argv = ["--source", "kafka", "--envelope", "kafka", "--payload", "raw", "--date", DAY]
        argv += ["--landing", str(landing), "--warehouse", str(warehouse)]
        date = extra[extra.index("--date") + 1] if "--date" in extra else DAY
        argv += ["--reports", str(warehouse.parent / "reports"), "--max-bad-byte-rate", "0.5"]
        argv += extra
        logged, printed = io.StringIO(), io.StringIO()
        handler = logging.StreamHandler(logged)
        logger = logging.getLogger("wirelake.decode")
        logger.addHandler(handler)
        try:
            with contextlib.redirect_stdout(printed):
                self.code = decode.main(argv, spark=spark)
        finally:
            logger.removeHandler(handler)
        self.log, self.out = logged.getvalue(), printed.getvalue()
        self.rows = read_day(warehouse, "kafka", date)
        self.quarantine = read_day(warehouse, "_quarantine/kafka", date)
        self.manifest = read_manifest(warehouse, "kafka", date)


@pytest.fixture(scope="module")
def day(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("decode")
    landing, warehouse = root / "landing", root / "warehouse"
    build_landing(landing)
    other = Run(spark, landing, warehouse, "--date", OTHER_DAY, "--max-error-rate", "0.01")
    left_behind = stale_leftovers(root, warehouse)
    first = Run(spark, landing, warehouse, "--max-error-rate", "0.01")
    runs = {
        "first": first,
        "rerun": Run(spark, landing, warehouse, "--max-error-rate", "0.01"),
        "over_rate": Run(spark, landing, warehouse, "--max-error-rate", "0.001"),
        "skip": Run(
            spark, landing, warehouse, "--error-policy", "skip", "--max-error-rate", "0.01"
        ),
        "fail": Run(spark, landing, root / "warehouse-fail", "--error-policy", "fail"),
    }
    return {
        "landing": landing,
        "warehouse": warehouse,
        "other": other,
        "left_behind": left_behind,
        **runs,
    }


def stale_leftovers(root: Path, warehouse: Path) -> dict[str, Path]:
    """What a decode of DAY killed before it committed leaves (its parts, in the folder of
    its run), and the day's validation result from before."""
    paths = {
        "killed_run": warehouse / "kafka" / f"dt={DAY}" / "run-0a1b2c3d4e5f" / "part-00000.parquet",
        "validation": root / "reports" / "kafka" / f"dt={DAY}" / "validation.json",
    }
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left behind")
    return paths


def test_a_run_withdraws_the_days_validation_and_reads_no_uncommitted_parts(day):
    left = day["left_behind"]
    assert day["first"].code == 0
    assert not left["validation"].exists()
    assert left["killed_run"].read_bytes() == b"left behind"  # vacuum's, after its retention
    table = str(day["warehouse"] / "kafka")
    assert str(left["killed_run"]) not in lake.day_files(table, dt.date.fromisoformat(DAY))


def uri(day, landed: str) -> str:
    return f"{day['landing']}/{landed}"


def test_rows_match_the_golden_records_file_by_file(day):
    rows = day["first"].rows
    assert day["first"].code == 0
    for landed, vector in LANDED.items():
        mine = rows.filter(pc.equal(rows["source_file"], uri(day, landed)))
        found = list(
            zip(
                mine["byte_offset"].to_pylist(),
                mine["offset"].to_pylist(),
                mine["crc_valid"].to_pylist(),
                mine["timestamp_ms"].to_pylist(),
                mine["value"].to_pylist(),
                strict=True,
            )
        )
        assert sorted(found, key=lambda row: row[:2]) == expected_rows(landed, vector), landed
    assert rows.num_rows == sum(len(expected_rows(landed, v)) for landed, v in LANDED.items())


def test_crc_damage_is_flagged_on_the_rows_of_the_damaged_batch(day):
    rows = day["first"].rows.to_pylist()
    damaged = {
        (row["byte_offset"], row["crc_valid"])
        for row in rows
        if row["source_file"] == uri(day, "audit-2/corrupt_v2_none_crc.log")
    }
    flipped = sidecar("corrupt_v2_none_crc.log")
    position = flipped["batches"][flipped["corrupted_batch_index"]]["position"]
    assert {offset for offset, valid in damaged if not valid} == {position}


def test_topic_and_partition_come_from_the_folder(day):
    rows = day["first"].rows
    pairs = set(
        zip(
            rows["source_file"].to_pylist(),
            rows["topic"].to_pylist(),
            rows["partition"].to_pylist(),
            strict=True,
        )
    )
    assert {
        (source[len(str(day["landing"])) + 1 :], topic, partition)
        for source, topic, partition in pairs
    } == {
        ("orders-0/00000000000000000000.log", "orders", 0),
        ("orders-0/00000000000000002331.log", "orders", 0),
        ("payments-1/v1_gzip.log", "payments", 1),
        ("audit-2/corrupt_v2_none_crc.log", "audit", 2),
        ("audit-3/corrupt_v2_gzip_payload.log", "audit", 3),
        ("clicks-4/zero_tail_v2_none.log", "clicks", 4),
        ("clicks-5/truncated_v2_lz4.log", "clicks", 5),
        ("fetch/fetch_recordset_partial.bin", None, None),
    }


def test_types_survive_and_the_day_is_a_dt_partition(day):
    schema = day["first"].rows.schema
    assert schema.field("event_time").type == pa.timestamp("us", tz="UTC")
    assert (schema.field("magic").type, schema.field("producer_epoch").type) == (
        pa.int8(),
        pa.int16(),
    )
    assert (schema.field("offset").type, schema.field("value").type) == (pa.int64(), pa.binary())
    table = Path(day["first"].manifest["outputs"]["rows"])
    assert table == day["warehouse"] / "kafka"
    files = lake.day_files(str(table), dt.date.fromisoformat(DAY))
    assert files and all(Path(file).parent.parent == table / f"dt={DAY}" for file in files)


def test_undecodable_frames_are_quarantined_with_offset_kind_and_head(day):
    quarantine = day["first"].quarantine.to_pylist()
    gz = sidecar("corrupt_v2_gzip_payload.log")
    bad = gz["batches"][gz["corrupted_batch_index"]]
    zero = sidecar("zero_tail_v2_none.log")
    landing = (VECTORS / "zero_tail_v2_none.log").read_bytes()
    assert [
        (row["source_file"], row["byte_offset"], row["length"], row["error_kind"], row["format"])
        for row in quarantine
    ] == [
        (
            uri(day, "audit-3/corrupt_v2_gzip_payload.log"),
            bad["position"],
            bad["size"],
            "decompress_failed",
            "kafka",
        ),
        (
            uri(day, "clicks-4/zero_tail_v2_none.log"),
            zero["valid_bytes"],
            zero["trailing_bytes"],
            "record_size_too_small",
            "kafka",
        ),
    ]
    assert quarantine[1]["head"] == landing[zero["valid_bytes"] : zero["valid_bytes"] + 64]
    assert "gzip" in quarantine[0]["detail"]


def test_manifest_accounts_for_every_byte_as_the_sidecars_say(day):
    manifest = day["first"].manifest
    files = {entry["source"]: entry for entry in manifest["files"]}
    assert set(files) == {uri(day, landed) for landed in LANDED}
    for landed, vector in LANDED.items():
        entry = files[uri(day, landed)]
        expected = expected_accounting(vector)
        assert {key: entry[key] for key in expected} == expected, landed
        assert entry["bytes_total"] == (VECTORS / vector).stat().st_size
        assert entry["rows"] == entry["records_good"]
    totals = manifest["totals"]
    assert totals["files"] == len(LANDED)
    assert totals["bytes_total"] == sum(
        (VECTORS / vector).stat().st_size for vector in LANDED.values()
    )
    assert totals["rows"] == day["first"].rows.num_rows
    assert totals["quarantine_items"] == 2
    assert totals["frames_bad"] == 2
    assert totals["truncated_tail_files"] == 2  # truncated_v2_lz4 and the fetch dump
    assert totals["error_rate"] == 2 / (totals["frames_good"] + 2)


def test_manifest_records_run_parameters_and_ignored_files(day):
    manifest = day["first"].manifest
    assert (manifest["source"], manifest["format"], manifest["dt"]) == ("kafka", "kafka", DAY)
    assert (manifest["error_policy"], manifest["max_error_rate"]) == ("quarantine", 0.01)
    assert manifest["options"]["batch_rows"] > 0
    ignored = {
        entry["uri"][len(str(day["landing"])) + 1 :]: entry["reason"]
        for entry in manifest["ignored_files"]
    }
    assert ignored == {
        "_SUCCESS": "hidden or marker",
        "orders-0/leader-epoch-checkpoint": "not kafka data",
        **{landed: "not kafka data" for landed in COMPANIONS},
    }


def test_summary_line(day):
    first = day["first"]
    totals = first.manifest["totals"]
    assert first.out.startswith(
        f"decode kafka dt={DAY}: files=8 bytes={totals['bytes_total']} rows={totals['rows']} "
        f"quarantined=2 truncated_tails=2 error_rate="
    )
    assert "planned 8 file(s)" in first.log


def test_rerun_replaces_the_day_with_the_same_rows_and_leaves_other_days(day):
    first, rerun = day["first"], day["rerun"]
    assert rerun.code == 0
    assert rerun.rows.equals(first.rows)
    assert rerun.quarantine.equals(first.quarantine)
    assert rerun.manifest["totals"] == first.manifest["totals"]
    assert day["other"].code == 0
    assert read_day(day["warehouse"], "kafka", OTHER_DAY).equals(day["other"].rows)


def test_error_rate_above_the_threshold_fails_and_keeps_the_previous_output(day):
    run = day["over_rate"]
    assert run.code == 1
    assert "error rate 0.4975% (2 of 402 frames) is above --max-error-rate 0.1000%" in run.log
    assert "nothing written" in run.log
    assert run.rows.equals(day["first"].rows)
    assert run.manifest == day["rerun"].manifest


def test_skip_policy_writes_no_quarantine_and_clears_a_stale_one(day):
    run = day["skip"]
    assert run.code == 0
    assert run.quarantine is None
    assert run.rows.equals(day["first"].rows)
    assert run.manifest["outputs"]["quarantine"] is None
    assert run.manifest["totals"]["quarantine_items"] == 2  # still counted in the manifest


def test_fail_policy_names_file_and_offset_and_writes_nothing(day):
    run = day["fail"]
    assert run.code == 1
    assert "error policy 'fail' and 2 bad frame(s)" in run.log
    gz = sidecar("corrupt_v2_gzip_payload.log")
    position = gz["batches"][gz["corrupted_batch_index"]]["position"]
    assert (
        f"{uri(day, 'audit-3/corrupt_v2_gzip_payload.log')}@{position} decompress_failed" in run.log
    )
    zero = sidecar("zero_tail_v2_none.log")["valid_bytes"]
    assert f"{uri(day, 'clicks-4/zero_tail_v2_none.log')}@{zero} record_size_too_small" in run.log
    assert (run.rows, run.quarantine, run.manifest) == (None, None, None)


def test_a_replaced_run_stays_readable_by_version_until_vacuum(day):
    """Time travel to the first run after the rerun replaced it; vacuum without retention
    then deletes what no current version reads (the replaced run, the killed run's parts)
    and nothing the table reads."""
    table = str(day["warehouse"] / "kafka")
    date = dt.date.fromisoformat(DAY)
    first_version = day["first"].manifest["outputs"]["versions"][table]
    first_files = lake.day_files(table, date, first_version)
    assert lake.day_files(table, date) != first_files  # replaced by the rerun
    keys = [("source_file", "ascending"), ("byte_offset", "ascending")]
    assert (
        lake.read_day(table, date, first_version)
        .sort_by(keys)
        .equals(day["first"].rows.sort_by(keys))
    )
    current = read_day(day["warehouse"], "kafka", DAY)
    deleted = lake.vacuum(table, retention_hours=0)
    assert not day["left_behind"]["killed_run"].exists()
    assert {Path(file).name for file in first_files} <= {Path(path).name for path in deleted}
    assert not any(Path(file).exists() for file in first_files)
    assert read_day(day["warehouse"], "kafka", DAY).equals(current)
    assert read_day(day["warehouse"], "kafka", OTHER_DAY).equals(day["other"].rows)

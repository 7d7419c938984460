"""The decode job on local Spark over Kafka segments whose record values are another
format's messages (envelope kafka + payload), one sample day per carried format.

What must come out is what the sample writer says it put in (rows = decodable records,
one quarantined value per damaged message), never what the decoder reports about itself.
"""

from __future__ import annotations

import pyarrow.compute as pc
import pytest
from jobrun import decoded_day

from wirecodecs import samples
from wirecodecs.kafka.carrier import ENVELOPE_FIELDS

pytestmark = pytest.mark.spark

DAY = "2026-11-20"
CARRIED = [("inlong_kafka", "inlong"), ("hercules_kafka", "hercules")]  # (source, payload)


@pytest.fixture(scope="module", params=CARRIED, ids=[source for source, _ in CARRIED])
def run(request, spark, tmp_path_factory):
    source, payload = request.param
    root = tmp_path_factory.mktemp(source)
    landing, warehouse = root / "landing", root / "warehouse"
    written = samples.write_sample_day(source, landing, DAY, seed=3)
    args = ["--envelope", "kafka", "--payload", payload, "--max-error-rate", "0.5"]
    left = decoded_day(spark, source, DAY, landing, warehouse, *args)
    return {"payload": payload, "written": written, **left}


def test_every_decodable_message_becomes_rows_with_its_kafka_place(run):
    assert run["code"] == 0
    totals, rows = run["written"].totals(), run["rows"]
    assert rows.num_rows == totals["records"] - totals["undecodable_records"]
    for field in ENVELOPE_FIELDS:
        assert field.name in rows.column_names
    assert rows.column("kafka_offset").null_count == 0
    assert rows.column("event_time").null_count == 0
    landed = {str(item.path) for item in run["written"].files}
    assert set(rows.column("source_file").to_pylist()) <= landed


def test_a_damaged_message_is_quarantined_alone(run):
    totals, quarantine = run["written"].totals(), run["quarantine"]
    assert quarantine.num_rows == totals["undecodable_frames"] >= 1
    kinds = quarantine.column("error_kind").to_pylist()
    assert all(kind.startswith("payload_") for kind in kinds), kinds
    assert set(quarantine.column("format").to_pylist()) == {f"kafka+{run['payload']}"}
    assert pc.all(pc.match_substring(quarantine.column("detail"), "kafka offset")).as_py()


def test_manifest_counts_payloads_and_every_byte(run):
    totals = run["manifest"]["totals"]
    written = run["written"].totals()
    assert totals["frames_bad"] == 0
    assert totals["payloads_bad"] == written["undecodable_frames"]
    assert totals["records_good"] == totals["rows"] == run["rows"].num_rows
    landed = sum(item.path.stat().st_size for item in run["written"].files)
    accounted = ("bytes_decoded", "bytes_quarantined", "bytes_truncated_tail", "bytes_skipped")
    assert totals["bytes_total"] == landed == sum(totals[key] for key in accounted)
    assert totals["error_rate"] == pytest.approx(
        totals["payloads_bad"] / (totals["payloads_good"] + totals["payloads_bad"])
    )

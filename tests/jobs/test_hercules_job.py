"""The decode job on local Spark over a Hercules gate-batch landing, checked against the
golden sidecars and the sample writer's record of what it wrote; then the Spark SQL of
docs/hercules.md run on the written table (tags reached without a UDF, types kept).

One landing: golden gate batches (plain, LZ4 body, a bad type code, a cut event, trailing
bytes) beside a sample day of realistic log events; one job run, read back with pyarrow.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pytest
from jobrun import decoded_day

from jobs import lake
from wirecodecs.hercules.schema import HERCULES_SCHEMA
from wirecodecs.samples import write_sample_day

pytestmark = pytest.mark.spark

VECTORS = Path(__file__).resolve().parents[1] / "data" / "hercules"
DAY = "2026-11-03"
LANDED = {  # landing path -> golden vector (sidecar <vector>.json.gz)
    "gate-a/batch_all.bin": "batch_all.bin",
    "gate-a/batch_all.bin.lz4": "batch_all.bin",
    "gate-b/corrupt_type_zero.bin": "corrupt_type_zero.bin",
    "gate-b/corrupt_truncated_mid_event.bin": "corrupt_truncated_mid_event.bin",
    "gate-b/corrupt_trailing_bytes.bin": "corrupt_trailing_bytes.bin",
}
# The example queries of docs/hercules.md (and the README), run here as written there.
NESTED_QUERY = """
SELECT uuid,
       try_element_at(filter(tags, t -> t.path = 'properties/level1/level2/level3'), 1)
           .string_value AS level3,
       get_json_object(tags_json, '$.properties.level1.sibling') AS sibling
FROM hercules
WHERE exists(tags, t -> t.path = 'properties/level1')
"""
TYPED_QUERY = """
SELECT t.path, t.type, t.int_value, t.float_value, hex(t.float_bits) AS bits
FROM hercules LATERAL VIEW explode(tags) AS t
WHERE t.parent = -1 AND t.type IN ('Byte', 'Short', 'Integer', 'Long', 'Float', 'Double')
  AND uuid = '0d917a1e-4524-518d-888d-bbc73c5705b9'
"""
VECTOR_QUERY = """
SELECT t.index, t.int_value
FROM hercules LATERAL VIEW explode(tags) AS t
WHERE t.path LIKE 'vInt[%]' AND source_file LIKE '%/gate-a/batch_all.bin'
ORDER BY t.index
"""
COMMON_TAGS_QUERY = """
SELECT try_element_at(filter(tags, t -> t.path = 'properties/project'), 1).string_value AS project,
       get_json_object(tags_json, '$.properties.environment') AS environment,
       count(*) AS events
FROM hercules
GROUP BY 1, 2
"""


def sidecar(vector: str) -> dict:
    return json.loads(gzip.decompress((VECTORS / f"{vector}.json.gz").read_bytes()))


def golden_events(vector: str) -> list[dict]:
    truth = sidecar(vector)
    return truth.get("events", truth.get("events_decodable_before_error"))


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("hercules")
    landing, warehouse = root / "landing", root / "warehouse"
    sample = write_sample_day("hercules", landing, DAY, 21)  # writes _SUCCESS too
    for landed, vector in LANDED.items():
        (landing / landed).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(VECTORS / (vector + ".lz4" if landed.endswith(".lz4") else vector),
                        landing / landed)  # fmt: skip
    args = ["--envelope", "hercules", "--payload", "raw", "--max-error-rate", "0.1"]
    left = decoded_day(spark, "hercules", DAY, landing, warehouse, *args)
    files = lake.day_files(str(warehouse / "hercules"), dt.date.fromisoformat(DAY))
    spark.read.parquet(*files).createOrReplaceTempView("hercules")
    return {"landing": landing, "sample": sample, **left}


def rows_of(run, landed: str) -> list[dict]:
    rows = run["rows"]
    return rows.filter(pc.equal(rows["source_file"], f"{run['landing']}/{landed}")).to_pylist()


def test_golden_batches_land_as_their_sidecars_say(run):
    assert run["code"] == 0
    for landed, vector in LANDED.items():
        found = [
            (row["byte_offset"], row["uuid"], row["timestamp"], json.loads(row["tags_json"]))
            for row in rows_of(run, landed)
        ]
        expected = [
            (event["offset"], event["uuid"], event["timestamp_ticks_100ns"], event["tags"])
            for event in golden_events(vector)
        ]
        assert found == expected, landed


def test_sample_day_counts_reconcile(run):
    manifest = run["manifest"]
    sample_rows = sum(item.decodable_records for item in run["sample"].files)
    golden_rows = sum(len(golden_events(vector)) for vector in LANDED.values())
    assert manifest["totals"]["records_good"] == run["rows"].num_rows == sample_rows + golden_rows
    for item in run["sample"].files:
        assert len(rows_of(run, item.path.relative_to(run["landing"]).as_posix())) == (
            item.decodable_records
        )
    cut = sum(item.truncated_tail_bytes for item in run["sample"].files)
    truth = sidecar("corrupt_truncated_mid_event.bin")
    last = truth["events_decodable_before_error"][-1]
    assert manifest["totals"]["bytes_truncated_tail"] == cut + truth["length"] - (
        last["offset"] + last["size"]
    )


def test_quarantine_names_the_bad_regions(run):
    quarantine = run["quarantine"].to_pylist()
    found = {
        (Path(row["source_file"]).name, row["byte_offset"], row["error_kind"]) for row in quarantine
    }
    assert ("corrupt_type_zero.bin", 4, "invalid_type") in found
    assert ("corrupt_trailing_bytes.bin", 605, "trailing_bytes") in found
    assert sum(kind == "unknown_type" for _, _, kind in found) == 1  # the sample's bad event
    assert len(quarantine) == 3


def test_types_survive_the_lake(run):
    schema = run["rows"].schema
    for name in ("version", "timestamp", "uuid", "size", "tag_count", "tags_json", "event_time"):
        assert schema.field(name).type == HERCULES_SCHEMA.field(name).type, name
    tag = schema.field("tags").type.value_type
    expected = HERCULES_SCHEMA.field("tags").type.value_type
    assert [(f.name, f.type) for f in tag] == [(f.name, f.type) for f in expected]


def test_docs_query_reaches_nested_tags(spark, run):
    found = {tuple(row) for row in spark.sql(NESTED_QUERY).collect()}
    assert found == {("95c6fe9b-620e-5c70-bbd2-a48f5a613e2f", "deep", "7")}


def test_docs_query_keeps_every_numeric_type(spark, run):
    (event,) = [e for e in sidecar("batch_all.bin")["events"] if e["uuid"].startswith("0d917a1e")]
    expected = set()
    for tag in event["tags_typed"]:
        if tag["type"] in ("Float", "Double"):
            value = tag["value"]["value"]
            bits = int(tag["value"]["bits"], 16)  # hex() of the int64 column shows the same
            expected.add((tag["key"], tag["type"], None, value, f"{bits:X}"))
        elif tag["type"] in ("Byte", "Short", "Integer", "Long"):
            expected.add((tag["key"], tag["type"], tag["value"], None, None))
    found = {tuple(row) for row in spark.sql(TYPED_QUERY).collect()}
    assert len(expected) == 22 and found == expected


def test_docs_query_reaches_vector_elements(spark, run):
    (event,) = [e for e in sidecar("batch_all.bin")["events"] if e["offset"] == 1089]
    (vint,) = [tag for tag in event["tags_typed"] if tag["key"] == "vInt"]
    found = [tuple(row) for row in spark.sql(VECTOR_QUERY).collect()]
    assert found == list(enumerate(vint["value"]))


def test_docs_query_counts_events_by_common_tags(spark, run):
    found = {
        (row.project, row.environment): row.events for row in spark.sql(COMMON_TAGS_QUERY).collect()
    }
    assert sum(found.values()) == run["rows"].num_rows
    sample = sum(item.decodable_records for item in run["sample"].files)
    assert sum(n for (project, _), n in found.items() if project is not None) == sample
    assert {key for key in found if key[0] is not None} <= {
        ("shop", "production"),
        ("shop", "staging"),
        ("billing", "production"),
    }


def test_the_documented_queries_are_the_ones_run_here():
    """Every Hercules query the README and docs/hercules.md show is one this file runs."""
    root = Path(__file__).resolve().parents[2]
    tested = {" ".join(query.split()) for query in (NESTED_QUERY, TYPED_QUERY, VECTOR_QUERY,
                                                   COMMON_TAGS_QUERY)}  # fmt: skip
    shown = []
    for page in (root / "README.md", root / "docs" / "hercules.md"):
        for block in re.findall(r"```sql\n(.*?)```", page.read_text(), re.S):
            for statement in block.split(";"):
                lines = [line for line in statement.splitlines() if not line.startswith("--")]
                if " ".join(lines).strip():
                    shown.append(" ".join(" ".join(lines).split()))
    assert len(shown) >= 5
    assert set(shown) <= tested, set(shown) - tested

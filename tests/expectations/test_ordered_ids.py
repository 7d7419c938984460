"""Ids unique without a sort: on Parquet parts written as the decode writes them, with
duplicates injected within a part, across parts and across files, the ordered check
counts what Great Expectations' own expect_compound_columns_to_be_unique counts, and
searches only the groups that break the order."""

from __future__ import annotations

import great_expectations as gx
import great_expectations.expectations as gxe
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from golden_cases import cases

from expectations.ordered_ids import duplicate_rows, order_of, suspect_groups
from wirecodecs.kafka.schema import KAFKA_SCHEMA

pytestmark = pytest.mark.spark
KAFKA_IDS = ["topic", "partition", "offset"]


def ge_unexpected_count(frame, columns: list[str]) -> int:
    """What Great Expectations' own engine counts (a plain Spark data source)."""
    context = gx.get_context(mode="ephemeral")
    batch = (
        context.data_sources.add_spark(name="plain", persist=False)
        .add_dataframe_asset(name="ids")
        .add_batch_definition_whole_dataframe(name="all")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    result = batch.validate(gxe.ExpectCompoundColumnsToBeUnique(column_list=columns))
    return result.result["unexpected_count"]


def write_parts(spark, folder, parts: list[list[dict]], schema: pa.Schema):
    """The parts as Parquet files under `folder`: the frame reading them, and the files."""
    folder.mkdir()
    files = []
    for index, rows in enumerate(parts):
        files.append(str(folder / f"part-{index}.parquet"))
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), files[-1], row_group_size=1000)
    return spark.read.parquet(*files), files


@pytest.fixture(scope="module")
def kafka_parts(tmp_path_factory) -> list[list[dict]]:
    """The three golden Kafka files, one part each (two rolled segments of orders-0)."""
    rows = cases()["kafka-clean"].rows(tmp_path_factory.mktemp("k"))
    files = sorted({row["source_file"] for row in rows})
    return [[row for row in rows if row["source_file"] == name] for name in files]


def within_a_part(parts):
    first, *rest = [list(part) for part in parts]
    return [first + first[50:53], *rest]  # a batch replayed at the end of its segment


def across_parts(parts):
    first, second, third = [list(part) for part in parts]
    return [first, [dict(first[-1]), *second], third]  # still increasing, ranges overlap


def across_files(parts):
    return [*parts, [dict(row) for row in parts[2][:40]]]  # a file loaded twice, in part


def interleaved(parts):
    """Two parts of one partition whose ranges overlap without a shared offset."""
    first, second, third = parts
    return [first[0::2], first[1::2], second, third]


def without_folder(parts):
    """The payments file landed outside a <topic>-<partition>/ folder, and twice."""
    third = [{**row, "topic": None, "partition": None} for row in parts[2]]
    return [parts[0], parts[1], third, third[:5]]


@pytest.mark.parametrize(
    ("change", "suspects"),
    [
        (list, []),
        (within_a_part, [("orders", 0)]),
        (across_parts, [("orders", 0)]),
        (across_files, [("payments", 1)]),
        (interleaved, [("orders", 0)]),
        (without_folder, [(None, None)]),
    ],
)
def test_counts_what_great_expectations_counts(spark, tmp_path, kafka_parts, change, suspects):
    frame, files = write_parts(spark, tmp_path / "day", change(kafka_parts), KAFKA_SCHEMA)

    assert suspect_groups(files, KAFKA_IDS, 1) == suspects
    expected = ge_unexpected_count(frame, KAFKA_IDS)
    assert duplicate_rows(frame, KAFKA_IDS, 1, suspects) == expected
    assert (expected > 0) == (change not in (list, interleaved))


def test_carried_kafka_ids_and_cernan_records(spark, tmp_path):
    """kafka_* columns of a Kafka-borne format, and a two-column order (Cernan)."""
    carried = cases()["hercules_kafka-clean"]
    rows = carried.rows(tmp_path / "h")
    replayed = [rows, rows[:3]]  # three records of the topic read twice
    ids = ["kafka_topic", "kafka_partition", "kafka_offset"]
    frame, files = write_parts(spark, tmp_path / "carried", replayed, carried.schema)
    expected = ge_unexpected_count(frame, ids)
    found = suspect_groups(files, ids, order_of(ids))
    assert duplicate_rows(frame, ids, order_of(ids), found) == expected == 6

    records = cases()["cernan-clean"]
    rows = records.rows(tmp_path / "c")
    ids = ["source_file", "packet_index", "record_index"]
    frame, files = write_parts(spark, tmp_path / "cernan", [rows, rows[5:6]], records.schema)
    expected = ge_unexpected_count(frame, ids)
    found = suspect_groups(files, ids, order_of(ids))
    assert duplicate_rows(frame, ids, order_of(ids), found) == expected == 2

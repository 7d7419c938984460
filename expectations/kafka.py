"""The Kafka suite: checks on one day of decoded Kafka records (codecs/kafka/schema.py)."""

from __future__ import annotations

from collections.abc import Mapping

import great_expectations.expectations as gxe
from great_expectations.expectations.expectation import Expectation

from expectations.checks import (
    WINDOW,
    RunFacts,
    SuiteSpec,
    checksum_verdicts,
    in_run_window,
    meta,
    required,
    row_count_matches_manifest,
    unique_ids,
)

COMPRESSIONS = ["none", "gzip", "snappy", "lz4", "zstd"]


def kafka_expectations(facts: RunFacts, params: Mapping[str, float]) -> list[Expectation]:
    budget = params["crc_error_budget"]
    return [
        checksum_verdicts("crc_valid", budget, always_present=True),
        checksum_verdicts("record_crc_valid", budget, always_present=False),
        in_run_window("event_time", facts, params),
        unique_ids(["topic", "partition", "offset"]),
        *required(["source_file", "byte_offset", "offset", "magic", "batch_base_offset"]),
        row_count_matches_manifest(facts),
        # Warnings: worth a look, but the data is usable.
        *required(
            ["topic", "partition"],
            critical=False,
            why="the file was not in a <topic>-<partition>/ folder",
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="compression",
            value_set=COMPRESSIONS,
            meta=meta(False, "a codec id Kafka does not define"),
        ),
    ]


KAFKA_SUITE = SuiteSpec(
    name="kafka",
    description="Kafka records: CRCs, event times in the run window, offsets unique per "
    "partition, lineage present, row count reconciled with the decode manifest.",
    # crc_error_budget: share of rows allowed a false crc_valid (and record_crc_valid)
    defaults={"crc_error_budget": 0.0, **WINDOW},
    expectations=kafka_expectations,
)

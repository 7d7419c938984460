"""The Hercules suite: checks on one day of decoded Hercules events (codecs/hercules/schema.py).

Common tags are checked through the typed tag list with Spark SQL (no UDF): a row fails
when no entry has the configured path, type String and a value. The suite parameter
`common_tags` is text, a comma-separated list of HPaths (tag names joined by `/`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import great_expectations.expectations as gxe
from great_expectations.expectations.expectation import Expectation

from expectations.checks import (
    WINDOW,
    Param,
    RunFacts,
    SuiteSpec,
    checksum_verdicts,
    in_run_window,
    meta,
    names_list,
    required,
    row_count_matches_manifest,
    unique_ids,
)

# HPaths of tag names that follow the naming convention (and so need no escaping in `path`)
_HPATH = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")


def missing_tag_query(path: str) -> str:
    """Spark SQL selecting the rows of `{batch}` that lack a String tag at `path`."""
    if not _HPATH.fullmatch(path):
        raise ValueError(f"common tag {path!r} is not an HPath of [A-Za-z0-9_.-] names")
    return (
        "SELECT source_file, byte_offset, uuid FROM {batch} WHERE NOT exists(tags, t -> "
        f"t.path = '{path}' AND t.type = 'String' AND t.string_value IS NOT NULL)"
    )


def hercules_expectations(facts: RunFacts, params: Mapping[str, Param]) -> list[Expectation]:
    common = [
        gxe.UnexpectedRowsExpectation(
            unexpected_rows_query=missing_tag_query(path),
            description=f"every event carries the common tag {path}",
            meta=meta(True, f"events without {path} cannot be attributed (common tags)"),
        )
        for path in names_list(str(params["common_tags"]))
    ]
    return [
        in_run_window("event_time", facts, params),
        unique_ids(["timestamp", "uuid"]),
        *required(["source_file", "byte_offset", "event_time", "timestamp", "uuid"]),
        gxe.ExpectColumnValuesToBeInSet(
            column="version",
            value_set=[1],
            meta=meta(True, "the gate accepts only version 1; another is garbage or a new format"),
        ),
        *common,
        row_count_matches_manifest(facts),
    ]


# The gate keys each Kafka record by the event's UUID (16 bytes, RFC 4122 order).
KEY_IS_NOT_UUID = (
    "SELECT source_file, byte_offset, kafka_offset FROM {batch} "
    "WHERE kafka_key IS NULL OR lower(hex(kafka_key)) <> replace(uuid, '-', '')"
)


def hercules_kafka_expectations(facts: RunFacts, params: Mapping[str, Param]) -> list[Expectation]:
    return [
        *hercules_expectations(facts, params),
        checksum_verdicts(
            "kafka_crc_valid", float(params["crc_error_budget"]), always_present=True
        ),
        gxe.UnexpectedRowsExpectation(
            unexpected_rows_query=KEY_IS_NOT_UUID,
            description="every record key is its event's UUID",
            meta=meta(
                True,
                "the gate keys records by event UUID; another key means another "
                "producer wrote to the topic",
            ),
        ),
    ]


HERCULES_SUITE = SuiteSpec(
    name="hercules",
    description="Hercules events: version 1, event times in the run window, (timestamp, uuid) "
    "unique, common tags present, row count reconciled with the decode manifest.",
    # common_tags: comma-separated HPaths of String tags every event must carry
    defaults={"common_tags": "properties/project,properties/environment", **WINDOW},
    expectations=hercules_expectations,
)
HERCULES_KAFKA_SUITE = SuiteSpec(
    name="hercules_kafka",
    description="Hercules events read from the gate's Kafka topic: the hercules suite, plus "
    "Kafka CRCs and record keys equal to the event UUIDs.",
    # crc_error_budget: share of rows allowed a false kafka_crc_valid
    defaults={**HERCULES_SUITE.defaults, "crc_error_budget": 0.0},
    expectations=hercules_kafka_expectations,
)

"""The cernan suites: one day of decoded Avro records (`cernan`) and of their packets
(`cernan_packets`, the companion table <source>_packets); see docs/cernan.md."""

from __future__ import annotations

from collections.abc import Mapping

import great_expectations.expectations as gxe
from great_expectations.expectations.expectation import Expectation
from great_expectations.expectations.row_conditions import Column

from expectations.checks import (
    WINDOW,
    Param,
    RunFacts,
    SuiteSpec,
    in_run_window,
    meta,
    names_list,
    required,
    row_count_matches_manifest,
    unique_ids,
)

OK_PACKETS = Column("status") == "ok"


def records_expectations(facts: RunFacts, params: Mapping[str, Param]) -> list[Expectation]:
    return [
        in_run_window("event_time", facts, params),
        unique_ids(["source_file", "packet_index", "record_index"]),
        *required(
            ["source_file", "byte_offset", "packet_index", "id", "shard_by", "schema_fingerprint"]
        ),
        row_count_matches_manifest(facts),
        # A warning: event_time comes from a datum field (decoder option event_time_field).
        *required(
            ["event_time"],
            critical=False,
            why="the datum lacks the configured event_time_field, or it is out of range",
        ),
    ]


def packets_expectations(facts: RunFacts, params: Mapping[str, Param]) -> list[Expectation]:
    totals = facts.manifest["totals"]
    return [
        gxe.ExpectColumnPairValuesToBeEqual(
            column_A="record_count",
            column_B="declared_record_count",
            row_condition=OK_PACKETS,
            meta=meta(True, "an ok packet's rows differ from the counts its Avro blocks declare"),
        ),
        gxe.ExpectColumnSumToBeBetween(
            column="record_count",
            min_value=totals["records_good"],
            max_value=totals["records_good"],
            meta=meta(True, "the packets' record counts do not add up to the records table"),
        ),
        gxe.ExpectTableRowCountToEqual(
            value=totals["table_rows"]["packets"],
            meta=meta(True, "packet rows lost or added between decoding and the table"),
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="schema_fingerprint",
            value_set=names_list(str(params["allowed_fingerprints"])),
            meta=meta(True, "a writer schema nobody approved: add its fingerprint once checked"),
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="status",
            value_set=["ok"],
            mostly=1.0 - float(params["packet_error_budget"]),
            meta=meta(True, "more corrupt packets than the error budget allows"),
        ),
        unique_ids(["source_file", "packet_index"]),
        *required(["source_file", "byte_offset", "packet_index", "status", "complete"]),
    ]


CERNAN_SUITE = SuiteSpec(
    name="cernan",
    description="cernan Avro records: event times in the run window, one row per datum, "
    "lineage and packet identity present, row count reconciled with the decode manifest.",
    defaults={**WINDOW},
    expectations=records_expectations,
)

CERNAN_PACKETS_SUITE = SuiteSpec(
    name="cernan_packets",
    description="cernan packets: per-packet record counts reconciled with the Avro blocks "
    "and the records table, writer schemas within the approved fingerprints, corrupt "
    "packets within the error budget, packet rows reconciled with the decode manifest.",
    # allowed_fingerprints: comma-separated CRC-64-AVRO fingerprints (16 hex digits) of
    # the approved writer schemas; packet_error_budget: share of packets allowed to fail
    defaults={"allowed_fingerprints": "", "packet_error_budget": 0.0},
    expectations=packets_expectations,
    table="packets",
)

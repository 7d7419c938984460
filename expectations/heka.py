"""The Heka suite: checks on one day of decoded Heka messages (codecs/heka/schema.py)."""

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
    checksum_verdicts,
    in_run_window,
    meta,
    required,
    row_count_matches_manifest,
)

UUID_TEXT = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
VALID_UUIDS = Column("uuid_valid") == True  # noqa: E712 (a GX row condition, not a test)


def heka_expectations(facts: RunFacts, params: Mapping[str, Param]) -> list[Expectation]:
    signed = params["signed"] >= 1
    signatures = [
        checksum_verdicts("hmac_valid", params["hmac_error_budget"], always_present=signed)
    ]
    if signed:  # an unsigned record (null verdict) is as bad as a forged one
        signatures += required(["hmac_valid"], why="the source signs every record (signed: 1)")
    return [
        *signatures,
        in_run_window("event_time", facts, params),
        gxe.ExpectColumnValuesToBeInSet(
            column="uuid_valid",
            value_set=[True],
            mostly=1.0 - params["invalid_uuid_budget"],
            meta=meta(True, "uuids not 16 bytes (text, cut or missing) beyond invalid_uuid_budget"),
        ),
        gxe.ExpectColumnValuesToMatchRegex(
            column="uuid",
            regex=UUID_TEXT,
            row_condition=VALID_UUIDS,
            meta=meta(True, "a 16-byte uuid is not canonical UUID text"),
        ),
        gxe.ExpectColumnValuesToBeUnique(
            column="uuid", meta=meta(True, "a uuid twice: a file loaded twice or a replayed log")
        ),
        gxe.ExpectColumnValuesToBeBetween(
            column="severity",
            min_value=0,
            max_value=7,
            meta=meta(True, "severity is a syslog level, 0 (emergency) to 7 (debug)"),
        ),
        *required(["source_file", "byte_offset", "timestamp"]),
        *required(["event_time"], why="a nanosecond clock outside years 1-9999"),
        row_count_matches_manifest(facts),
        # Warnings: worth a look, but the data is usable.
        *required(["type", "hostname"], critical=False, why="producers normally set them"),
    ]


HEKA_SUITE = SuiteSpec(
    name="heka",
    description="Heka messages: HMAC signatures, event times in the run window, uuids "
    "16 bytes (within a budget), canonical and unique, syslog severities, row count "
    "reconciled with the decode manifest.",
    defaults={
        # signed: 1 = every record must carry a valid signature; 0 = only signed ones are
        # checked (unsigned records, hmac_valid null, pass).
        "signed": 0.0,
        "hmac_error_budget": 0.0,  # share of signed rows allowed a false hmac_valid
        # share of rows allowed a uuid that is not 16 bytes (uuid_valid false): 0 = every
        # such row fails the day; 1 for a fleet known to send text uuids (docs/heka.md)
        "invalid_uuid_budget": 0.0,
        **WINDOW,
    },
    expectations=heka_expectations,
)

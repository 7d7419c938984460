"""The InLong suites: checks on one day of decoded InLongMsg items (codecs/inlong/schema.py).

`inlong` checks landed files (a message is identified by source_file + byte_offset),
`inlong_kafka` Kafka-borne messages (a message is one Kafka record: + kafka_offset).
Reconciling declared counts: every message that declares MsgCnt (V2, V3, V4) must have
exactly that many events in the table, an event being an item, or for V4 items with
ExtField bit 5 (LF-joined) each line of the item. Done in Spark SQL (no UDF), so it
checks what reached the table, not what the decoder thought.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import partial

import great_expectations.expectations as gxe
from great_expectations.expectations.expectation import Expectation

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
)

LF_JOINED = 0x20  # V4 ExtField bit 5
_ATTRIBUTE_KEY = re.compile(r"[A-Za-z0-9_.\-]+")  # keys that can be quoted in SQL as they are


def events_match_declared_count(message_key: Sequence[str]) -> Expectation:
    """Per message, the events in the table equal its declared MsgCnt. Lines are counted
    on CAST(body AS STRING), which never fails on bytes that are not UTF-8 (`decode`
    raises on them under ANSI mode)."""
    key = ", ".join(message_key)
    events = (
        f"CASE WHEN ext_field & {LF_JOINED} = {LF_JOINED} "
        "THEN size(split(CAST(body AS STRING), '\\n')) ELSE 1 END"
    )
    query = (
        f"SELECT {key}, max(msg_count) AS declared, sum({events}) AS events FROM {{batch}} "
        f"WHERE msg_count IS NOT NULL GROUP BY {key} "
        "HAVING max(msg_count) <> sum(" + events + ") OR min(msg_count) <> max(msg_count)"
    )
    return gxe.UnexpectedRowsExpectation(
        unexpected_rows_query=query,
        description="declared message counts (MsgCnt) equal the events decoded per message",
        meta=meta(True, "items lost or duplicated between the producer and the table"),
    )


def attributes_present(keys: Sequence[str]) -> Expectation:
    """Every item's attribute map carries each of `keys`."""
    for key in keys:
        if not _ATTRIBUTE_KEY.fullmatch(key):
            raise ValueError(f"attribute key {key!r}: use letters, digits, '_', '.', '-'")
    missing = " OR ".join(f"NOT map_contains_key(attributes, '{key}')" for key in keys)
    return gxe.UnexpectedRowsExpectation(
        unexpected_rows_query=(
            f"SELECT source_file, byte_offset, item_index FROM {{batch}} WHERE {missing}"
        ),
        description=f"attribute keys {', '.join(keys)} present on every item",
        meta=meta(True, "consumers (Sort, the manager) need these attributes"),
    )


def inlong_expectations(
    message_key: Sequence[str], facts: RunFacts, params: Mapping[str, Param]
) -> list[Expectation]:
    keys = names_list(str(params["required_attributes"]))
    return [
        in_run_window("event_time", facts, params),
        *required(["source_file", "byte_offset", "version", "item_index", "body"]),
        *required(
            ["group_id", "stream_id"],
            why="InLong routes by group and stream id (groupId/bid, streamId/tid, V4 numbers)",
        ),
        events_match_declared_count(message_key),
        *([attributes_present(keys)] if keys else []),
        row_count_matches_manifest(facts),
        # Warnings: worth a look, but the data is usable.
        *required(
            ["event_time"],
            critical=False,
            why="no readable `t` or `dt` attribute: Sort would reject the message",
        ),
    ]


_DEFAULTS: dict[str, Param] = {
    # required_attributes: comma-separated keys every item's attribute map must carry
    "required_attributes": "",
    **WINDOW,
}
_DESCRIPTION = (
    "InLongMsg items: event times in the run window, group/stream ids present, declared "
    "message counts reconciled with the events decoded, configured attributes present, "
    "row count reconciled with the decode manifest."
)

INLONG_SUITE = SuiteSpec(
    name="inlong",
    description=_DESCRIPTION,
    defaults=_DEFAULTS,
    expectations=partial(inlong_expectations, ["source_file", "byte_offset"]),
)
INLONG_KAFKA_SUITE = SuiteSpec(
    name="inlong_kafka",
    description=_DESCRIPTION + " Messages are Kafka record values.",
    defaults=_DEFAULTS,
    expectations=partial(inlong_expectations, ["source_file", "byte_offset", "kafka_offset"]),
)

"""The golden validation cases: every format's suite on a clean and a failing day, rows
built as the suite tests build them (from the vectors and sample writers), and how a
result is compared (`comparable`: without run ids, times and expectation ids).

The golden files under tests/data/validation_golden/ were written by the validation path
before scan-shared metrics (issue 28), so a test comparing with them holds the new path to
the old one's results: `<case>.json` the results (commit 8d262a1), `<case>.docs.txt` the
words of the Data Docs validation page (commit 5cdd27d, times as <time>; `docs_text`)."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "validation_golden"
RUN = "golden-run"  # the name the cases are validated under (Data Docs show it)
_TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z|\d{8}T\d{6}\.\d+Z")


@dataclass(frozen=True)
class Case:
    suite: str
    schema: pa.Schema
    rows: Callable[[Path], list[dict]]  # given a scratch folder
    facts: Callable[[list[dict]], object]  # RunFacts for the clean rows
    params: dict


def _kafka() -> dict[str, Case]:
    from suite_run import manifest
    from test_kafka_suite import DAY, GOOD, doctored, golden_rows

    from expectations.checks import RunFacts
    from wirecodecs.kafka.schema import KAFKA_SCHEMA

    def good(_):
        return [row for name, topic, part in GOOD for row in golden_rows(name, topic, part)]

    def facts(rows):
        return RunFacts(DAY, manifest("kafka", DAY, len(rows)))

    return {
        "kafka-clean": Case("kafka", KAFKA_SCHEMA, good, facts, {}),
        "kafka-failing": Case(
            "kafka", KAFKA_SCHEMA, lambda tmp: doctored(good(tmp)), lambda r: facts(r[:-1]), {}
        ),
    }


def _heka() -> dict[str, Case]:
    import random

    from suite_run import manifest
    from test_heka_suite import DAY, doctored, row

    from expectations.checks import RunFacts
    from wirecodecs.heka.schema import HEKA_SCHEMA

    def good(_):
        rng = random.Random(11)
        return [row(rng, i, signed=i % 3 != 0) for i in range(300)]

    def facts(rows):
        return RunFacts(DAY, manifest("heka", DAY, len(rows)))

    params = {"signed": 0}
    return {
        "heka-clean": Case("heka", HEKA_SCHEMA, good, facts, params),
        "heka-failing": Case(
            "heka", HEKA_SCHEMA, lambda tmp: doctored(good(tmp)), lambda r: facts(r[:-1]), params
        ),
    }


def _hercules() -> dict[str, Case]:
    from suite_run import manifest
    from test_hercules_suite import DAY, decoded_day, doctored

    from expectations.checks import RunFacts
    from wirecodecs import get, source_format

    gate, carried = get("hercules"), source_format("kafka", "hercules")

    def landed(source, fmt, tmp):
        """The sample day's rows, their files named as landed (not by the scratch folder)."""
        rows = decoded_day(source, fmt, tmp).to_pylist()
        for row in rows:
            row["source_file"] = "/landing/" + Path(row["source_file"]).relative_to(tmp).as_posix()
        return rows

    def gate_rows(tmp):
        return landed("hercules", gate, tmp)

    def kafka_rows(tmp):
        return landed("hercules_kafka", carried, tmp)

    def bad_kafka_rows(tmp):
        rows = kafka_rows(tmp)
        rows[3]["kafka_key"] = b"not-the-uuid"
        rows[4]["kafka_crc_valid"] = False
        return rows

    def facts(rows):
        return RunFacts(DAY, manifest("hercules", DAY, len(rows)))

    return {
        "hercules-clean": Case("hercules", gate.schema, gate_rows, facts, {}),
        "hercules-failing": Case(
            "hercules",
            gate.schema,
            lambda tmp: doctored(gate_rows(tmp)),
            lambda r: facts(r[:-1]),
            {},
        ),
        "hercules_kafka-clean": Case("hercules_kafka", carried.schema, kafka_rows, facts, {}),
        "hercules_kafka-failing": Case("hercules_kafka", carried.schema, bad_kafka_rows, facts, {}),
    }


def _inlong() -> dict[str, Case]:
    from suite_run import manifest
    from test_inlong_suite import DAY, PARAMS, rows_of

    from expectations.checks import RunFacts
    from wirecodecs import get
    from wirecodecs.inlong.schema import INLONG_SCHEMA

    def doctored(rows):
        rows = [dict(row) for row in rows]
        del rows[5]  # an item of the V2 message lost
        rows[0]["event_time"] = dt.datetime(2024, 3, 5, tzinfo=dt.UTC)
        rows[1]["group_id"] = None
        rows[2]["attributes"] = {"groupId": "g", "streamId": "s1"}  # NodeIP missing
        rows.append(dict(rows[-1]))  # the LF message replayed
        return rows

    def facts(suite):
        return lambda rows: RunFacts(DAY, manifest(suite, DAY, len(rows)))

    carried = get("kafka+inlong").schema
    return {
        "inlong-clean": Case("inlong", INLONG_SCHEMA, lambda _: rows_of(), facts("inlong"), PARAMS),
        "inlong-failing": Case(
            "inlong", INLONG_SCHEMA, lambda _: doctored(rows_of()), facts("inlong"), PARAMS
        ),
        "inlong_kafka-clean": Case(
            "inlong_kafka", carried, lambda _: rows_of(kafka=True), facts("inlong_kafka"), PARAMS
        ),
        "inlong_kafka-failing": Case(
            "inlong_kafka",
            carried,
            lambda _: doctored(rows_of(kafka=True)),
            facts("inlong_kafka"),
            PARAMS,
        ),
    }


def _cernan() -> dict[str, Case]:
    from test_cernan_suite import (
        DAY,
        PACKETS_SCHEMA,
        RECORDS_SCHEMA,
        cernan_manifest,
        fingerprints,
        packet_rows,
        record_rows,
    )

    from expectations.checks import RunFacts

    packets = packet_rows()
    records = record_rows()

    def bad_records(_):
        rows = [dict(row) for row in records]
        rows[3]["event_time"] = dt.datetime(2024, 3, 5, tzinfo=dt.UTC)
        rows.append(dict(rows[5]))
        rows[7]["event_time"] = None
        return rows

    def bad_packets(_):
        rows = [dict(row) for row in packets]
        ok = [row for row in rows if row["status"] == "ok"]
        ok[0]["record_count"] += 1
        ok[1]["schema_fingerprint"] = "0123456789abcdef"
        return rows

    def facts(_rows):
        records_good = sum(row["record_count"] for row in packets)
        assert records_good == len(records)
        return RunFacts(DAY, cernan_manifest(records_good, len(packets)))

    errors = sum(row["status"] == "error" for row in packets) / len(packets)
    params = {"allowed_fingerprints": fingerprints(packets), "packet_error_budget": errors}
    return {
        "cernan-clean": Case("cernan", RECORDS_SCHEMA, lambda _: records, facts, {}),
        "cernan-failing": Case("cernan", RECORDS_SCHEMA, bad_records, facts, {}),
        "cernan_packets-clean": Case(
            "cernan_packets", PACKETS_SCHEMA, lambda _: packets, facts, params
        ),
        "cernan_packets-failing": Case(
            "cernan_packets", PACKETS_SCHEMA, bad_packets, facts, params
        ),
    }


def cases() -> dict[str, Case]:
    return {**_kafka(), **_heka(), **_hercules(), **_inlong(), **_cernan()}


_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def comparable(result: dict) -> dict:
    """A validation result without what differs between runs: the run's meta (ids, times,
    batch), expectation ids and batch ids."""
    results = []
    for item in result["results"]:
        config = dict(item["expectation_config"])
        config["id"] = None
        config["kwargs"] = {k: v for k, v in config["kwargs"].items() if k != "batch_id"}
        results.append({**item, "expectation_config": config})
    return {
        "success": result["success"],
        "statistics": result["statistics"],
        "suite_name": result["suite_name"],
        "results": json.loads(_IDS.sub("<id>", json.dumps(results, sort_keys=True, default=str))),
    }


def prepared(spark, case: Case, scratch: Path) -> tuple:
    """The case's day read from its Parquet file as the validate job reads a day (the
    frame, its files) and its suite built."""
    from suite_run import parquet_day

    from expectations import registry

    rows = case.rows(scratch)
    frame, files = parquet_day(
        spark, pa.Table.from_pylist(rows, schema=case.schema), scratch / "day"
    )
    return frame, files, registry.get(case.suite).build(case.facts(rows), case.params)


def docs_text(docs_dir: Path) -> list[str]:
    """The words a person reads on the Data Docs validation page under `docs_dir` (scripts,
    styles and markup aside), times as <time>."""
    (page,) = (docs_dir / "validations").rglob("*.html")
    text = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", page.read_text())
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return _TIMES.sub("<time>", " ".join(text.split())).split()

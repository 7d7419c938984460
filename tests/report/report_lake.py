"""A generated lake for the report tests and its benchmark: sample days of several sources
decoded without Spark (`operations.sample_history`), a passing validation's metrics row per day,
and trouble injected on chosen days."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from pathlib import Path

from jobs import layout, metrics
from operations import sample_history
from wirecodecs import samples

SEED = 7  # every day of a source is the same sample but for its dates


# source -> (envelope, payload, decoder options) as dags/sources.yaml declares them
SOURCES = {
    "kafka": ("kafka", "raw", {}),
    "inlong": ("inlong", "raw", {"framing": "length_prefixed"}),
    "inlong_messages": ("inlong", "raw", {"framing": "message"}),
    "inlong_kafka": ("kafka", "inlong", {}),
    "cernan": ("cernan", "raw", {"event_time_field": "event_time"}),
    "hercules": ("hercules", "raw", {}),
    "hercules_kafka": ("kafka", "hercules", {}),
    "heka": ("heka", "raw", {}),
}


def write_config(path: Path, data_root: Path, sources: list[str]) -> Path:
    """A sources config naming `sources` over `data_root` (one suite each, named after it)."""
    lines = [f"paths:\n  data_root: {data_root}", "sources:"]
    for name in sources:
        envelope, payload, _ = SOURCES[name]
        lines += [
            f"  {name}:",
            f"    envelope: {envelope}",
            f"    payload: {payload}",
            "    decode: {}",
            f"    validate: {{suite: {name}}}",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def decode_day(data_root: Path, source: str, day: dt.date, landing: Path) -> dict:
    envelope, payload, options = SOURCES[source]
    if source == "heka":
        secrets = data_root / "secrets" / "heka_hmac_keys.json"
        secrets.parent.mkdir(parents=True, exist_ok=True)
        secrets.write_bytes(samples.SAMPLE_SECRETS["heka_hmac_keys.json"])
        options = {**options, "hmac_keys_file": str(secrets)}
    warehouse = str(data_root / "warehouse")
    return sample_history.decode_day(warehouse, source, envelope, payload, options, day, landing)


def validated(data_root: Path, source: str, day: dt.date, passed: int = 12) -> dict:
    """A passing validation of the day, as the validate job reports it; its metrics row."""
    reports = data_root / "reports"
    report = {
        "source": source,
        "table": source,
        "suite": source,
        "dt": day.isoformat(),
        "validated_at": f"{day + dt.timedelta(days=1)}T03:10:00+00:00",
        "statistics": {
            "evaluated_expectations": passed,
            "successful_expectations": passed,
            "unsuccessful_expectations": 0,
        },
        "results": [],
        "failures": [],
        "critical_success": True,
        "data_docs": layout.join(layout.data_docs_dir(str(reports), source, day), "index.html"),
        "result_path": layout.validation_path(str(reports), source, day),
    }
    metrics.record_validation(str(data_root / "warehouse"), report)
    return report


Trouble = Callable[[Path], None]


def build_lake(
    data_root: Path,
    sources: list[str],
    days: list[dt.date],
    trouble: dict[tuple[str, dt.date], Trouble | None],
) -> None:
    """Every source on every day; `trouble[(source, day)]` changes the landed files before
    decoding (None: the day never lands)."""
    for source in sources:
        for day in days:
            change = trouble.get((source, day), lambda landing: None)
            if change is None:
                continue
            landing = sample_history.land(data_root / "landing", source, day, SEED)
            change(landing)
            decode_day(data_root, source, day, landing)
            validated(data_root, source, day)


# --- the tests' lake: ten days of four sources, with known trouble -------------------------

LAKE_SOURCES = ["kafka", "hercules", "heka", "inlong"]
DAYS = [dt.date(2026, 11, 1) + dt.timedelta(days=n) for n in range(10)]
HALF_DAY, SPIKE_DAY, LAST_DAY = DAYS[7], DAYS[8], DAYS[9]


def half_the_rows(landing: Path) -> None:
    """Kafka: the busiest partition (about half the day's records) never arrives."""
    for path in (landing / "orders-1").iterdir():
        path.unlink()
    (landing / "orders-1").rmdir()


def flip_every_crc(landing: Path) -> None:
    """Kafka: every batch of clicks-0 gets a wrong CRC (legacy: bytes 12-15, v2: 17-20)."""
    path = landing / "clicks-0" / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    at = 0
    while at + 17 <= len(data):
        (length,) = struct.unpack_from(">i", data, at + 8)
        crc = at + (17 if data[at + 16] == 2 else 12)
        if at + 12 + length > len(data):
            break
        data[crc] ^= 0xFF
        at += 12 + length
    path.write_bytes(bytes(data))


def new_tag_path(landing: Path) -> None:
    """Hercules: one gate's events carry properties/threadNo instead of .../threadId."""
    path = landing / "gate-1" / "batch-0000.bin"
    path.write_bytes(path.read_bytes().replace(b"threadId", b"threadNo"))


TROUBLE = {
    ("kafka", HALF_DAY): half_the_rows,
    ("kafka", SPIKE_DAY): flip_every_crc,
    ("hercules", SPIKE_DAY): new_tag_path,
    ("heka", LAST_DAY): None,  # no landing
}
INJECTED = {
    HALF_DAY: {("kafka", "volume")},
    SPIKE_DAY: {("kafka", "checksum-invalid share"), ("hercules", "name appeared")},
}

"""The metrics table: each decode and validate run's figures for its day, kept in the lake.

Trends and the daily report read this small table, never old partitions of the data:

    <warehouse>/_metrics/decode/dt=D/source=S/part-0.parquet    one row per source and day
    <warehouse>/_metrics/validate/dt=D/table=T/part-0.parquet   one row per checked table
    <warehouse>/_metrics/decode_failure/dt=D/source=S/...       why the day's decode failed

Each row is replaced as a whole (staged beside it, then moved in place, like a data
partition), so reruns and backfills leave one row per day. What only the rows can tell
(event time per hour, checksum verdicts, error kinds with an example, the names of dynamic
payloads) is counted on the executors while they write the parts (`PartFigures`) and
travels back with each unit's accounting; the driver adds them up (`merge`). No Spark here:
executors import this module too, so what only the driver needs (pyarrow.dataset, which
pulls in pandas, an import every Python worker would pay) is imported where it is used.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from jobs import layout, storage

METRICS_DIR = "_metrics"
HOUR_US = 3_600_000_000
MAX_NAMES = 500  # distinct dynamic-payload names kept per day; the rest are counted together
OTHER_NAMES = "(other names)"

# Dynamic payloads: (table: None for the main one, column, struct child or None for the
# keys of a map / the values of a string column, what the names are).
NAME_COLUMNS = (
    (None, "fields", "name", "Heka fields"),
    (None, "tags", "path", "Hercules tag paths"),
    (None, "attributes", None, "InLong attribute keys"),
    (None, "schema_full_name", None, "Avro schemas"),
    ("packets", "kv", "key", "Cernan KV keys"),
)
CHECKSUM_SUFFIXES = ("crc_valid", "hmac_valid")  # verdict columns: null where none applies
BYTE_KINDS = ("decoded", "quarantined", "truncated_tail", "skipped")  # every byte is one


# --- on the executors ---------------------------------------------------------------------


class PartFigures:
    """What one work unit's rows and quarantined frames add to its day's figures."""

    def __init__(self, day: dt.date | None) -> None:
        start = dt.datetime.combine(day, dt.time(), dt.UTC) if day else None
        self._day_start = None if start is None else int(start.timestamp()) * 1_000_000
        self.figures = empty()

    def rows(self, table: str | None, batch: pa.RecordBatch) -> None:
        if table is None:
            self._event_times(batch)
            self._checksums(batch)
        for name_table, column, child, kind in NAME_COLUMNS:
            if name_table == table and column in batch.schema.names:
                names = self.figures["names"].setdefault(kind, {})
                counts = pc.value_counts(_names(batch.column(column), child))
                for entry in counts.to_pylist():
                    if entry["values"] is not None:
                        names[entry["values"]] = names.get(entry["values"], 0) + entry["counts"]

    def quarantined(self, source: str, byte_offset: int, kind: str) -> None:
        errors = self.figures["errors"]
        count, file, offset = errors.get(kind, (0, source, byte_offset))
        errors[kind] = [count + 1, *min((file, offset), (source, byte_offset))]

    def _event_times(self, batch: pa.RecordBatch) -> None:
        if "event_time" not in batch.schema.names or self._day_start is None:
            return
        times = batch.column("event_time")
        self.figures["events_null"] += times.null_count
        micros = pc.drop_null(times.cast(pa.int64())).to_numpy() - self._day_start
        before, after = int((micros < 0).sum()), int((micros >= 24 * HOUR_US).sum())
        hours = micros[(micros >= 0) & (micros < 24 * HOUR_US)] // HOUR_US
        counts = np.bincount(hours, minlength=24)
        self.figures["event_hours"] = [
            a + int(b) for a, b in zip(self.figures["event_hours"], counts, strict=True)
        ]
        self.figures["events_before"] += before
        self.figures["events_after"] += after

    def _checksums(self, batch: pa.RecordBatch) -> None:
        verdicts = [
            batch.column(name) for name in batch.schema.names if name.endswith(CHECKSUM_SUFFIXES)
        ]
        if not verdicts:
            return
        checked = invalid = pa.array([False] * batch.num_rows)
        for verdict in verdicts:
            checked = pc.or_(checked, pc.is_valid(verdict))
            invalid = pc.or_(invalid, pc.fill_null(pc.invert(verdict), False))
        self.figures["checksum_checked"] += pc.sum(checked.cast(pa.int64())).as_py() or 0
        self.figures["checksum_invalid"] += pc.sum(invalid.cast(pa.int64())).as_py() or 0


def _names(column: pa.Array, child: str | None) -> pa.Array:
    """The names a dynamic-payload column holds: a child of its list's structs, the keys of
    a map, or the column's own strings."""
    if pa.types.is_map(column.type):
        entries = pa.struct([("key", column.type.key_type), ("value", column.type.item_type)])
        return pc.list_flatten(column.cast(pa.list_(entries))).field("key")
    if child is not None:
        return pc.list_flatten(column).field(child)
    return column


def empty() -> dict:
    return {
        "event_hours": [0] * 24,
        "events_before": 0,  # before day D began (UTC)
        "events_after": 0,  # after day D ended
        "events_null": 0,
        "checksum_checked": 0,  # rows with a checksum verdict
        "checksum_invalid": 0,  # ... a false one
        "errors": {},  # kind -> [count, file, offset of the first]
        "names": {},  # what the names are (NAME_COLUMNS) -> dynamic-payload name -> entries
    }


def merge(parts: Iterable[Mapping]) -> dict:
    """The figures of several units (or days) as one."""
    total = empty()
    for part in parts:
        for key in ("events_before", "events_after", "events_null"):
            total[key] += part[key]
        for key in ("checksum_checked", "checksum_invalid"):
            total[key] += part[key]
        total["event_hours"] = [
            a + b for a, b in zip(total["event_hours"], part["event_hours"], strict=True)
        ]
        for kind, (count, file, offset) in part["errors"].items():
            known = total["errors"].get(kind, (0, file, offset))
            total["errors"][kind] = [known[0] + count, *min(tuple(known[1:]), (file, offset))]
        for kind, names in part["names"].items():
            known = total["names"].setdefault(kind, {})
            for name, count in names.items():
                known[name] = known.get(name, 0) + count
    return total


# --- rows of the table --------------------------------------------------------------------

_ERROR = pa.struct([("kind", pa.string()), ("count", pa.int64()), ("example", pa.string())])
_NAME = pa.struct([("kind", pa.string()), ("name", pa.string()), ("count", pa.int64())])
_FAILURE = pa.struct(
    [
        ("expectation", pa.string()),
        ("target", pa.string()),
        ("critical", pa.bool_()),
        ("observed", pa.string()),
    ]
)
DECODE_SCHEMA = pa.schema(
    [
        ("format", pa.string()),
        ("landing", pa.string()),
        ("landed_at", pa.string()),  # newest modification time in the landing folder, UTC
        ("decoded_at", pa.string()),
        ("manifest", pa.string()),
        ("quarantine", pa.string()),
        ("files", pa.int64()),
        ("rows", pa.int64()),
        ("table_rows", pa.map_(pa.string(), pa.int64())),
        ("frames_good", pa.int64()),
        ("frames_bad", pa.int64()),
        ("payloads_good", pa.int64()),
        ("payloads_bad", pa.int64()),
        ("quarantined_frames", pa.int64()),
        ("bytes_total", pa.int64()),
        ("bytes_decoded", pa.int64()),
        ("bytes_quarantined", pa.int64()),
        ("bytes_truncated_tail", pa.int64()),
        ("bytes_skipped", pa.int64()),
        ("bad_byte_rate", pa.float64()),
        ("checksum_checked", pa.int64()),
        ("checksum_invalid", pa.int64()),
        ("checksum_invalid_share", pa.float64()),  # null: no checksum in the format
        ("event_hours", pa.list_(pa.int64())),  # 24 counts, hours of day D (UTC)
        ("events_before", pa.int64()),
        ("events_after", pa.int64()),
        ("events_null", pa.int64()),
        ("errors", pa.list_(_ERROR)),
        ("names", pa.list_(_NAME)),
    ]
)
VALIDATE_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("suite", pa.string()),
        ("validated_at", pa.string()),
        ("evaluated", pa.int64()),
        ("passed", pa.int64()),
        ("failed", pa.int64()),
        ("critical_success", pa.bool_()),
        ("failures", pa.list_(_FAILURE)),
        ("events_outside_window", pa.int64()),
        ("data_docs", pa.string()),
        ("result_path", pa.string()),
    ]
)
# A decode that failed its checks wrote nothing: its reason is kept until one succeeds.
DECODE_FAILURE_SCHEMA = pa.schema([("failed_at", pa.string()), ("reason", pa.string())])
SCHEMAS = {
    "decode": DECODE_SCHEMA,
    "validate": VALIDATE_SCHEMA,
    "decode_failure": DECODE_FAILURE_SCHEMA,
}
# kind -> the key below dt=D
PARTITIONS = {"decode": "source", "validate": "table", "decode_failure": "source"}


def decode_row(manifest: Mapping, figures: Mapping, landed_at: str | None) -> dict:
    """One decode run as a row: its manifest's totals and the figures of its rows."""
    totals = manifest["totals"]
    checked, invalid = figures["checksum_checked"], figures["checksum_invalid"]
    names = []
    for kind, counts in sorted(figures["names"].items()):
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        if len(ranked) > MAX_NAMES:
            ranked[MAX_NAMES:] = [(OTHER_NAMES, sum(count for _, count in ranked[MAX_NAMES:]))]
        names += [{"kind": kind, "name": name, "count": count} for name, count in ranked]
    return {
        "format": manifest["format"],
        "landing": manifest["landing"],
        "landed_at": landed_at,
        "decoded_at": manifest["run"]["started_at"],
        "manifest": None,  # filled in by `record_decode`
        "quarantine": manifest["outputs"]["quarantine"],
        "files": totals["files"],
        "rows": totals["rows"],
        "table_rows": sorted(totals["table_rows"].items()),
        **{key: totals[key] for key in ("frames_good", "frames_bad")},
        **{key: totals[key] for key in ("payloads_good", "payloads_bad")},
        "quarantined_frames": totals["quarantine_items"],
        "bytes_total": totals["bytes_total"],
        **{f"bytes_{kind}": totals[f"bytes_{kind}"] for kind in BYTE_KINDS},
        "bad_byte_rate": totals["bad_byte_rate"],
        "checksum_checked": checked,
        "checksum_invalid": invalid,
        "checksum_invalid_share": invalid / checked if checked else None,
        **{key: figures[key] for key in ("event_hours", "events_before", "events_after")},
        "events_null": figures["events_null"],
        "errors": [
            {"kind": kind, "count": count, "example": f"{file}@{offset}"}
            for kind, (count, file, offset) in sorted(figures["errors"].items())
        ],
        "names": names,
    }


def validate_row(report: Mapping) -> dict:
    """One validate run as a row: its statistics, failures and events outside the window."""
    stats = report["statistics"]
    outside = 0
    for item in report["results"]:
        config = item["expectation_config"]
        if config["type"] == "expect_column_values_to_be_between" and (
            config["kwargs"].get("column") == "event_time"
        ):
            outside += (item.get("result") or {}).get("unexpected_count") or 0
    return {
        "source": report["source"],
        "suite": report["suite"],
        "validated_at": report["validated_at"],
        "evaluated": stats["evaluated_expectations"],
        "passed": stats["successful_expectations"],
        "failed": stats["unsuccessful_expectations"],
        "critical_success": report["critical_success"],
        "failures": [_failure(failure) for failure in report["failures"]],
        "events_outside_window": outside,
        "data_docs": report["data_docs"],
        "result_path": report["result_path"],
    }


def _failure(failure: Mapping) -> dict:
    kwargs = failure["kwargs"]
    target = kwargs.get("column") or kwargs.get("column_list") or "table"
    if failure["unexpected_count"] is not None:
        observed = f"{failure['unexpected_count']} of {failure['element_count']} unexpected"
    else:
        observed = json.dumps(failure["observed_value"], sort_keys=True, default=str)
    return {
        "expectation": failure["expectation"],
        "target": target if isinstance(target, str) else ",".join(target),
        "critical": failure["critical"],
        "observed": observed,
    }


# --- writing and reading ------------------------------------------------------------------


def table_dir(warehouse: str, kind: str) -> str:
    return layout.join(warehouse, METRICS_DIR, kind)


def row_dir(warehouse: str, kind: str, name: str, date: dt.date) -> str:
    """The folder holding one source's (decode) or table's (validate) row of day `date`."""
    return layout.join(
        table_dir(warehouse, kind), layout.partition(date), f"{PARTITIONS[kind]}={name}"
    )


def write_row(warehouse: str, kind: str, name: str, date: dt.date, row: Mapping) -> None:
    """Replace the row of `name` for day `date`: staged beside it, then moved in place."""
    schema = SCHEMAS[kind]
    final = row_dir(warehouse, kind, name, date)
    staged = layout.sibling(final, f".staging-{PARTITIONS[kind]}={name}-{uuid.uuid4().hex[:12]}")
    filesystem, path = storage.resolve(staged)
    filesystem.create_dir(path, recursive=True)
    table = pa.Table.from_pylist([row], schema=schema)
    pq.write_table(table, f"{path}/part-0.parquet", filesystem=filesystem)
    storage.replace_dir(staged, final)


def landing_completed(landing: str) -> str | None:
    """When the landing folder was last written to (its marker comes last), ISO UTC."""
    filesystem, root = storage.resolve(landing)
    infos = filesystem.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    times = [info.mtime for info in infos if info.type == pafs.FileType.File and info.mtime]
    return max(times).astimezone(dt.UTC).isoformat(timespec="seconds") if times else None


def record_decode(warehouse: str, manifest: Mapping, figures: Mapping, manifest_path: str) -> None:
    """The decode run's row for its source and day (replacing an earlier run's)."""
    row = decode_row(manifest, figures, landing_completed(manifest["landing"]))
    row["manifest"] = manifest_path
    date = dt.date.fromisoformat(manifest["dt"])
    write_row(warehouse, "decode", manifest["source"], date, row)
    withdraw(warehouse, "decode_failure", [manifest["source"]], date)


def record_decode_failure(warehouse: str, source: str, date: dt.date, reason: str) -> None:
    """Why the decode of `source` for day `date` failed: the day's decode row, if any, is an
    earlier run's, and the report says the day failed rather than "not run"."""
    failed_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    write_row(warehouse, "decode_failure", source, date, {"failed_at": failed_at, "reason": reason})


def record_validation(warehouse: str, report: Mapping) -> None:
    """The validate run's row for its table and day (replacing an earlier run's)."""
    date = dt.date.fromisoformat(report["dt"])
    write_row(warehouse, "validate", report["table"], date, validate_row(report))


def withdraw(warehouse: str, kind: str, names: Iterable[str], date: dt.date) -> None:
    """Remove the rows of `names` for day `date` (a day being replaced)."""
    for name in names:
        storage.remove_dir(row_dir(warehouse, kind, name, date))


def read(warehouse: str, kind: str, first: dt.date, last: dt.date) -> list[dict]:
    """The rows of days first..last, each with its `dt` and source or table, in that order."""
    import pyarrow.dataset as ds  # driver only (see the module's docstring)

    location = table_dir(warehouse, kind)
    if not storage.is_dir(location):
        return []
    filesystem, path = storage.resolve(location)
    keys = pa.schema([("dt", pa.string()), (PARTITIONS[kind], pa.string())])
    dataset = ds.dataset(
        path,
        filesystem=filesystem,
        format="parquet",
        partitioning=ds.partitioning(keys, flavor="hive"),
    )
    days = ds.field("dt")
    table = dataset.to_table(filter=(days >= first.isoformat()) & (days <= last.isoformat()))
    rows = table.to_pylist()
    return sorted(rows, key=lambda row: (row["dt"], row[PARTITIONS[kind]]))


def trailing_rows(
    warehouse: str, source: str, table: str | None, date: dt.date, days: int
) -> list[int]:
    """Rows of `source`'s table (None: its main one) on the `days` days before `date` that
    have a decode row, oldest first."""
    found = read(warehouse, "decode", date - dt.timedelta(days=days), date - dt.timedelta(days=1))
    return [
        row["rows"] if table is None else dict(row["table_rows"]).get(table, 0)
        for row in found
        if row["source"] == source
    ]

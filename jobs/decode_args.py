"""The decode job's arguments, checked and resolved once on the driver into a `DecodeRun`:
the format and its options (a bad option fails here, exit 2, not in an executor), the
error policy and gates, the size of work units, and the locations (reachable, with no
credentials in them)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import io
import re

import pyarrow as pa

import wirecodecs
from jobs import storage
from jobs.cli import iso_date
from jobs.decode_settings import (
    DEFAULT_ERROR_POLICY,
    DEFAULT_RETENTION_HOURS,
    DEFAULT_SPLIT_BYTES,
    ERROR_POLICIES,
    GATES,
)
from wirecodecs import FileAccounting, WireFormat
from wirecodecs.options import Resolved, from_json, resolve

SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # a path segment; "_" is reserved
SPLIT_BYTES = DEFAULT_SPLIT_BYTES  # files above this are cut into ranges of about this size


def fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


@dataclasses.dataclass(frozen=True)
class DecodeRun:
    """One run, as the driver resolved it from the arguments, once: the format, its
    checked options and row schema, the policy and gates, and where everything is."""

    source: str
    envelope: str
    payload: str
    fmt: WireFormat
    options: Resolved
    row_schema: pa.Schema
    date: dt.date
    landing: str
    warehouse: str
    reports: str
    error_policy: str
    max_error_rate: float
    max_bad_byte_rate: float
    split_bytes: int
    partitions: int | None
    retention_hours: float


def parse_args(argv: list[str] | None) -> DecodeRun:
    parser = argparse.ArgumentParser(
        prog="jobs/decode.py", description="Decode one day of landed files into the lake."
    )
    parser.add_argument("--source", required=True, help="table name, e.g. kafka")
    parser.add_argument("--envelope", required=True, help="wire format that cuts frames")
    parser.add_argument("--payload", default="raw", help="codec of frame contents")
    parser.add_argument("--date", required=True, type=iso_date, help="logical date D")
    parser.add_argument("--landing", required=True, help="the day's landing folder (path/URI)")
    parser.add_argument("--warehouse", required=True, help="lake root (path/URI)")
    parser.add_argument(
        "--reports", required=True, help="reports root: the day's validation results are removed"
    )
    parser.add_argument("--error-policy", choices=ERROR_POLICIES, default=DEFAULT_ERROR_POLICY)
    parser.add_argument(
        "--max-error-rate",
        type=fraction,
        default=GATES["max_error_rate"],
        help="bad frames / all frames allowed",
    )
    parser.add_argument(
        "--max-bad-byte-rate",
        type=fraction,
        default=GATES["max_bad_byte_rate"],
        help="bytes not decoded (quarantined, skipped, truncated tails) / all bytes allowed",
    )
    parser.add_argument(
        "--options",
        default="{}",
        metavar="JSON",
        help="decoder options as one JSON object (a carried format's under each part's "
        'format name, e.g. {"hercules": {"max_event_bytes": 65536}})',
    )
    parser.add_argument(
        "--partitions", type=positive_int, help="Spark partitions (default: from cores and bytes)"
    )
    parser.add_argument(
        "--split-bytes",
        type=positive_int,
        default=SPLIT_BYTES,
        help="files above this size are decoded as ranges of about this size where the "
        "format can find frames from any offset (kafka by its index, heka, cernan)",
    )
    parser.add_argument(
        "--retention-hours",
        type=float,
        default=DEFAULT_RETENTION_HOURS,
        help="replaced runs stay readable by time travel this long, then vacuum deletes them",
    )
    args = parser.parse_args(argv)
    if args.retention_hours < 0:
        parser.error(f"--retention-hours must not be negative, got {args.retention_hours}")
    if not SOURCE_NAME.fullmatch(args.source):
        parser.error(f"--source must be a plain name ({SOURCE_NAME.pattern}): {args.source!r}")
    try:
        fmt = wirecodecs.source_format(args.envelope, args.payload)
    except ValueError as exc:  # UnknownFormatError is a ValueError
        parser.error(str(exc))
    try:  # caught here, not in an executor's traceback
        options = resolve(fmt, from_json(args.options))
        row_schema = fmt.row_schema(options)
        # the decoder opens the files its options name (key tables, schemas) as executors will
        list(fmt.decode(io.BytesIO(b""), "<options>", FileAccounting("<options>", fmt.name),
                        options))  # fmt: skip
    except (ValueError, OSError) as exc:  # OptionError is a ValueError
        parser.error(f"{fmt.name} decoder options: {exc}")
    landing, warehouse, reports = map(
        storage.absolute, (args.landing, args.warehouse, args.reports)
    )
    for location in (landing, warehouse, reports):
        try:  # before any message could name a location with the credentials it carries
            storage.check_location(location)
        except ValueError as exc:
            parser.error(str(exc))
    try:
        landing_found = storage.is_dir(landing)
    except (OSError, ValueError) as exc:  # unknown scheme, unreachable store
        parser.error(f"cannot open --landing {landing}: {exc}")
    if not landing_found:
        parser.error(f"landing folder not found: {landing}")
    return DecodeRun(
        source=args.source,
        envelope=args.envelope,
        payload=args.payload,
        fmt=fmt,
        options=options,
        row_schema=row_schema,
        date=args.date,
        landing=landing,
        warehouse=warehouse,
        reports=reports,
        error_policy=args.error_policy,
        max_error_rate=args.max_error_rate,
        max_bad_byte_rate=args.max_bad_byte_rate,
        split_bytes=args.split_bytes,
        partitions=args.partitions,
        retention_hours=args.retention_hours,
    )

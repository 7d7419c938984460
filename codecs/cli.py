"""Command-line inspector for landed dumps: `python -m wirecodecs dump|sample|warm ...`.

`dump` decodes files exactly as the Spark job does (same decoder, same row columns) so a
person can look at a suspicious file without a cluster; a FILE may be a URI the jobs take
(`s3://bucket/landing/...`, credentials and endpoint from the environment, see
`wirecodecs.locations`). Channels:

* stdout: one JSON object per decoded row (bytes as base64, null as null, event_time as
  ISO-8601 UTC), nothing else, so it pipes into `jq` or a file; rows of a companion table
  (`WireFormat.tables`) carry its name first: `{"table": "packets", ...}`;
* stderr: JSON lines tagged by their single key: `{"quarantined": {...}}` per undecodable
  frame (head bytes base64) as it is met, then `{"summary": {...}}` per file (the
  accounting: bytes decoded/quarantined/truncated/skipped, frames and records good/bad);
  plain-text `wirecodecs: error: ...` lines for fatal errors.

`warm` fills numba's cache (NUMBA_CACHE_DIR) with every compiled walk ahead of time, for a
host or an image whose decoders must not compile at their first input (docs/walks.md).

Exit status: 0 when every file was walked (damage is reported, not fatal), 2 for usage
errors, unknown formats or options, and unreadable files.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import BinaryIO, TextIO

import pyarrow as pa

from wirecodecs import compiled, locations
from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.options import Resolved, from_json, resolve
from wirecodecs.registry import TableRows, UnknownFormatError, WireFormat, get
from wirecodecs.rows import json_rows
from wirecodecs.samples import formats, write_sample_day

EXIT_USAGE = 2


class CliError(Exception):
    """A fatal, user-facing problem: printed as one line, exit status 2."""


def _day(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None


def _walk_format(name: str) -> str:
    """A format with a compiled walk. (Not argparse's `choices`: on Python 3.11 it refuses
    `warm` with no format at all, checking the empty list against them.)"""
    if name not in compiled.WALKS:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {name!r} (choose from {', '.join(sorted(compiled.WALKS))})"
        )
    return name


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m wirecodecs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    dump = commands.add_parser(
        "dump",
        help="decode files to JSON lines",
        description="Decode FILEs of FORMAT: rows as JSON lines on stdout; quarantined "
        "frames and a per-file accounting summary as JSON lines on stderr.",
        epilog="example: python -m wirecodecs dump kafka orders-0/00000000000000000000.log "
        "--options '{\"batch_rows\": 1000}' | jq .offset",
    )
    dump.add_argument("format", metavar="FORMAT", help="a registered format name, e.g. kafka")
    dump.add_argument("files", metavar="FILE", nargs="+", help="file(s) to decode")
    dump.add_argument(
        "--options",
        "-o",
        metavar="JSON",
        default="{}",
        help="decoder options as one JSON object, as sources.yaml gives them (a carried "
        "format's under each part's format name)",
    )
    dump.set_defaults(run=_run_dump)

    sample = commands.add_parser(
        "sample",
        help="write a sample landing day",
        description="Write a deterministic sample day of FORMAT into OUTDIR (a few frames "
        "damaged on purpose, then _SUCCESS) and print what was written as JSON.",
    )
    sample.add_argument("format", metavar="FORMAT", help=f"one of: {', '.join(formats())}")
    sample.add_argument("out_dir", metavar="OUTDIR", help="landing folder to write into")
    sample.add_argument("--date", type=_day, required=True, help="logical day, YYYY-MM-DD (UTC)")
    sample.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    sample.set_defaults(run=_run_sample)

    warm = commands.add_parser(
        "warm",
        help="compile the decoders' numba walks into the cache",
        description="Load every compiled walk from numba's cache (NUMBA_CACHE_DIR), compiling "
        "into it what is missing, and print the seconds it took.",
    )
    warm.add_argument(
        "formats",
        nargs="*",
        type=_walk_format,
        metavar="FORMAT",
        help=f"only these formats' walks (default: all of {', '.join(compiled.WALKS)})",
    )
    warm.set_defaults(run=_run_warm)
    return parser


def _json_line(obj: object, out: TextIO) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
    out.write("\n")


def _quarantine_json(item: Quarantined) -> dict:
    fields = dataclasses.asdict(item)
    fields["head"] = base64.b64encode(item.head).decode("ascii")
    return {"quarantined": fields}


def _open(path: str) -> BinaryIO:
    """A local file, or a URI (`s3://...`, `hdfs://...`) opened as the jobs open it."""
    if "://" not in path:
        return open(path, "rb")
    filesystem, inner = locations.resolve(path)
    return filesystem.open_input_stream(inner, compression=None)


def dump_file(fmt: WireFormat, path: str, options: Resolved, out: TextIO, err: TextIO) -> None:
    """Decode one file: rows to `out`; quarantined frames, then its summary, to `err`."""
    accounting = FileAccounting(source=path, format=fmt.name)
    rows = 0
    try:
        stream = _open(path)
    except (OSError, ValueError) as error:  # ValueError: a URI pyarrow.fs cannot take
        raise CliError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
    with stream:
        for item in fmt.decode(stream, path, accounting, options):
            if isinstance(item, pa.RecordBatch):
                for row in json_rows(item):
                    _json_line(row, out)
                rows += item.num_rows
            elif isinstance(item, TableRows):  # a companion table's rows, tagged by table
                for row in json_rows(item.batch):
                    _json_line({"table": item.table, **row}, out)
            else:
                _json_line(_quarantine_json(item), err)
    summary = {**accounting.to_dict(), "balanced": accounting.balanced, "rows": rows}
    _json_line({"summary": summary}, err)


def _run_dump(args: argparse.Namespace) -> int:
    try:
        fmt = get(args.format)
        options = resolve(fmt, from_json(args.options))
    except ValueError as error:  # an unknown format or option names the known ones
        raise CliError(str(error)) from None
    for path in args.files:
        dump_file(fmt, path, options, sys.stdout, sys.stderr)
    return 0


def _run_sample(args: argparse.Namespace) -> int:
    try:
        day = write_sample_day(args.format, args.out_dir, args.date, args.seed)
    except UnknownFormatError as error:
        raise CliError(str(error)) from None
    except OSError as error:
        raise CliError(f"cannot write {args.out_dir}: {error}") from None
    print(day.to_json())
    return 0


def _run_warm(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    compiled.warm(args.formats or compiled.WALKS)
    print(f"wirecodecs: compiled walks ready in {time.perf_counter() - start:.1f} s")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CliError as error:
        print(f"wirecodecs: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from complaining
        # again while it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0

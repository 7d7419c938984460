"""Decoding a file cut into ranges, the way the decode job does it, for the tests of the
formats' split finders (`WireFormat.split`): each range through the registered decoder as
a stream of its own, its rows' file offsets (and the columns its split point names) moved
by where it starts, the accountings added up.

What the job guarantees, and these helpers let a test check against the whole file's
decode: if every range but the last ends with `eof` and the last one ends with `eof` or
after a good frame (`fits`), the ranges read exactly as the whole file.
"""

from __future__ import annotations

import dataclasses
import io
from collections import defaultdict
from collections.abc import Mapping, Sequence

from decoding import Decoded, decode_all

from wirecodecs import FileAccounting, Quarantined, get
from wirecodecs.options import resolve
from wirecodecs.registry import SplitPoint, Splits, TableRows

COUNTS = [f.name for f in dataclasses.fields(FileAccounting) if f.type == "int"]


@dataclasses.dataclass
class Outcome:
    """What a decode left: rows per table (None: the main one), quarantined frames
    (offset, length, kind, detail, head) and the accounting's counts and stop reason."""

    tables: dict[str | None, list[dict]]
    quarantine: list[tuple]
    accounting: dict


def in_memory(files: Mapping[str, bytes]):
    """An `open_file` for split finders over in-memory files (path -> bytes)."""

    def open_file(path: str) -> io.BytesIO:
        if path not in files:
            raise FileNotFoundError(path)
        return io.BytesIO(files[path])

    return open_file


def find(fmt: str, data: bytes, boundaries: Sequence[int], **options) -> Splits:
    """The format's split points of `data` (a file alone in its folder, "f.bin")."""
    wire = get(fmt)
    opts = resolve(wire, options)
    return wire.split(in_memory({"f.bin": data}), "f.bin", len(data), boundaries, opts)


def whole(data: bytes, fmt: str, **options) -> Outcome:
    got = decode_all(data, fmt=fmt, **options)
    return Outcome(_tables(got, SplitPoint(0)), _quarantine(got, 0), _counts([got]))


def in_ranges(
    data: bytes, fmt: str, points: Sequence[SplitPoint], **options
) -> tuple[Outcome, list[FileAccounting]]:
    """The outcome of `data` decoded in the ranges between `points`, and each range's
    own accounting."""
    starts = [SplitPoint(0), *points]
    ends = [point.offset for point in points] + [len(data)]
    decoded = [
        decode_all(data[start.offset : end], fmt=fmt, **options)
        for start, end in zip(starts, ends, strict=True)
    ]
    tables: dict[str | None, list[dict]] = defaultdict(list)
    quarantine: list[tuple] = []
    for start, got in zip(starts, decoded, strict=True):
        for table, rows in _tables(got, start).items():
            tables[table] += rows
        quarantine += _quarantine(got, start.offset)
    outcome = Outcome(dict(tables), quarantine, _counts(decoded))
    return outcome, [got.accounting for got in decoded]


def fits(accountings: Sequence[FileAccounting]) -> bool:
    """The job's test that ranges may stand for the whole file (jobs.execute.split_failure);
    one range is the whole file."""
    last = accountings[-1]
    return len(accountings) == 1 or (
        all(acc.stop_reason == "eof" for acc in accountings[:-1])
        and (last.stop_reason == "eof" or last.frames_good > 0)
    )


def _tables(got: Decoded, start: SplitPoint) -> dict[str | None, list[dict]]:
    shifts = {"byte_offset": start.offset, **start.shifts}
    tables: dict[str | None, list[dict]] = defaultdict(list)
    for item in got.items:
        if isinstance(item, Quarantined):
            continue
        table, batch = (item.table, item.batch) if isinstance(item, TableRows) else (None, item)
        for row in batch.to_pylist():
            for column, amount in shifts.items():
                if row.get(column) is not None:
                    row[column] += amount
            tables[table].append(row)
    return dict(tables)


def _quarantine(got: Decoded, start: int) -> list[tuple]:
    return [(q.byte_offset + start, q.length, q.kind, q.detail, q.head) for q in got.quarantined]


def _counts(decoded: Sequence[Decoded]) -> dict:
    counts = {name: sum(getattr(got.accounting, name) for got in decoded) for name in COUNTS}
    return {**counts, "stop_reason": decoded[-1].accounting.stop_reason}

"""A segment's offset index (`<base>.index`, docs/kafka.md §2.10), checked against the
segment as `kafka-dump-log --verify-index-only` does, and used to cut a large segment at
indexed batches (`split`, Kafka's `WireFormat.split`; docs/kafka.md §6).

The index is sparse: after every `index.interval.bytes` (4096 by default) of appended
batches, an 8-byte entry `relativeOffset int32 | position int32` names a batch by its
last offset and the position of its start. An active segment's index is preallocated
with zeros, so the entries end at the first relative offset 0 (the first batch is never
indexed). The index carries no checksum and brokers rebuild it when it looks wrong, so it
is checked before it is trusted: entries increase, each position starts a whole log entry
of a known magic inside the segment, and that entry's last offset is the indexed one. A
segment whose index is missing or has any mismatch is decoded whole.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping, Sequence
from typing import BinaryIO

from wirecodecs.binary import INT32
from wirecodecs.kafka.entry import (
    LAST_OFFSET_DELTA_AT,
    LOG_OVERHEAD,
    MIN_ENTRY_SIZE,
    PREFIX,
    last_offset_of,
)
from wirecodecs.registry import OpenFile, SplitPoint, Splits

ENTRY = struct.Struct(">ii")  # relativeOffset | position
_HEAD_BYTES = LAST_OFFSET_DELTA_AT + INT32.size  # a v2 batch's head up to its last offset
_READ_ENTRIES = 8192  # index entries read at a time
SHOWN_MISMATCHES = 5  # mismatches the manifest lists (all are counted)
_SEGMENT_NAME = re.compile(r"([0-9]+)\.log")


def split(
    open_file: OpenFile,
    path: str,
    size: int,
    boundaries: Sequence[int],
    options: Mapping[str, object],
) -> Splits:
    """For each boundary, the first indexed batch at or after it, once the segment's index
    has been checked (`index_check` in the manifest); nothing to split by for a file that
    is not a `<base offset>.log` segment, or whose index is missing or wrong."""
    folder, _, name = path.rpartition("/")
    match = _SEGMENT_NAME.fullmatch(name)
    if match is None:  # a fetch dump: no index beside it
        return Splits()
    index_name = f"{match[1]}.index"
    try:
        index = open_file(f"{folder}/{index_name}" if folder else index_name)
    except FileNotFoundError:
        return Splits(checks={"index_check": _report(index_name, "missing", 0, [], 0)})
    with index, open_file(path) as segment:
        check = IndexCheck(segment, size, int(match[1]), boundaries)
        check.read(index)
    status = "mismatch" if check.mismatches else "ok"
    report = _report(index_name, status, check.entries, check.shown, check.mismatches)
    points = [] if check.mismatches else [SplitPoint(at) for at in check.points]
    return Splits(points, {"index_check": report})


def _report(name: str, status: str, entries: int, shown: list[dict], mismatches: int) -> dict:
    return {
        "index": name,
        "status": status,  # ok | mismatch | missing
        "entries": entries,
        "mismatches": mismatches,
        "first_mismatches": shown,
    }


class IndexCheck:
    """An index checked entry by entry against its segment, counting mismatches and
    keeping, for each boundary, the first entry's position at or after it."""

    def __init__(self, segment: BinaryIO, size: int, base: int, boundaries: Sequence[int]):
        self.segment = segment
        self.size = size
        self.base = base
        self.boundaries = boundaries
        self.entries = 0
        self.mismatches = 0
        self.shown: list[dict] = []
        self.points: list[int] = []
        self._previous = (0, -1)  # relative offset and position of the entry before
        self._next_boundary = 0

    def read(self, index: BinaryIO) -> None:
        """Check every entry up to the zero tail, read in bounded pieces."""
        rest = b""
        while piece := index.read(ENTRY.size * _READ_ENTRIES):
            data = rest + piece
            whole = len(data) - len(data) % ENTRY.size
            for relative, position in ENTRY.iter_unpack(data[:whole]):
                if relative == 0:  # preallocated zeros: the entries ended
                    return
                self.entry(relative, position)
            rest = data[whole:]
        if rest:
            self.mismatch(None, None, "partial_entry", f"{len(rest)} bytes after the last entry")

    def mismatch(self, offset: int | None, position: int | None, reason: str, detail: str):
        self.mismatches += 1
        if len(self.shown) < SHOWN_MISMATCHES:
            self.shown.append(
                {"offset": offset, "position": position, "reason": reason, "detail": detail}
            )

    def entry(self, relative: int, position: int) -> None:
        self.entries += 1
        offset = self.base + relative
        problem = self._problem(relative, position)
        self._previous = (relative, position)
        if problem is not None:
            self.mismatch(offset, position, *problem)
            return
        while (
            self._next_boundary < len(self.boundaries)
            and self.boundaries[self._next_boundary] <= position
        ):
            self._next_boundary += 1
            if not self.points or self.points[-1] != position:
                self.points.append(position)

    def _problem(self, relative: int, position: int) -> tuple[str, str] | None:
        """(reason, detail) of an entry that does not name the batch at its position."""
        before_relative, before_position = self._previous
        if relative <= before_relative or position <= before_position:
            return "not_increasing", (
                f"entry (offset {self.base + relative}, position {position}) does not follow "
                f"(offset {self.base + before_relative}, position {before_position})"
            )
        if position + PREFIX.size > self.size:
            return "outside_segment", f"position {position} in a {self.size}-byte segment"
        self.segment.seek(position)
        head = self.segment.read(_HEAD_BYTES)
        _, length, _, magic = PREFIX.unpack_from(head)
        if length < MIN_ENTRY_SIZE or magic not in (0, 1, 2):
            return "no_entry", f"no log entry starts there (size {length}, magic {magic})"
        if position + LOG_OVERHEAD + length > self.size or (magic == 2 and len(head) < _HEAD_BYTES):
            return "entry_cut", f"the {LOG_OVERHEAD + length}-byte entry there is cut by the end"
        last = last_offset_of(head)
        if last != self.base + relative:
            return "offset_mismatch", f"the entry there ends at offset {last}"
        return None

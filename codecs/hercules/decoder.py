"""Decoder for landed Hercules data: gate batches, event streams, stream-read responses.

Framings (option `framing`, docs/hercules.md, "Batches and stream reads"): `batch` (the
gate's /stream/send body: int32 count, then the events), `events` (events back to back
with no count, e.g. one Kafka record value), `stream_read` (the stream API response: shard
read state, then a batch). A body that was sent with `Content-Encoding: lz4` lands as an
LZ4 block (no frame, no size prefix): option `compression` (`auto`: a source name ending
in `.lz4`).

Events have no length prefix and no checksum, so an event is found by reading it whole
(`event.EventReader`). Damage policy:
* an event that runs past the end of the file is a truncated tail (unless good events
  start inside it: then a damaged length made it run on, and it is quarantined);
* an event that cannot be read is quarantined from its first byte up to the next offset
  where a version-1 event reads completely and is followed by another one (see
  `_chain_reads` for the end of the file): every good event after the damage is kept.
  Without such an offset within `max_event_bytes` (or once the file's resync budget, which
  grows with the bytes read, is spent: see `_resync`), the rest of the file is quarantined;
* an event that reads but is followed by bytes that are no event, while good events
  start inside it, swallowed them through a damaged length: it is quarantined
  (`misframed_event`) and they are kept;
* a batch's events are counted against its declared count: missing events are
  `records_bad`; bytes after the declared events (which Java ignores) are quarantined as
  `trailing_bytes`; a negative count quarantines the file.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from types import ModuleType
from typing import BinaryIO

import numpy as np
import pyarrow as pa

from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.binary import INT32
from wirecodecs.compiled import WALKS
from wirecodecs.errors import DecodeError
from wirecodecs.hercules.event import FORMAT, VERSION, VERSION_BYTE, WIDTH, Event, EventReader
from wirecodecs.hercules.options import HerculesOptions
from wirecodecs.hercules.schema import TAG_FIELDS
from wirecodecs.inflate import drain, lz4_block, read_up_to
from wirecodecs.rows import EVENT_TIME_MAX_MS, EVENT_TIME_MIN_MS
from wirecodecs.stream import StreamWindow, quarantine_rest, truncated_tail

_LOOKAHEAD = 64 << 10  # bytes buffered ahead of an event before it is read
_FLUSH_ENTRIES = 1 << 16  # also yield once 65 536 tag entries are buffered (memory)
_STATE_ENTRY_BYTES = 12  # stream read state: partition int32, offset int64
_RESYNC_TICKS = 7 * 24 * 3600 * 10**7  # a week: see `_chain_reads`
# Resync work (`_work` units) a file may spend: a floor, plus an amount per byte read, so
# that the time hostile bytes cost grows at most linearly with the file (the bound in
# seconds: docs/performance.md, Hercules decoder).
_RESYNC_WORK_FLOOR = 100_000_000
_RESYNC_WORK_PER_BYTE = 500
_ATTEMPT_WORK = 4000  # a candidate offset (two headers, an exception, a JSON view)
_ENTRY_WORK = 2500  # an entry read (a container level: two calls, a tuple, a dict)
_PATH, _COUNT, _ELEMENT, _TEXT, _RAW = map(
    TAG_FIELDS.index, ("path", "count", "element_type", "string_value", "bytes_value")
)


def decode(
    stream: BinaryIO, source: str, accounting: FileAccounting, opts: HerculesOptions
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Walk one landed file; yield row batches and quarantined regions in file order and
    fill `accounting` (see the module docstring for the damage policy)."""
    if opts.compression == "lz4" or (
        opts.compression == "auto" and source.lower().endswith(".lz4")
    ):
        yield from _decode_lz4(stream, source, accounting, opts)
        return
    window = StreamWindow(stream)
    try:
        yield from _Walk(window, source, accounting, opts).run()
    finally:
        accounting.bytes_total += window.bytes_read


def compiled_walk() -> ModuleType:
    """The compiled event walk and its column buffers (`compiled.py`), imported at the
    first decode rather than with the registry: importing numba costs a process about half
    a second. Hercules has no other walk (the pure reader only reads the events the
    compiled one hands it), so it does not heed WIRELAKE_WALK (docs/hercules.md)."""
    return WALKS["hercules"].compiled()


def read_value(value: bytes, opts: HerculesOptions) -> tuple[Event, list]:
    """The event that is a whole Kafka record value, and its flat tag entries; raises
    DecodeError when it does not read or does not fill the value exactly."""
    entries: list = []
    reader = EventReader(value, len(value), opts.max_depth, entries)
    event, end = reader.event(0, opts.max_event_bytes)
    if end != len(value):
        raise DecodeError(
            FORMAT, "trailing_bytes", f"{len(value) - end} bytes after the event", offset=end
        )
    return event, entries


def event_micros(ticks: int) -> int | None:
    """event_time in microseconds (ticks floored), None outside years 1..9999."""
    if EVENT_TIME_MIN_MS <= ticks // 10_000 <= EVENT_TIME_MAX_MS:
        return ticks // 10
    return None


class _Walk:
    """One pass over a file's framing header and events (see the module docstring)."""

    def __init__(
        self, window: StreamWindow, source: str, acc: FileAccounting, opts: HerculesOptions
    ):
        self.window = window
        self.source = source
        self.acc = acc
        self.opts = opts
        self.compiled = compiled_walk()
        self.rows = self.compiled.Columns(opts.max_depth)
        self.reader = EventReader(b"", 0, opts.max_depth, [])
        self.copy = b""  # the window's bytes from `copy_offset` on: see `_point_reader`
        self.view = np.frombuffer(self.copy, np.uint8)
        self.copy_offset = 0
        self.last_ticks: int | None = None  # the last good event's timestamp
        self.resync_work = 0  # see `_resync`

    def run(self) -> Iterator[pa.RecordBatch | Quarantined]:
        expected = None
        if self.opts.framing != "events":
            expected = yield from self._header()
            if expected is None:
                return
        good = 0
        damaged = False
        while expected is None or damaged or good < expected:
            left = None if expected is None or damaged else expected - good
            outcome = yield from self._next_events(left)
            if outcome is None:
                break
            good += outcome
            damaged = damaged or not outcome
        yield from self._flush()
        if expected is not None and not damaged and good == expected and self.window.fill(1):
            yield quarantine_rest(
                self.window,
                self.source,
                self.acc,
                "trailing_bytes",
                "bytes after the declared events",
            )
        if expected is not None and good < expected:
            self.acc.records_bad += expected - good
            if not damaged and self.acc.stop_reason == "eof":  # ends before the declared
                self.acc.stop_reason = "truncated_tail"

    def _header(self):
        """The framing header: returns the declared event count, or None when the file
        ends there (empty, cut, or a header that cannot be trusted)."""
        window = self.window
        at = 0
        if self.opts.framing == "stream_read":
            if window.fill(4) < 4:
                return self._end_in_header()
            (shards,) = INT32.unpack_from(window.peek(4))
            if shards < 0 or shards * _STATE_ENTRY_BYTES > self.opts.max_event_bytes:
                kind = "negative_count" if shards < 0 else "length_out_of_range"
                yield quarantine_rest(
                    self.window,
                    self.source,
                    self.acc,
                    kind,
                    f"stream read state of {shards} shards",
                )
                return None
            at = 4 + shards * _STATE_ENTRY_BYTES
        if window.fill(at + 4) < at + 4:
            return self._end_in_header()
        (count,) = INT32.unpack_from(window.peek(at + 4), at)
        if count < 0:
            yield quarantine_rest(
                self.window,
                self.source,
                self.acc,
                "negative_count",
                f"negative event count {count}",
            )
            return None
        window.consume(at + 4)
        self.acc.bytes_decoded += at + 4
        return count

    def _end_in_header(self) -> None:
        if self.window.available:
            truncated_tail(self.window, self.acc)
        return None

    def _flush(self) -> Iterator[pa.RecordBatch]:
        if self.rows.rows:
            batch = self.rows.batch(self.source)
            self.rows = self.rows.fresh()
            yield batch

    def _next_events(self, left: int | None):
        """Keep the next events the compiled walk reads (at most `left`), or else read,
        keep or quarantine the next one with the pure reader (`_next_event`): the events
        kept (0 for a quarantined region), None when the file (or its readable part)
        ended. The walk takes an event only where the pure reader would take it with
        the same bytes buffered: it stops before an event with fewer than `_LOOKAHEAD`
        bytes buffered (unless the file ends there), where `_next_event` buffers more."""
        window = self.window
        available = window.fill(_LOOKAHEAD)
        if available == 0:
            return None
        start = self._point_reader(available)
        rows = self.rows
        before = rows.rows
        outcome, end = rows.walk_file(
            self.view,
            start,
            start + available,
            _LOOKAHEAD if available >= _LOOKAHEAD else 0,
            (1 << 62) if left is None else left,
            self.opts.batch_rows,
            _FLUSH_ENTRIES,
            self.opts.max_event_bytes,
        )
        kept = rows.rows - before
        compiled = self.compiled
        if kept:
            rows.events[compiled.E_OFFSET, before : rows.rows] += window.offset - start
            self.last_ticks = int(rows.events[compiled.E_TIMESTAMP, rows.rows - 1])
            window.consume(end - start)
            self.acc.bytes_decoded += end - start
            self.acc.frames_good += kept
            self.acc.records_good += kept
            if outcome == compiled.FULL:
                yield from self._flush()
            return kept
        if outcome in (compiled.STOPPED, compiled.COUNTED, compiled.FULL):  # nothing left
            return None
        outcome = yield from self._next_event()
        return outcome if outcome is None else int(outcome)

    def _next_event(self):
        """Read, keep or quarantine the next event with the pure reader: True when one was
        kept, False for a quarantined region, None when the file (or its readable part)
        ended."""
        window = self.window
        max_event = self.opts.max_event_bytes
        want = _LOOKAHEAD
        entries = self.reader.entries
        while True:
            available = window.fill(want)
            if available == 0:
                return None
            entries.clear()
            start = self._point_reader(available)
            try:
                event, end = self.reader.event(start, start + max_event)
            except DecodeError as err:
                entries.clear()
                if err.kind == "truncated" and available >= want:  # more bytes may come
                    want = min(max(2 * available, _LOOKAHEAD), max_event)
                    continue
                yield from self._flush()
                version = window.peek(1)[0]
                if err.kind == "truncated" and version == VERSION:
                    skip = self._resync()  # events after it: a damaged length, not a cut
                    if skip is None:
                        truncated_tail(self.window, self.acc)
                        return None
                    yield self._quarantine_region(skip, "misframed_event", (
                        f"{err.detail}, but an event chain starts at +{skip}: "
                        "a damaged length"))  # fmt: skip
                    return False
                if err.kind == "truncated":  # runs past the end, but no event starts here
                    err = DecodeError(FORMAT, "invalid_event", f"version {version}; "
                                      f"{err.detail}", offset=err.offset)  # fmt: skip
                yield self._quarantine_damage(err)
                return False
            if end < self.reader.end and self.copy[end] != VERSION:
                swallowed = self._misframed(end, event.size)
                if swallowed is not None:
                    entries.clear()
                    yield from self._flush()
                    yield self._quarantine_region(swallowed, "misframed_event", (
                        f"the event reads as {event.size} bytes, but no event follows it and "
                        f"one starts at +{swallowed}: a damaged length"))  # fmt: skip
                    return False
            self.rows.add_pure(window.offset, event, entries)
            entries.clear()
            self.last_ticks = event.timestamp
            window.consume(event.size)
            self.acc.count_good(event.size)
            if self.rows.rows >= self.opts.batch_rows or self.rows.entries >= _FLUSH_ENTRIES:
                yield from self._flush()
            return True

    def _point_reader(self, available: int) -> int:
        """Points the reader at the next `available` bytes as one bytes object (slicing
        and decoding text are cheaper on bytes than on a memoryview); returns where they
        start in it. The window's bytes are copied only when it has buffered new ones, so
        each byte of the file is copied about once."""
        start = self.window.offset - self.copy_offset
        if start + available > len(self.copy):
            self.copy = bytes(self.window.peek(available))
            self.view = np.frombuffer(self.copy, np.uint8)
            self.copy_offset = self.window.offset
            start = 0
        self.reader.buf = self.copy
        self.reader.end = start + available
        return start

    def _quarantine_damage(self, err: DecodeError) -> Quarantined:
        """The region from a bad event to the next trusted event start (or the end)."""
        skip = self._resync()
        detail = f"{err.detail} (at +{err.offset} in the event)"
        if skip is None:
            return quarantine_rest(
                self.window,
                self.source,
                self.acc,
                err.kind,
                f"{detail}; no event start found after it",
            )
        return self._quarantine_region(skip, err.kind, detail)

    def _quarantine_region(self, length: int, kind: str, detail: str) -> Quarantined:
        start = self.window.offset
        region = self.window.peek(length)
        self.window.consume(length)
        self.acc.count_bad(length)
        return Quarantined.from_frame(self.source, start, region, kind, detail)

    def _misframed(self, end: int, size: int) -> int | None:
        """Called when the bytes after an event (`size` long, ending at `end` in the
        reader's buffer) do not start a version-1 event: if they do not start any event
        and a chain of events starts inside this one, a damaged length made it swallow its
        successors; returns where they start (from the event's start)."""
        max_event = self.opts.max_event_bytes
        probe = EventReader(self.reader.buf, self.reader.end, self.opts.max_depth, [])
        try:
            probe.event(end, end + max_event)
            return None
        except DecodeError:
            pass  # not an event, or not buffered whole: look for a chain inside this one
        return self._resync(size)

    def _resync(self, within: int | None = None) -> int | None:
        """Bytes from the bad event's start to the first later offset (before `within`)
        where a version-1 event reads and is followed by another (or by the end of the
        file); None when there is none within `max_event_bytes`, or when the file's
        candidates have spent its resync budget. Hostile bytes (0x01 repeated, containers
        nested past `max_depth`) make every offset a candidate that reads 100 levels deep
        before it fails: the work each one did is counted (`_work`), and the budget grows
        with the bytes read, so a file costs at most about `_RESYNC_WORK_PER_BYTE` units
        per byte beyond a floor."""
        max_event = self.opts.max_event_bytes
        want = 2 * max_event + _LOOKAHEAD
        available = self.window.fill(want)
        at_eof = available < want
        data = bytes(self.window.peek(available))
        probe = EventReader(data, available, self.opts.max_depth, [])
        stop = max_event + 1 if within is None else min(within, max_event + 1)
        pos = data.find(VERSION_BYTE, 1, stop)
        while pos != -1:
            budget = _RESYNC_WORK_FLOOR + _RESYNC_WORK_PER_BYTE * self.window.bytes_read
            if self.resync_work >= budget:
                return None
            found = _chain_reads(probe, pos, max_event, at_eof, self.last_ticks)
            self.resync_work += _work(probe.entries)
            if found:
                return pos
            probe.entries.clear()
            pos = data.find(VERSION_BYTE, pos + 1, stop)
        return None


def _work(entries: list) -> int:
    """What reading a candidate cost, in units of roughly equal CPU time (the unit's size:
    docs/performance.md): the attempt, every entry it made, and what entries hold beyond
    their bytes on the wire: paths (which repeat their ancestors' keys), texts, raw bytes
    and the elements of Null vectors (a list slot each, and no bytes)."""
    if not entries:
        return _ATTEMPT_WORK
    nulls = sum(
        count
        for kind, count in zip(entries[_ELEMENT::WIDTH], entries[_COUNT::WIDTH], strict=True)
        if kind == "Null"
    )
    return (
        _ATTEMPT_WORK
        + _ENTRY_WORK * (len(entries) // WIDTH)
        + sum(map(len, entries[_PATH::WIDTH]))
        + sum(map(len, filter(None, entries[_TEXT::WIDTH])))
        + sum(map(len, filter(None, entries[_RAW::WIDTH])))
        + nulls
    )


def _chain_reads(
    probe: EventReader, pos: int, max_event: int, at_eof: bool, near: int | None
) -> bool:
    """Whether a version-1 event reads at `pos` and is followed by another complete one.
    At the end of the file one event (or one and a cut one) is weaker evidence: it is
    taken only when its timestamp is within `_RESYNC_TICKS` of `near`, the last good
    event's (a batch is one client's recent events; random bytes are not that close)."""
    try:
        event, end = probe.event(pos, pos + max_event)
    except DecodeError:
        return False
    if event.version != VERSION:
        return False
    plausible = near is not None and abs(event.timestamp - near) <= _RESYNC_TICKS
    if end == probe.end:
        return at_eof and plausible
    try:
        event, _ = probe.event(end, end + max_event)
    except DecodeError as err:
        return err.kind == "truncated" and at_eof and probe.buf[end] == VERSION and plausible
    return event.version == VERSION


def _decode_lz4(
    stream: BinaryIO, source: str, accounting: FileAccounting, opts: HerculesOptions
) -> Iterator[pa.RecordBatch | Quarantined]:
    """An LZ4-block body: decompressed (bounded) and walked like a plain one. The file is
    one compressed unit, so its bytes are decoded when the body is clean, else quarantined
    as one region (the good events still yield rows)."""
    limit = opts.max_lz4_body_bytes
    data = read_up_to(stream, limit + 1)
    accounting.bytes_total += len(data)
    if len(data) > limit:
        accounting.bytes_total += drain(stream)
        yield _quarantine_file(source, data, accounting, "length_out_of_range",
                               f"LZ4 body above max_lz4_body_bytes ({limit})")  # fmt: skip
        return
    if not data:
        return
    try:
        body = lz4_block(FORMAT, data, limit)
    except DecodeError as err:
        yield _quarantine_file(source, data, accounting, err.kind, err.detail)
        return
    inner = FileAccounting(source, FORMAT)
    problems = []
    for item in decode(
        io.BytesIO(body), source, inner, dataclasses.replace(opts, compression="none")
    ):
        if isinstance(item, Quarantined):
            problems.append(item)
        else:
            yield item
    for name in ("frames_good", "records_good", "records_bad"):  # frames_bad: the file
        setattr(accounting, name, getattr(inner, name))
    accounting.stop_reason = inner.stop_reason
    if not problems and not inner.bytes_truncated_tail:
        accounting.bytes_decoded += len(data)
        return
    detail = "; ".join(
        f"{item.kind} at body offset {item.byte_offset} ({item.length} bytes)" for item in problems
    )
    if inner.bytes_truncated_tail:
        detail += f"; body ends inside an event ({inner.bytes_truncated_tail} bytes)"
    kind = problems[0].kind if problems else "truncated"
    yield _quarantine_file(source, data, accounting, kind, f"LZ4 body damaged: {detail}")


def _quarantine_file(
    source: str, data: bytes, accounting: FileAccounting, kind: str, detail: str
) -> Quarantined:
    accounting.count_bad(accounting.bytes_total)
    accounting.stop_reason = kind
    return Quarantined.from_frame(source, 0, data, kind, detail, length=accounting.bytes_total)

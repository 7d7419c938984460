"""Decoder for Kafka log segments and fetch record sets: v0, v1 and v2 entries in one walk.

The walk (docs/kafka.md §3) reads each entry's 17-byte prefix (offset, size, CRC or
epoch, magic), takes the whole entry (`12 + size` bytes) and hands it to the reader for
its magic: `message_set.read_message_set` (v0/v1 messages and compressed wrappers) or
`record_batch.read_record_batch` (v2 batches). Each reader returns the entry's rows as a
`columns.Run`, and a `columns.RowBuffer` turns the runs into Arrow record batches.

Damage is handled as Kafka's own tools see it: a CRC mismatch still yields the records
(`crc_valid` false, the DumpLogSegments view); a complete entry whose records cannot be
decoded becomes one `Quarantined` item and the walk goes on; an entry cut by the end of
the file is a truncated tail; a size the walk cannot trust (below the 14-byte minimum, or
above `max_frame_bytes`) quarantines the rest of the file, which is drained, not buffered.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator
from typing import BinaryIO

import pyarrow as pa

from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.binary import INT32
from wirecodecs.compiled import WALKS, file_size
from wirecodecs.errors import DecodeError
from wirecodecs.kafka.columns import RowBuffer, Run
from wirecodecs.kafka.entry import (
    CODEC_MASK,
    CODECS,
    FORMAT,
    LOG_OVERHEAD,
    MAGIC_AT,
    MIN_ENTRY_SIZE,
    OFFSET,
    PREFIX,
    SIZE_AT,
    V2_HEADER,
    last_offset_of,
    magic_of,
)
from wirecodecs.kafka.message_set import INVALID_ATTRIBUTES, read_message_set
from wirecodecs.kafka.options import KafkaOptions
from wirecodecs.kafka.record_batch import MIN_RECORD_BYTES, read_record_batch
from wirecodecs.stream import StreamWindow, quarantine_rest, truncated_tail

_PARTITION_DIR = re.compile(r"([A-Za-z0-9._-]+)-(0|[1-9][0-9]{0,9})")


# The compiled walk has a fixed cost per process before its first batch (numba's start,
# loading the cached machine code; docs/kafka.md §3.4) and then takes less CPU per MB than
# the pure walk: flushes take it once the process has read `WALK.pure_below` bytes of
# Kafka data, so that a small file (the inspector's) does not pay for it.
WALK = WALKS["kafka"]


def _when_worth_it(window: StreamWindow, size: int = 0) -> Callable[[object], object]:
    """A flush's compiled-walk buffers (`compiled.Columns`, sized like the `previous`
    flush's) when `WALK` takes the compiled walk, counting this file so far or its whole
    `size` when known; else None: the pure walk."""

    def columns(previous):
        compiled = WALK.compiled(max(size, window.bytes_read))
        return None if compiled is None else compiled.Columns(previous)

    return columns


def decode(
    stream: BinaryIO, source: str, accounting: FileAccounting, opts: KafkaOptions
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Walk a Kafka segment or record set; yield row batches and quarantined entries in
    file order and fill `accounting` (see the module docstring for the damage policy)."""
    window = StreamWindow(stream)
    walk = _when_worth_it(window, file_size(stream))
    rows = RowBuffer(source, *topic_partition(source), opts.batch_rows, walk)
    last_good = None  # the last good entry: a plausible tail starts after its last offset
    try:
        while True:
            available = window.fill(PREFIX.size)
            if available == 0:
                break
            start = window.offset
            if available < PREFIX.size:  # FileLogInputStream stops here, no exception
                yield from _tail(window, source, accounting, last_good, rows)
                break
            (size,) = INT32.unpack_from(window.peek(PREFIX.size), SIZE_AT)
            if size < MIN_ENTRY_SIZE or size > opts.max_frame_bytes:
                yield from rows.flush()
                yield _quarantine_rest(window, source, accounting, size, opts)
                break
            total = LOG_OVERHEAD + size
            if window.fill(total) < total:  # active segment, fetch cut at max_bytes
                yield from _tail(window, source, accounting, last_good, rows)
                break
            entry = window.peek(total)
            window.consume(total)
            try:
                run = _read_entry(entry, start, opts, rows.compiled)
            except DecodeError as err:
                yield from rows.flush()
                yield _quarantine_entry(entry, start, source, accounting, err)
                continue
            last_good = entry
            accounting.count_good(total, records=run.rows)
            rows.add(run)
            if rows.full:
                yield from rows.flush()
        yield from rows.flush()
    finally:
        accounting.bytes_total += window.bytes_read
        WALK.count(window.bytes_read)


def topic_partition(source: str) -> tuple[str | None, int | None]:
    """Topic and partition from a `<topic>-<partition>/` parent folder of `source`."""
    parts = source.replace("\\", "/").rstrip("/").split("/")
    match = _PARTITION_DIR.fullmatch(parts[-2]) if len(parts) > 1 else None
    if match is None or int(match[2]) > 0x7FFF_FFFF:
        return None, None
    return match[1], int(match[2])


# ---- walk outcomes that are not rows -----------------------------------------------------------


def _quarantine_rest(
    window: StreamWindow, source: str, accounting: FileAccounting, size: int, opts: KafkaOptions
) -> Quarantined:
    """A size field that cannot be walked past: nothing after it can be framed."""
    if size < MIN_ENTRY_SIZE:
        kind = "record_size_too_small"
        detail = f"entry size {size} is below the minimum record overhead ({MIN_ENTRY_SIZE})"
    else:
        kind = "length_out_of_range"
        detail = f"entry size {size} exceeds max_frame_bytes ({opts.max_frame_bytes})"
    return quarantine_rest(window, source, accounting, kind, f"{detail}; rest of file not walked")


def _tail(
    window: StreamWindow,
    source: str,
    accounting: FileAccounting,
    last_good: memoryview | None,
    rows: RowBuffer,
) -> Iterator[pa.RecordBatch | Quarantined]:
    """An entry cut by the end of the file: a truncated tail if what is left of its header
    could start the next entry, else corruption (random bytes over a segment often read as
    a length that runs past the end; calling them a tail would hide them)."""
    last_offset = None if last_good is None else last_offset_of(last_good)
    problem = _implausible_header(window.peek(V2_HEADER.size), last_offset)
    if problem is None:
        truncated_tail(window, accounting)
        return
    yield from rows.flush()
    detail = (
        f"{window.available} bytes at the end of the file do not start a plausible entry "
        f"({problem}); rest of file not walked"
    )
    yield quarantine_rest(window, source, accounting, "implausible_tail", detail)


def _implausible_header(head: memoryview, last_offset: int | None) -> str | None:
    """Why the start of an incomplete entry cannot be one (None: it may be), checking each
    field that is there: offsets after the last good entry's, a known magic, the codec and
    unused attribute bits, and (v2) record counts that fit the batch."""
    if len(head) >= SIZE_AT:
        (offset,) = OFFSET.unpack_from(head)
        if last_offset is not None and offset <= last_offset:
            return f"offset {offset} does not follow the previous entry's last offset {last_offset}"
    if len(head) <= MAGIC_AT:
        return None
    magic = magic_of(head)
    if magic not in (0, 1, 2):
        return f"magic byte {magic} is not 0, 1 or 2"
    if magic in (0, 1):
        if len(head) > MAGIC_AT + 1 and head[MAGIC_AT + 1] & INVALID_ATTRIBUTES:
            return f"message attributes 0x{head[MAGIC_AT + 1]:02x} use an undefined codec or bit"
        return None
    if len(head) < V2_HEADER.size:
        return None
    _, size, _, _, _, attributes, last_delta, *_, records = V2_HEADER.unpack_from(head)
    if attributes & CODEC_MASK >= len(CODECS):
        return f"batch attributes 0x{attributes:04x} name codec {attributes & CODEC_MASK}"
    if last_delta < 0 or not 0 <= records <= last_delta + 1:
        return f"{records} records with last offset delta {last_delta}"
    if records * MIN_RECORD_BYTES > LOG_OVERHEAD + size - V2_HEADER.size:
        return f"{records} records cannot fit in a {size}-byte batch"
    return None


def _quarantine_entry(
    entry: memoryview, start: int, source: str, accounting: FileAccounting, err: DecodeError
) -> Quarantined:
    accounting.count_bad(len(entry), records_lost=_declared_records(entry))
    return Quarantined.from_frame(
        source, start, entry, err.kind, f"magic {magic_of(entry)}: {err.detail}"
    )


def _declared_records(entry: memoryview) -> int:
    """Records known lost with a bad entry: a v2 batch's count, 1 for a plain v0/v1 message,
    0 when unknown (a compressed wrapper, an unreadable header)."""
    magic = magic_of(entry)
    if magic == 2 and len(entry) >= V2_HEADER.size:
        return max(V2_HEADER.unpack_from(entry)[-1], 0)
    if magic in (0, 1):
        return 1 if entry[MAGIC_AT + 1] & CODEC_MASK == 0 else 0
    return 0


# ---- one entry -----------------------------------------------------------------------------


def _read_entry(entry: memoryview, start: int, opts: KafkaOptions, compiled) -> Run:
    """The version facade: dispatch one complete log entry on its magic byte (`compiled`:
    the flush's `compiled.Columns`, or None for the pure walk)."""
    magic = magic_of(entry)
    try:
        if magic == 2:
            return read_record_batch(entry, start, opts, compiled)
        if magic in (0, 1):
            return read_message_set(entry, start, opts)
    except (IndexError, ValueError, struct.error) as err:
        raise DecodeError(FORMAT, "invalid_record", str(err), offset=start) from None
    raise DecodeError(FORMAT, "unknown_magic", f"magic byte {magic} is not 0, 1 or 2", offset=start)

"""Decoder for landed InLongMsg messages: files of one message, or length-prefixed files.

InLongMsg has no length of its own (V0-V3; V4's TotalLen is not trusted by Java either):
a message is a whole MQ message value (docs/inlong.md, "Message frame"). Landed files
therefore come in two framings, chosen by the `framing` option:

* `message` — the file is one message (a dumped MQ message body);
* `length_prefixed` — messages back to back, each preceded by a 4-byte big-endian
  unsigned length. A bad message is quarantined and the walk goes on with the next
  length; a length above `max_message_bytes` cannot be walked past (there is no sync
  marker), so the rest of the file is quarantined as one region and drained; a frame cut
  by the end of the file is a truncated tail.

Messages are walked by `compiled.py` in runs, and by `message.parse` where that walk
hands one over (errors, rarer forms: compiled.py). Kafka-borne messages (envelope kafka,
payload inlong) go through `payload.decode_values`, which shares both walks and the row
buffer. Row model: schema.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import numpy as np
import pyarrow as pa

from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.binary import UINT32
from wirecodecs.compiled import WALKS, file_size
from wirecodecs.errors import DecodeError
from wirecodecs.inlong import bounds
from wirecodecs.inlong import message as msg
from wirecodecs.inlong.attributes import event_time_ms
from wirecodecs.inlong.options import InlongOptions
from wirecodecs.inlong.schema import INLONG_SCHEMA
from wirecodecs.rows import EVENT_TIME_MAX_MS, EVENT_TIME_MIN_MS, FLUSH_BYTES
from wirecodecs.stream import StreamWindow, quarantine_rest, truncated_tail

PREFIX = UINT32  # the length prefix of `length_prefixed` files

ROW_SCHEMA = pa.schema(list(INLONG_SCHEMA)[1:])  # all but source_file
WINDOW_BYTES = 1 << 20  # length-prefixed frames are walked a window of this size at a time
FRAMES_PER_WALK = 8192  # ... at most this many at a time

# The compiled walk has a fixed cost per process before its first message (importing
# numba, loading the cached machine code) and then decodes InLong data faster than the
# pure walk: it takes over once the process has read `WALK.pure_below` bytes (a file this
# large: from its start), so that a small file (the inspector's) does not pay for it
# (figures: docs/performance.md, InLong decoder).
WALK = WALKS["inlong"]


def item_columns(items: msg.Items) -> dict[str, list]:
    """The other columns of a chunk of items, a list each (event_time as epoch
    microseconds). Column lists, not row tuples: buffered rows then hold almost no objects
    the garbage collector must track."""
    count = len(items.bodies)
    times, group_ids, stream_ids = _head_columns(items.attributes)
    return {
        "event_time": times,
        "group_id": group_ids,
        "stream_id": stream_ids,
        "block_index": items.blocks,
        "block_item_count": items.block_item_counts,
        "item_index": list(range(items.first, items.first + count)),
        "compressed": items.compressed,
        "attr": items.attrs,
        "attributes": items.attributes,
        "private_attr": items.private_attrs,
        "private_attributes": items.private_attributes,
        "body": items.bodies,
    }


def _head_columns(attributes: list[dict[str, str]]) -> tuple[list, list, list]:
    """Event time, group id and stream id of each item, worked out once per attribute
    map (items of a block share one)."""
    ids = list(map(id, attributes))
    heads = {
        key: (
            _event_time_us(found),
            found.get("groupId", found.get("bid")),
            found.get("streamId", found.get("tid")),
        )
        for key, found in dict(zip(ids, attributes, strict=True)).items()
    }
    if len(heads) == 1:
        ((time, group_id, stream_id),) = heads.values()
        return [time] * len(ids), [group_id] * len(ids), [stream_id] * len(ids)
    times, group_ids, stream_ids = zip(*map(heads.__getitem__, ids), strict=True)
    return list(times), list(group_ids), list(stream_ids)


def _event_time_us(attributes: dict[str, str]) -> int | None:
    ms = event_time_ms(attributes)
    if ms is None or not EVENT_TIME_MIN_MS <= ms <= EVENT_TIME_MAX_MS:
        return None
    return ms * 1000


def decode(
    stream: BinaryIO,
    source: str,
    accounting: FileAccounting,
    opts: InlongOptions,
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Walk one landed file in its framing; yield row batches and quarantined messages in
    file order and fill `accounting` (damage policy: module docstring)."""
    window = StreamWindow(stream)
    rows = RowBuffer(source, file_limits(opts))
    rows.input_bytes = file_size(stream)
    walk = _walk_prefixed if opts.framing == "length_prefixed" else _walk_whole
    try:
        for item in walk(window, source, accounting, opts, rows):
            if isinstance(item, Quarantined):  # after the rows before it
                yield from rows.flush()
            yield item
        yield from rows.flush()
        WALK.count(window.bytes_read)
    finally:
        accounting.bytes_total += window.bytes_read


def _walk_whole(
    window: StreamWindow, source: str, accounting: FileAccounting, opts: InlongOptions, rows
) -> Iterator[pa.RecordBatch | Quarantined]:
    """`message` framing: the whole file is one message (an empty file holds none)."""
    limit = opts.max_message_bytes
    size = window.fill(limit + 1)
    if size == 0:
        return
    if size > limit:
        yield quarantine_rest(
            window,
            source,
            accounting,
            "length_out_of_range",
            f"file exceeds max_message_bytes ({limit}); not decoded",
        )
        return
    yield from _frame(window, 0, size, source, accounting, opts, rows)


def _walk_prefixed(
    window: StreamWindow, source: str, accounting: FileAccounting, opts: InlongOptions, rows
) -> Iterator[pa.RecordBatch | Quarantined]:
    """`length_prefixed` framing: u32 length, message; repeat to the end of the file. The
    complete frames of the window go to the compiled walk together; a frame longer than
    the window is filled in on its own."""
    limit = opts.max_message_bytes
    frames = np.empty((4, FRAMES_PER_WALK), np.int64)
    while True:
        available = window.fill(WINDOW_BYTES)
        if available == 0:
            return
        data = window.peek(available)
        count = span = 0
        if rows.compiled(window.bytes_read):
            count, span = rows.module.scan_prefixed(np.frombuffer(data, np.uint8),
                                                    window.offset, limit, frames)  # fmt: skip
        if count:
            yield from _frames(data, frames, count, PREFIX.size, source, accounting, opts, rows)
            window.consume(span)
            continue
        if available < PREFIX.size:
            truncated_tail(window, accounting)
            return
        (length,) = PREFIX.unpack(window.peek(PREFIX.size))
        if length > limit:
            yield quarantine_rest(
                window,
                source,
                accounting,
                "length_out_of_range",
                f"length prefix {length} exceeds max_message_bytes ({limit}); "
                "rest of file not walked",
            )
            return
        total = PREFIX.size + length
        if window.fill(total) < total:
            truncated_tail(window, accounting)
            return
        yield from _frame(window, PREFIX.size, total, source, accounting, opts, rows)


def _frame(
    window: StreamWindow,
    skip: int,
    total: int,
    source: str,
    accounting: FileAccounting,
    opts: InlongOptions,
    rows: RowBuffer,
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Decode the frame of `total` bytes at the window's position (its message starts
    `skip` bytes in), and consume it."""
    frames = np.array([[skip], [total - skip], [window.offset], [total]], np.int64)
    rows.compiled(window.bytes_read)
    yield from _frames(window.peek(total), frames, 1, skip, source, accounting, opts, rows)
    window.consume(total)


def _frames(
    data: memoryview,
    frames: np.ndarray,
    count: int,
    skip: int,
    source: str,
    accounting: FileAccounting,
    opts: InlongOptions,
    rows: RowBuffer,
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Decode the first `count` frames of `data` (`frames`: message start and length in
    `data`, byte offset, frame bytes; the message starts `skip` bytes into its frame):
    runs of them by the compiled walk, the others by `message.parse`. A bad message comes
    back quarantined; rows go into `rows`, and the batches that makes room for come back."""
    buf = np.frombuffer(data, np.uint8)
    first = 0
    while first < count:
        status, first, walked = rows.walk(buf, frames, first, count)
        accounting.bytes_decoded += walked.frame_bytes  # as count_good for each message
        accounting.frames_good += walked.frames
        accounting.records_good += walked.items
        if status == bounds.FLUSH:
            yield from rows.flush()
        elif status == bounds.FALLBACK:
            at = int(frames[0, first]) - skip
            frame = data[at : at + int(frames[3, first])]
            yield from _pure_frame(frame, skip, int(frames[2, first]), source, accounting, opts,
                                   rows)  # fmt: skip
            first += 1


def _pure_frame(
    frame: memoryview,
    skip: int,
    start: int,
    source: str,
    accounting: FileAccounting,
    opts: InlongOptions,
    rows: RowBuffer,
) -> Iterator[pa.RecordBatch | Quarantined]:
    """One frame at byte `start` by `message.parse`: quarantined if its message is bad,
    else into `rows` a chunk at a time."""
    total = len(frame)
    body = frame[skip:]
    try:
        message = msg.parse(body, opts.max_decompressed_bytes, opts.batch_rows)
    except DecodeError as err:
        accounting.count_bad(total, records_lost=msg.declared_items(body))
        where = "" if err.offset is None else f" (message byte {err.offset})"
        yield Quarantined.from_frame(source, start, frame, err.kind, f"{err.detail}{where}")
        return
    accounting.count_good(total, records=message.item_count)
    for items in message.items():
        yield from rows.add(start, message.header, items)


def file_limits(opts: InlongOptions) -> np.ndarray:
    """The compiled walk's limits for files: batches as `RowBuffer.add` cuts them,
    chunks as `message.parse` does."""
    return np.array([opts.max_decompressed_bytes, opts.batch_rows, FLUSH_BYTES,
                     opts.batch_rows, msg.CHUNK_BYTES], np.int64)  # fmt: skip


class RowBuffer:
    """Item rows decoded since the last flush: the compiled walk's `Columns`, and
    batches of rows from the pure walk (with the compiled rows before them). `limits`
    (`bounds.L_*`): the batch bounds, and the chunks the compiled walk must match;
    `body_bytes`: the bodies the compiled walk's first batch makes room for from the
    start."""

    def __init__(self, source: str | None, limits: np.ndarray, *, body_bytes: int = 0) -> None:
        self.source = source
        self.limits = limits
        self.body_bytes = body_bytes
        self.batch_rows = int(limits[bounds.L_BATCH_ROWS])
        self.batch_bytes = int(limits[bounds.L_BATCH_BYTES])
        self.module = None  # the compiled walk (`WALK.compiled`), once it is taken
        self.columns = None  # its `Columns`
        self.input_bytes = 0  # the input's size, when known
        self._reset()

    def compiled(self, read_now: int) -> bool:
        """Whether messages take the compiled walk, `read_now` bytes into the input (or
        `input_bytes`, when known)."""
        if self.module is None:
            self.module = WALK.compiled(max(read_now, self.input_bytes))
            if self.module is not None:
                self.columns = self.module.Columns(body_bytes=self.body_bytes)
        return self.module is not None

    def _reset(self) -> None:
        self.parts: list[pa.RecordBatch] = []
        self.rows = 0
        self.data_bytes = 0

    def walk(self, buf, frames, first: int, count: int) -> tuple[int, int, bounds.Walked]:
        """Frames `first` .. `count` - 1 by the compiled walk once `compiled` said so,
        else none: (status, next frame, what the messages it took add)."""
        if self.columns is None:
            return bounds.FALLBACK, first, bounds.Walked(self.rows, self.data_bytes, 0, 0, 0)
        status, stop = self.columns.walk(buf, frames, first, count, self.limits, self.rows,
                                         self.data_bytes)  # fmt: skip
        walked = self.columns.counts()
        self.rows, self.data_bytes = walked.buffered_rows, walked.buffered_bytes
        return status, stop, walked

    def add(
        self, byte_offset: int, header: msg.Header, items: msg.Items
    ) -> Iterator[pa.RecordBatch]:
        """Buffer a chunk of a message's items from the pure walk (`header`: the
        message's), after flushing the rows buffered so far if the chunk would take them
        past a batch."""
        count = len(items.bodies)
        if (
            self.rows + count > self.batch_rows
            or self.data_bytes + items.data_bytes > self.batch_bytes
        ):
            yield from self.flush()
        self.append(byte_offset, header, items)

    def append(self, byte_offset: int, header: msg.Header, items: msg.Items) -> None:
        """Buffer a chunk of items from the pure walk, whatever the buffer holds."""
        count = len(items.bodies)
        self._seal()
        columns = {"byte_offset": [byte_offset] * count}
        for name, value in zip(msg.Header._fields, header, strict=True):
            columns[name] = [value] * count
        columns.update(item_columns(items))
        self.parts.append(
            pa.RecordBatch.from_arrays(
                [pa.array(columns[field.name], field.type) for field in ROW_SCHEMA],
                schema=ROW_SCHEMA,
            )
        )
        self.rows += count
        self.data_bytes += items.data_bytes

    def _seal(self) -> None:
        """The compiled walk's rows so far become a part of the batch."""
        if self.columns is not None and self.columns.rows:
            self.parts.append(pa.RecordBatch.from_arrays(self.columns.arrays(), schema=ROW_SCHEMA))
            self.columns = self.module.Columns(self.columns.sizes())

    def take(self) -> pa.RecordBatch | None:
        """The buffered rows as one batch of ROW_SCHEMA, if there are any; empties the
        buffer."""
        self._seal()
        parts = self.parts
        self._reset()
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return pa.Table.from_batches(parts).combine_chunks().to_batches()[0]

    def flush(self) -> Iterator[pa.RecordBatch]:
        """The buffered rows as one record batch (at most `batch_rows` rows: chunks are no
        longer and `add` flushes before one would overflow), if there are any."""
        batch = self.take()
        if batch is None:
            return
        source = pa.repeat(pa.scalar(self.source, pa.string()), batch.num_rows)
        yield pa.RecordBatch.from_arrays([source, *batch.columns], schema=INLONG_SCHEMA)

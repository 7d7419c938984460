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

Kafka-borne messages (envelope kafka, payload inlong) go through `decode_value`, which
shares `message.parse` and `item_columns` with the file walk. Row model: schema.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import BinaryIO

import pyarrow as pa

from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.binary import UINT32
from wirecodecs.errors import DecodeError
from wirecodecs.inlong import message as msg
from wirecodecs.inlong.attributes import event_time_ms
from wirecodecs.inlong.options import InlongOptions
from wirecodecs.inlong.schema import INLONG_SCHEMA
from wirecodecs.rows import EPOCH, EVENT_TIME_MAX_MS, EVENT_TIME_MIN_MS, FLUSH_BYTES
from wirecodecs.stream import StreamWindow, quarantine_rest, truncated_tail

PREFIX = UINT32  # the length prefix of `length_prefixed` files

VALUE_COLUMNS = tuple(INLONG_SCHEMA.names[2:])  # all but the lineage pair
_ROW_COLUMNS = INLONG_SCHEMA.names[1:]  # byte_offset, then VALUE_COLUMNS


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


def decode_value(value: bytes, opts: InlongOptions) -> list[dict]:
    """One Kafka record value (one InLongMsg) as row dicts without source_file and
    byte_offset (`registry.PayloadCodec`); event_time as a UTC datetime. Raises
    DecodeError, with offsets inside the value."""
    message = msg.parse(value, opts.max_decompressed_bytes)
    head = message.header._asdict()
    rows = []
    for items in message.items():
        columns = item_columns(items)
        for values in zip(*columns.values(), strict=True):
            row = {**head, **dict(zip(columns, values, strict=True))}
            if row["event_time"] is not None:
                row["event_time"] = EPOCH + dt.timedelta(microseconds=row["event_time"])
            rows.append({name: row[name] for name in VALUE_COLUMNS})
    return rows


def decode(
    stream: BinaryIO, source: str, accounting: FileAccounting, opts: InlongOptions
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Walk one landed file in its framing; yield row batches and quarantined messages in
    file order and fill `accounting` (damage policy: module docstring)."""
    window = StreamWindow(stream)
    rows = _RowBuffer(source, opts.batch_rows)
    walk = _walk_prefixed if opts.framing == "length_prefixed" else _walk_whole
    try:
        for item in walk(window, source, accounting, opts, rows):
            if isinstance(item, Quarantined):  # after the rows before it
                yield from rows.flush()
            yield item
        yield from rows.flush()
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
    """`length_prefixed` framing: u32 length, message; repeat to the end of the file."""
    limit = opts.max_message_bytes
    while True:
        available = window.fill(PREFIX.size)
        if available == 0:
            return
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
    rows: _RowBuffer,
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Decode the frame of `total` bytes at the window's position (its message starts
    `skip` bytes in): a bad message comes back quarantined; a good one goes into `rows`
    a chunk at a time, and the batches that makes room for come back."""
    start = window.offset
    frame = window.peek(total)
    window.consume(total)
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


class _RowBuffer:
    """Item rows decoded since the last flush, kept as column lists."""

    def __init__(self, source: str, batch_rows: int) -> None:
        self.source = source
        self.batch_rows = batch_rows
        self._reset()

    def _reset(self) -> None:
        self.columns: dict[str, list] = {name: [] for name in _ROW_COLUMNS}
        self.rows = 0
        self.data_bytes = 0

    def add(
        self, byte_offset: int, header: msg.Header, items: msg.Items
    ) -> Iterator[pa.RecordBatch]:
        """Buffer a chunk of a message's items (`header`: the message's), after
        flushing the rows buffered so far if the chunk would take them past a batch."""
        count = len(items.bodies)
        if self.rows + count > self.batch_rows or self.data_bytes + items.data_bytes > FLUSH_BYTES:
            yield from self.flush()
        columns = self.columns
        columns["byte_offset"].extend([byte_offset] * count)
        for name, value in zip(msg.Header._fields, header, strict=True):
            columns[name].extend([value] * count)
        for name, column in item_columns(items).items():
            columns[name].extend(column)
        self.rows += count
        self.data_bytes += items.data_bytes

    def flush(self) -> Iterator[pa.RecordBatch]:
        """The buffered rows as one record batch (at most `batch_rows` rows: chunks are no
        longer and `add` flushes before one would overflow), if there are any."""
        if not self.rows:
            return
        columns, rows = self.columns, self.rows
        self._reset()
        arrays = [pa.repeat(pa.scalar(self.source, pa.string()), rows)]
        arrays += [pa.array(columns[field.name], field.type) for field in list(INLONG_SCHEMA)[1:]]
        yield pa.RecordBatch.from_arrays(arrays, schema=INLONG_SCHEMA)

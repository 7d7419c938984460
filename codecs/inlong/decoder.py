"""Decoder for landed InLongMsg messages: files of one message, or length-prefixed files.

InLongMsg has no length of its own (V0-V3; V4's TotalLen is not trusted by Java either):
a message is a whole MQ message value (spec section 2). Landed files therefore come in
two framings, chosen by the `framing` option:

* `message` — the file is one message (a dumped MQ message body);
* `length_prefixed` — messages back to back, each preceded by a 4-byte big-endian
  unsigned length. A bad message is quarantined and the walk goes on with the next
  length; a length above `max_message_bytes` cannot be walked past (there is no sync
  marker), so the rest of the file is quarantined as one region and drained; a frame cut
  by the end of the file is a truncated tail.

Kafka-borne messages (envelope kafka, payload inlong) go through `decode_value`, which
shares `message.parse` and `message_columns` with the file walk. Row model: schema.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import BinaryIO

import pyarrow as pa

from wirecodecs.accounting import HEAD_BYTES, FileAccounting, Quarantined
from wirecodecs.binary import UINT32
from wirecodecs.errors import DecodeError
from wirecodecs.inlong import message as msg
from wirecodecs.inlong.attributes import event_time_ms
from wirecodecs.inlong.schema import INLONG_SCHEMA
from wirecodecs.rows import EVENT_TIME_MAX_MS, EVENT_TIME_MIN_MS, FLUSH_BYTES, in_batches
from wirecodecs.stream import StreamWindow, quarantine_rest, truncated_tail

FRAMINGS = ("message", "length_prefixed")
OPTIONS: dict[str, object] = {
    "framing": "message",  # message: one message per file | length_prefixed: u32 BE + message
    "max_message_bytes": 64 << 20,  # a longer message (or length prefix) is not trusted
    "max_decompressed_bytes": 256 << 20,  # per snappy block / V4 body: a bigger output is a bomb
    "batch_rows": 65536,  # rows per yielded Arrow record batch (at most)
}
PREFIX = UINT32  # the length prefix of `length_prefixed` files
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

MESSAGE_COLUMNS = ("version", "create_time_ms", "msg_count", "msg_type", "group_id_num",
                   "stream_id_num", "ext_field", "data_time", "unique_id")  # fmt: skip
VALUE_COLUMNS = tuple(INLONG_SCHEMA.names[2:])  # all but the lineage pair
_ROW_COLUMNS = INLONG_SCHEMA.names[1:]  # byte_offset, then VALUE_COLUMNS


def _options(given: Mapping[str, object]) -> dict[str, object]:
    """Defaults overlaid with `given` (names were checked by `registry.resolve_options`)."""
    opts = {**OPTIONS, **given}
    if opts["framing"] not in FRAMINGS:
        raise ValueError(
            f"inlong option framing must be one of {FRAMINGS}, not {opts['framing']!r}"
        )
    for name in ("max_message_bytes", "max_decompressed_bytes", "batch_rows"):
        value = opts[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"inlong option {name} must be a positive integer, not {value!r}")
    if opts["max_message_bytes"] >= 1 << 31:
        raise ValueError("inlong option max_message_bytes must be below 2 GiB")
    return opts


def message_columns(message: msg.Message) -> tuple[tuple, dict[str, list]]:
    """The message's values in `MESSAGE_COLUMNS` order, and the other columns as lists
    with a value per item (event_time as epoch microseconds). Column lists, not row
    tuples: buffered rows then hold almost no objects the garbage collector must track."""
    shared = (
        message.version,
        message.create_time_ms,
        message.msg_count,
        message.msg_type,
        message.group_id_num,
        message.stream_id_num,
        message.ext_field,
        message.data_time,
        message.unique_id,
    )
    items = message.items
    known: dict[int, tuple] = {}  # per attribute map: event time, group id, stream id
    derived = []
    for item in items:
        attributes = item.attributes
        values = known.get(id(attributes))
        if values is None:
            values = known[id(attributes)] = (
                _event_time_us(attributes),
                attributes.get("groupId", attributes.get("bid")),
                attributes.get("streamId", attributes.get("tid")),
            )
        derived.append(values)
    times, group_ids, stream_ids = zip(*derived, strict=True) if derived else ((), (), ())
    return shared, {
        "event_time": list(times),
        "group_id": list(group_ids),
        "stream_id": list(stream_ids),
        "block_index": [item.block for item in items],
        "block_item_count": [item.block_item_count for item in items],
        "item_index": [item.index for item in items],
        "compressed": [item.compressed for item in items],
        "attr": [item.attr for item in items],
        "attributes": [item.attributes for item in items],
        "private_attr": [item.private_attr for item in items],
        "private_attributes": [item.private_attributes for item in items],
        "body": [item.body for item in items],
    }


def _event_time_us(attributes: dict[str, str]) -> int | None:
    ms = event_time_ms(attributes)
    if ms is None or not EVENT_TIME_MIN_MS <= ms <= EVENT_TIME_MAX_MS:
        return None
    return ms * 1000


def decode_value(value: bytes, given: Mapping[str, object]) -> list[dict]:
    """One Kafka record value (one InLongMsg) as row dicts without source_file and
    byte_offset (`registry.PayloadCodec`); event_time as a UTC datetime. Raises
    DecodeError, with offsets inside the value."""
    limit = given.get("max_decompressed_bytes", OPTIONS["max_decompressed_bytes"])
    shared, columns = message_columns(msg.parse(value, limit))
    head = dict(zip(MESSAGE_COLUMNS, shared, strict=True))
    rows = []
    for values in zip(*columns.values(), strict=True):
        row = {**head, **dict(zip(columns, values, strict=True))}
        if row["event_time"] is not None:
            row["event_time"] = _EPOCH + dt.timedelta(microseconds=row["event_time"])
        rows.append({name: row[name] for name in VALUE_COLUMNS})
    return rows


def decode(
    stream: BinaryIO, source: str, accounting: FileAccounting, options: Mapping[str, object]
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Walk one landed file in its framing; yield row batches and quarantined messages in
    file order and fill `accounting` (damage policy: module docstring)."""
    opts = _options(options)
    window = StreamWindow(stream)
    rows = _RowBuffer(source, opts["batch_rows"])
    walk = _walk_prefixed if opts["framing"] == "length_prefixed" else _walk_whole
    try:
        for item in walk(window, source, accounting, opts, rows):
            if isinstance(item, Quarantined):
                yield from rows.flush()
                yield item
            elif rows.full:
                yield from rows.flush()
        yield from rows.flush()
    finally:
        accounting.bytes_total += window.bytes_read


def _walk_whole(
    window: StreamWindow, source: str, accounting: FileAccounting, opts: Mapping, rows
) -> Iterator[Quarantined | None]:
    """`message` framing: the whole file is one message (an empty file holds none)."""
    limit = opts["max_message_bytes"]
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
    yield _frame(window, 0, size, source, accounting, opts, rows)


def _walk_prefixed(
    window: StreamWindow, source: str, accounting: FileAccounting, opts: Mapping, rows
) -> Iterator[Quarantined | None]:
    """`length_prefixed` framing: u32 length, message; repeat to the end of the file."""
    limit = opts["max_message_bytes"]
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
        yield _frame(window, PREFIX.size, total, source, accounting, opts, rows)


def _frame(
    window: StreamWindow,
    skip: int,
    total: int,
    source: str,
    accounting: FileAccounting,
    opts: Mapping,
    rows: _RowBuffer,
) -> Quarantined | None:
    """Decode the frame of `total` bytes at the window's position (its message starts
    `skip` bytes in) into `rows`; a bad message comes back quarantined."""
    start = window.offset
    frame = window.peek(total)
    window.consume(total)
    body = frame[skip:]
    try:
        message = msg.parse(body, opts["max_decompressed_bytes"])
    except DecodeError as err:
        accounting.bytes_quarantined += total
        accounting.frames_bad += 1
        accounting.records_bad += msg.declared_items(body)
        where = "" if err.offset is None else f" (message byte {err.offset})"
        return Quarantined(
            source,
            start,
            total,
            err.kind,
            f"{err.detail}{where}",
            bytes(frame[:HEAD_BYTES]),
        )
    accounting.bytes_decoded += total
    accounting.frames_good += 1
    accounting.records_good += rows.add(start, message)
    return None


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

    def add(self, byte_offset: int, message: msg.Message) -> int:
        """Buffer the message's items; returns how many."""
        count = len(message.items)
        if not count:
            return 0
        shared, per_item = message_columns(message)
        columns = self.columns
        columns["byte_offset"].extend([byte_offset] * count)
        for name, value in zip(MESSAGE_COLUMNS, shared, strict=True):
            columns[name].extend([value] * count)
        for name, values in per_item.items():
            columns[name].extend(values)
        self.rows += count
        self.data_bytes += sum(map(len, per_item["body"]))
        return count

    @property
    def full(self) -> bool:
        return self.rows >= self.batch_rows or self.data_bytes >= FLUSH_BYTES

    def flush(self) -> Iterator[pa.RecordBatch]:
        """The buffered rows as record batches of at most `batch_rows` rows."""
        if not self.rows:
            return
        columns, rows = self.columns, self.rows
        self._reset()
        arrays = [pa.repeat(pa.scalar(self.source, pa.string()), rows)]
        arrays += [pa.array(columns[field.name], field.type) for field in list(INLONG_SCHEMA)[1:]]
        batch = pa.RecordBatch.from_arrays(arrays, schema=INLONG_SCHEMA)
        yield from in_batches(batch, self.batch_rows)

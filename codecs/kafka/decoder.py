"""Decoder for Kafka log segments and fetch record sets: v0, v1 and v2 entries in one walk.

The walk reads each entry's 17-byte prefix (offset, size, CRC or epoch, magic), takes the
whole entry (`12 + size` bytes) and hands it to the reader for its magic: `_read_legacy`
(v0/v1 messages and compressed wrappers) or `_read_v2` (record batches). Byte layouts,
offset and timestamp rules: the Kafka byte-level spec (section numbers below refer to it).

Damage is handled as Kafka's own tools see it: a CRC mismatch still yields the records
(`crc_valid` false, the DumpLogSegments view); a complete entry whose records cannot be
decoded becomes one `Quarantined` item and the walk goes on; an entry cut by the end of
the file is a truncated tail; a size the walk cannot trust (below the 14-byte minimum, or
above `max_frame_bytes`) quarantines the rest of the file, which is drained, not buffered.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from itertools import chain, groupby
from typing import BinaryIO, NamedTuple

import numpy as np
import pyarrow as pa

from wirecodecs.accounting import HEAD_BYTES, FileAccounting, Quarantined
from wirecodecs.binary import (
    INT8,
    INT16,
    INT32,
    Cursor,
    read_varint,
    read_varlong,
    wrap_int64,
)
from wirecodecs.checksums import crc32_matches, crc32c_matches
from wirecodecs.compression import decompress
from wirecodecs.errors import DecodeError
from wirecodecs.kafka.schema import HEADER_TYPE, KAFKA_SCHEMA
from wirecodecs.rows import (
    EVENT_TIME_MAX_MS,
    EVENT_TIME_MIN_MS,
    EVENT_TIME_TYPE,
    FLUSH_BYTES,
    in_batches,
)
from wirecodecs.stream import StreamWindow, quarantine_rest, truncated_tail

FORMAT = "kafka"

OPTIONS: dict[str, int] = {
    "max_frame_bytes": 128 << 20,  # a larger size field is not trusted: rest of file quarantined
    "max_decompressed_bytes": 128 << 20,  # per batch / wrapper: a bigger output is a bomb
    "batch_rows": 65536,  # rows per yielded Arrow record batch (at most)
}

# ---- the shared prefix (§1) --------------------------------------------------------------

LOG_OVERHEAD = 12  # offset int64 + size int32: an entry occupies 12 + size bytes
_PREFIX = struct.Struct(
    ">q"  # offset (v0/v1) | baseOffset (v2)
    "i"  # messageSize | batchLength: bytes after this field
    "i"  # crc (v0/v1) | partitionLeaderEpoch (v2): read magic first
    "b"  # magic
)
_SIZE_AT = struct.calcsize(">q")
_MAGIC_AT = struct.calcsize(">qii")
MIN_ENTRY_SIZE = 14  # Java's RECORD_OVERHEAD_V0: a smaller size cannot be walked past

# ---- v2 record batch header (§4.1) ----------------------------------------------------------

_V2_HEADER = struct.Struct(
    ">q"  # baseOffset
    "i"  # batchLength
    "i"  # partitionLeaderEpoch (not covered by the CRC)
    "b"  # magic = 2
    "I"  # crc: CRC-32C of attributes .. end of batch
    "h"  # attributes: codec bits 0-2, timestampType 3, transactional 4, control 5, horizon 6
    "i"  # lastOffsetDelta
    "q"  # baseTimestamp: first timestamp, or the delete horizon (attribute bit 6)
    "q"  # maxTimestamp: the append time under LogAppendTime
    "q"  # producerId
    "h"  # producerEpoch
    "i"  # baseSequence
    "i"  # recordsCount
)
_V2_CRC_FROM = struct.calcsize(">qiibI")  # the CRC covers attributes onwards
_MIN_V2_RECORD = 7  # length, attributes, 2 deltas, 2 lengths, header count: 1+ byte each

# ---- v0/v1 message (§2.1): the entry prefix, then these fields --------------------------------

_LEGACY_V0 = struct.Struct(
    ">q"  # offset (a wrapper's: the offset of its last inner message)
    "i"  # messageSize
    "I"  # crc: CRC-32 of magic .. end of value
    "b"  # magic = 0
    "b"  # attributes: codec bits 0-2
    "i"  # keyLength (negative = null)
)
_LEGACY_V1 = struct.Struct(">qiIbb" + "q" + "i")  # as v0, with timestamp int64 before the key
_LEGACY_CRC_FROM = struct.calcsize(">qiI")  # the CRC covers magic onwards

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")  # attribute codec id -> column value
CODEC_MASK = 0x07  # attribute bits 0-2, v0/v1 and v2
_LEGACY_BAD_ATTRIBUTES = 0xF4  # v0/v1: bits 4-7 are 0 and codec 4 (zstd) is illegal (§2.1)
_DECOMPRESS_AS = {1: "gzip", 2: "snappy_xerial", 3: "lz4", 4: "zstd"}
_TIMESTAMP_TYPES = ("create_time", "log_append_time")
CONTROL_TYPES = (  # control record key type id -> control_type (§4.5); others: "unknown"
    "abort",
    "commit",
    "leader_change",
    "snapshot_header",
    "snapshot_footer",
    "kraft_version",
    "kraft_voters",
)
_END_TXN_TYPES = (0, 1)  # ABORT and COMMIT carry an EndTransactionMarker value

_PARTITION_DIR = re.compile(r"([A-Za-z0-9._-]+)-(0|[1-9][0-9]{0,9})")


def _compiled_columns() -> Callable | None:
    """The per-flush buffers of the numba-compiled v2 record walk (`fastpath.Columns`),
    unless numba is missing or the environment sets WIRELAKE_PURE_PYTHON; None means every
    batch takes `_v2_records`."""
    if os.environ.get("WIRELAKE_PURE_PYTHON"):
        return None
    try:
        from wirecodecs.kafka.fastpath import Columns
    except ImportError:
        return None
    return Columns


COMPILED_COLUMNS = _compiled_columns()  # chosen once, at import (tests set it to run both paths)


def decode(
    stream: BinaryIO, source: str, accounting: FileAccounting, options: Mapping[str, object]
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Walk a Kafka segment or record set; yield row batches and quarantined entries in
    file order and fill `accounting` (see the module docstring for the damage policy)."""
    opts = _options(options)
    window = StreamWindow(stream)
    rows = _RowBuffer(source, *topic_partition(source), opts["batch_rows"])
    last_offset = None  # of the last good entry: a plausible tail starts after it
    try:
        while True:
            available = window.fill(_PREFIX.size)
            if available == 0:
                break
            start = window.offset
            if available < _PREFIX.size:  # FileLogInputStream stops here, no exception
                yield from _tail(window, source, accounting, last_offset, rows)
                break
            (size,) = INT32.unpack_from(window.peek(_PREFIX.size), _SIZE_AT)
            if size < MIN_ENTRY_SIZE or size > opts["max_frame_bytes"]:
                yield from rows.flush()
                yield _quarantine_rest(window, source, accounting, size, opts)
                break
            total = LOG_OVERHEAD + size
            if window.fill(total) < total:  # active segment, fetch cut at max_bytes
                yield from _tail(window, source, accounting, last_offset, rows)
                break
            entry = window.peek(total)
            window.consume(total)
            try:
                run = _read_entry(entry, start, opts, rows.compiled)
            except DecodeError as err:
                yield from rows.flush()
                yield _quarantine_entry(entry, start, source, accounting, err)
                continue
            last_offset = _last_offset(entry)
            accounting.bytes_decoded += total
            accounting.frames_good += 1
            accounting.records_good += run.rows
            rows.add(run)
            if rows.full:
                yield from rows.flush()
        yield from rows.flush()
    finally:
        accounting.bytes_total += window.bytes_read


def topic_partition(source: str) -> tuple[str | None, int | None]:
    """Topic and partition from a `<topic>-<partition>/` parent folder of `source`."""
    parts = source.replace("\\", "/").rstrip("/").split("/")
    match = _PARTITION_DIR.fullmatch(parts[-2]) if len(parts) > 1 else None
    if match is None or int(match[2]) > 0x7FFF_FFFF:
        return None, None
    return match[1], int(match[2])


def _options(given: Mapping[str, object]) -> dict[str, int]:
    """Defaults overlaid with `given` (names were checked by `registry.resolve_options`)."""
    opts = {**OPTIONS, **given}
    for name, value in opts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"kafka option {name} must be a positive integer, not {value!r}")
    if opts["max_decompressed_bytes"] >= 1 << 31:
        raise ValueError("kafka option max_decompressed_bytes must be below 2 GiB")
    return opts


# ---- walk outcomes that are not rows -----------------------------------------------------------


def _quarantine_rest(
    window: StreamWindow, source: str, accounting: FileAccounting, size: int, opts: Mapping
) -> Quarantined:
    """A size field that cannot be walked past: nothing after it can be framed."""
    if size < MIN_ENTRY_SIZE:
        kind = "record_size_too_small"
        detail = f"entry size {size} is below the minimum record overhead ({MIN_ENTRY_SIZE})"
    else:
        kind = "length_out_of_range"
        detail = f"entry size {size} exceeds max_frame_bytes ({opts['max_frame_bytes']})"
    return quarantine_rest(window, source, accounting, kind, f"{detail}; rest of file not walked")


def _tail(
    window: StreamWindow,
    source: str,
    accounting: FileAccounting,
    last_offset: int | None,
    rows: _RowBuffer,
) -> Iterator[pa.RecordBatch | Quarantined]:
    """An entry cut by the end of the file: a truncated tail if what is left of its header
    could start the next entry, else corruption (random bytes over a segment often read as
    a length that runs past the end; calling them a tail would hide them)."""
    problem = _implausible_header(window.peek(_V2_HEADER.size), last_offset)
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
    if len(head) >= _SIZE_AT:
        (offset,) = struct.unpack_from(">q", head)
        if last_offset is not None and offset <= last_offset:
            return f"offset {offset} does not follow the previous entry's last offset {last_offset}"
    if len(head) <= _MAGIC_AT:
        return None
    magic = _magic(head)
    if magic not in (0, 1, 2):
        return f"magic byte {magic} is not 0, 1 or 2"
    if magic in (0, 1):
        if len(head) > _MAGIC_AT + 1 and head[_MAGIC_AT + 1] & _LEGACY_BAD_ATTRIBUTES:
            return f"message attributes 0x{head[_MAGIC_AT + 1]:02x} use an undefined codec or bit"
        return None
    if len(head) < _V2_HEADER.size:
        return None
    _, size, _, _, _, attributes, last_delta, *_, records = _V2_HEADER.unpack_from(head)
    if attributes & CODEC_MASK >= len(CODECS):
        return f"batch attributes 0x{attributes:04x} name codec {attributes & CODEC_MASK}"
    if last_delta < 0 or not 0 <= records <= last_delta + 1:
        return f"{records} records with last offset delta {last_delta}"
    if records * _MIN_V2_RECORD > LOG_OVERHEAD + size - _V2_HEADER.size:
        return f"{records} records cannot fit in a {size}-byte batch"
    return None


def _last_offset(entry: memoryview) -> int:
    """The offset of the last record of a log entry (a v0/v1 wrapper's own offset is its
    last inner message's; a v2 batch's is baseOffset + lastOffsetDelta)."""
    base = _PREFIX.unpack_from(entry)[0]
    if _magic(entry) == 2 and len(entry) >= _V2_HEADER.size:
        return base + _V2_HEADER.unpack_from(entry)[6]
    return base


def _quarantine_entry(
    entry: memoryview, start: int, source: str, accounting: FileAccounting, err: DecodeError
) -> Quarantined:
    accounting.bytes_quarantined += len(entry)
    accounting.frames_bad += 1
    accounting.records_bad += _declared_records(entry)
    return Quarantined(
        source,
        start,
        len(entry),
        err.kind,
        f"magic {_magic(entry)}: {err.detail}",
        bytes(entry[:HEAD_BYTES]),
    )


def _magic(entry) -> int:
    return INT8.unpack_from(entry, _MAGIC_AT)[0]


def _declared_records(entry: memoryview) -> int:
    """Records known lost with a bad entry: a v2 batch's count, 1 for a plain v0/v1 message,
    0 when unknown (a compressed wrapper, an unreadable header)."""
    magic = _magic(entry)
    if magic == 2 and len(entry) >= _V2_HEADER.size:
        return max(_V2_HEADER.unpack_from(entry)[-1], 0)
    if magic in (0, 1):
        return 1 if entry[_MAGIC_AT + 1] & CODEC_MASK == 0 else 0
    return 0


# ---- per-entry readers -------------------------------------------------------------------------


class _Run:
    """The rows of one log entry: values shared by all of them, then per-row lists (from
    the compiled walk: numpy offset/timestamp deltas, and `span`, its rows in the flush's
    `fastpath.Columns`, which hold the keys, values and headers).

    `shared` follows `_RUN_COLUMNS`. Row offsets are `offset_base + offset_delta` and row
    timestamps `ts_base + ts_delta` (`ts_delta` ignored unless `ts_use_delta`; no
    timestamps when `ts_base` is None), both with Java's 64-bit wrap. Sparse per-row values
    are `(row, ...)` tuples.
    """

    __slots__ = (
        "controls",
        "data_bytes",
        "headers",
        "keys",
        "offset_base",
        "offset_deltas",
        "record_crcs",
        "sequence_base",
        "shared",
        "span",
        "ts_base",
        "ts_deltas",
        "ts_use_delta",
        "values",
    )

    def __init__(self, shared: tuple, offset_base: int, ts_base: int | None, ts_use_delta: bool):
        self.shared = shared
        self.offset_base = offset_base
        self.ts_base = ts_base
        self.ts_use_delta = ts_use_delta
        self.sequence_base: int | None = None
        self.span: tuple[int, int] | None = None  # rows of the compiled walk's columns
        self.offset_deltas: list[int] | np.ndarray = []
        self.ts_deltas: list[int] | np.ndarray = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[tuple[int, list[tuple[str, bytes | None]]]] = []
        self.record_crcs: list[tuple[int, bool]] = []
        self.controls: list[tuple[int, str, int | None]] = []
        self.data_bytes = 0

    @property
    def rows(self) -> int:
        return len(self.offset_deltas)


_RUN_COLUMNS = (
    "byte_offset",
    "crc_valid",
    "magic",
    "compression",
    "timestamp_type",
    "batch_base_offset",
    "batch_last_offset",
    "partition_leader_epoch",
    "producer_id",
    "producer_epoch",
    "is_transactional",
    "is_control",
    "delete_horizon_ms",
)


def _shared(
    byte_offset: int,
    crc_valid: bool,
    magic: int,
    codec: int,
    timestamp_type: str | None,
    base_offset: int,
    last_offset: int,
    *,
    leader_epoch: int | None = None,
    producer_id: int | None = None,
    producer_epoch: int | None = None,
    transactional: bool = False,
    control: bool = False,
    delete_horizon: int | None = None,
) -> tuple:
    """A run's shared values in `_RUN_COLUMNS` order (the keywords exist in v2 only)."""
    return (
        byte_offset,
        crc_valid,
        magic,
        CODECS[codec],
        timestamp_type,
        base_offset,
        last_offset,
        leader_epoch,
        producer_id,
        producer_epoch,
        transactional,
        control,
        delete_horizon,
    )


def _read_entry(entry: memoryview, start: int, opts: Mapping, compiled) -> _Run:
    """The version facade: dispatch one complete log entry on its magic byte (`compiled`:
    the flush's `fastpath.Columns`, or None for the pure walk)."""
    magic = _magic(entry)
    try:
        if magic == 2:
            return _read_v2(entry, start, opts, compiled)
        if magic in (0, 1):
            return _read_legacy(entry, start, opts)
    except (IndexError, ValueError, struct.error) as err:
        raise DecodeError(FORMAT, "invalid_record", str(err), offset=start) from None
    raise DecodeError(FORMAT, "unknown_magic", f"magic byte {magic} is not 0, 1 or 2", offset=start)


def _read_v2(entry: memoryview, start: int, opts: Mapping, compiled) -> _Run:
    """A v2 record batch (§4): header, optional decompression, then exactly recordsCount
    records that fill the records section."""
    if len(entry) < _V2_HEADER.size:
        raise DecodeError(
            FORMAT,
            "record_size_too_small",
            f"v2 batch of {len(entry)} bytes is shorter than its {_V2_HEADER.size}-byte header",
        )
    (
        base_offset,
        _,
        leader_epoch,
        _,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _V2_HEADER.unpack_from(entry)
    codec = attributes & CODEC_MASK
    if codec >= len(CODECS):
        raise DecodeError(FORMAT, "unknown_codec", f"compression codec id {codec}")
    if count < 0:
        raise DecodeError(FORMAT, "record_count_mismatch", f"negative recordsCount {count}")
    log_append = bool(attributes & 0x08)
    is_control = bool(attributes & 0x20)
    shared = _shared(
        start,
        crc32c_matches(entry[_V2_CRC_FROM:], crc),
        2,
        codec,
        _TIMESTAMP_TYPES[log_append],
        base_offset,
        wrap_int64(base_offset + last_offset_delta),
        leader_epoch=leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=bool(attributes & 0x10),
        control=is_control,
        delete_horizon=base_timestamp if attributes & 0x40 else None,
    )
    if log_append:  # every record takes the batch's append time
        run = _Run(shared, base_offset, max_timestamp, False)
    else:
        run = _Run(shared, base_offset, base_timestamp, True)
    run.sequence_base = None if base_sequence == -1 else base_sequence

    section = entry[_V2_HEADER.size :]
    if codec:
        data = decompress(
            _DECOMPRESS_AS[codec], section, opts["max_decompressed_bytes"], fmt=FORMAT
        )
    else:
        data = section
    if count > len(data) // _MIN_V2_RECORD:
        raise DecodeError(
            FORMAT, "record_count_mismatch", f"{count} records cannot fit in {len(data)} bytes"
        )
    if not _fast_records(data, count, run, is_control, compiled):
        data = bytes(data)  # the pure walk keeps slices: not views of the stream window
        try:
            end = _v2_records(data, count, run)
        except IndexError:
            raise DecodeError(
                FORMAT,
                "truncated",
                f"records run past the end of the {len(data)}-byte records section "
                f"after {run.rows} of {count} records",
            ) from None
        if end != len(data):
            raise DecodeError(
                FORMAT,
                "record_count_mismatch",
                f"{len(data) - end} bytes left after the {count} declared records",
            )
    run.data_bytes = len(data)
    if is_control:
        _control_fields(run)
    return run


def _fast_records(data, count: int, run: _Run, is_control: bool, compiled) -> bool:
    """Append the records to `compiled` when it is on and the section is `count` clean
    records; False leaves `run` untouched for the pure walk, which then says what is wrong.
    Control batches keep the pure walk: `_control_fields` reads their keys as bytes."""
    if compiled is None or is_control:
        return False
    records = compiled.walk(data, count)
    if records is None:
        return False
    start, stop, run.offset_deltas, run.ts_deltas = records
    run.span = start, stop
    return True


def _v2_records(data: bytes, count: int, run: _Run) -> int:
    """Walk `count` records (§4.3) from the start of `data`; return the end position.

    The pure-Python twin of the compiled walk (fastpath.py), which takes data batches when
    numba is there; this one serves control batches, error reports and numba-less hosts.
    Raises IndexError when a record runs past `data`; each record's declared length is
    checked against the bytes its fields took.
    """
    pos = 0
    for index in range(count):
        length, pos = read_varint(FORMAT, data, pos, "record length")
        end = pos + length
        pos += 1  # attributes: unused
        ts_delta, pos = read_varlong(FORMAT, data, pos, "timestampDelta")
        offset_delta, pos = read_varint(FORMAT, data, pos, "offsetDelta")
        run.ts_deltas.append(ts_delta)
        run.offset_deltas.append(offset_delta)
        for column, what in ((run.keys, "keyLength"), (run.values, "valueLength")):
            size, pos = read_varint(FORMAT, data, pos, what)
            if size < 0:  # any negative length is null (Java)
                column.append(None)
            else:
                column.append(data[pos : pos + size])
                pos += size
        if data[pos]:  # headersCount
            pos = _v2_headers(data, pos, index, run.headers)
        else:
            pos += 1
        if pos != end:
            raise DecodeError(
                FORMAT,
                "record_size_mismatch",
                f"record {index} declares {end} as its end but its fields end at {pos}",
            )
    return pos


def _v2_headers(data: bytes, pos: int, row: int, out: list) -> int:
    """A record's headers (§4.3): keys are UTF-8 and never null (Java decodes them with
    replacement characters), values may be null; wire order and duplicates are kept."""
    count, pos = read_varint(FORMAT, data, pos, "headersCount")
    if count < 0:
        raise DecodeError(FORMAT, "invalid_record", f"record {row}: {count} headers")
    headers = []
    for _ in range(count):
        size, pos = read_varint(FORMAT, data, pos, "header key length")
        if size < 0:
            raise DecodeError(FORMAT, "invalid_record", f"record {row}: header key size {size}")
        key = data[pos : pos + size].decode("utf-8", "replace")
        pos += size
        size, pos = read_varint(FORMAT, data, pos, "header value length")
        if size < 0:
            headers.append((key, None))
        else:
            headers.append((key, data[pos : pos + size]))
            pos += size
    out.append((row, headers))
    return pos


def _control_fields(run: _Run) -> None:
    """Control record key (version, type) and, for ABORT/COMMIT, the coordinator epoch
    (§4.5). Java rejects a short key or value and a negative version; it reads higher
    versions as version 0 and ignores trailing bytes."""
    for row, (key, value) in enumerate(zip(run.keys, run.values, strict=True)):
        if key is None or len(key) < 4 or INT16.unpack_from(key)[0] < 0:
            raise DecodeError(FORMAT, "invalid_control_record", f"record {row}: key {key!r}")
        (type_id,) = INT16.unpack_from(key, 2)
        epoch = None
        if type_id in _END_TXN_TYPES:
            if value is None or len(value) < 6 or INT16.unpack_from(value)[0] < 0:
                raise DecodeError(
                    FORMAT, "invalid_control_record", f"record {row}: marker value {value!r}"
                )
            (epoch,) = INT32.unpack_from(value, 2)
        name = CONTROL_TYPES[type_id] if 0 <= type_id < len(CONTROL_TYPES) else "unknown"
        run.controls.append((row, name, epoch))


class _Message(NamedTuple):
    offset: int
    crc_valid: bool
    magic: int
    attributes: int
    timestamp: int | None  # None for magic 0
    key: bytes | None
    value: bytes | None


def _legacy_message(cursor: Cursor) -> _Message:
    """One v0/v1 entry at the cursor. Any negative key/value length is null (Java); the
    message must end exactly where its size says."""
    start = cursor.pos
    (magic,) = cursor.unpack(_PREFIX, "message header")[3:]
    cursor.pos = start
    if magic not in (0, 1):
        raise DecodeError(FORMAT, "unknown_magic", f"inner message magic {magic}")
    header = _LEGACY_V1 if magic else _LEGACY_V0
    if magic:
        offset, size, crc, _, attributes, timestamp, key_size = cursor.unpack(header, "message")
    else:
        offset, size, crc, _, attributes, key_size = cursor.unpack(header, "message")
        timestamp = None
    end = start + LOG_OVERHEAD + size
    if end < cursor.pos:
        raise DecodeError(
            FORMAT, "record_size_too_small", f"v{magic} message size {size} is too small"
        )
    key = cursor.sized_bytes(key_size, "key")
    (value_size,) = cursor.unpack(INT32, "value length")
    value = cursor.sized_bytes(value_size, "value")
    if cursor.pos != end:
        raise DecodeError(
            FORMAT,
            "record_size_mismatch",
            f"message size says {size} bytes, its fields take {cursor.pos - start - LOG_OVERHEAD}",
        )
    crc_valid = crc32_matches(cursor.buf[start + _LEGACY_CRC_FROM : end], crc)
    return _Message(
        offset,
        crc_valid,
        magic,
        attributes,
        timestamp,
        None if key is None else bytes(key),
        None if value is None else bytes(value),
    )


def _read_legacy(entry: memoryview, start: int, opts: Mapping) -> _Run:
    """A v0/v1 message, or a compressed wrapper whose value is an inner message set (§2)."""
    outer = _legacy_message(Cursor(FORMAT, entry, base=start))
    magic = outer.magic
    codec = outer.attributes & CODEC_MASK
    if codec >= 4:
        raise DecodeError(FORMAT, "unknown_codec", f"codec id {codec} is invalid for v{magic}")
    log_append = magic == 1 and bool(outer.attributes & 0x08)
    shared = _shared(
        start,
        outer.crc_valid,
        magic,
        codec,
        _TIMESTAMP_TYPES[log_append] if magic else None,
        outer.offset,
        outer.offset,
    )
    if codec == 0:
        run = _Run(shared, outer.offset, outer.timestamp, False)
        run.offset_deltas.append(0)
        run.ts_deltas.append(0)
        run.keys.append(outer.key)
        run.values.append(outer.value)
        run.data_bytes = len(entry)
        return run
    if outer.value is None:
        raise DecodeError(FORMAT, "invalid_record", "compressed wrapper with a null value")
    data = decompress(
        _DECOMPRESS_AS[codec],
        outer.value,
        opts["max_decompressed_bytes"],
        fmt=FORMAT,
        legacy_lz4=magic == 0,
    )
    inner = Cursor(FORMAT, data)
    messages = []
    while inner.remaining:
        message = _legacy_message(inner)
        if message.magic != magic:  # Java's deep iterator with ensureMatchingMagic
            raise DecodeError(
                FORMAT, "invalid_record", f"inner magic {message.magic} in a v{magic} wrapper"
            )
        if message.attributes & CODEC_MASK:
            raise DecodeError(FORMAT, "invalid_record", "inner messages must not be compressed")
        messages.append(message)
    if not messages:
        raise DecodeError(FORMAT, "invalid_record", "compressed wrapper with no inner messages")
    base = 0  # v0: inner offsets are absolute
    if magic == 1 and outer.offset != 0:  # v1: relative; wrapper offset 0 means base 0
        last_inner = messages[-1].offset
        if outer.offset < last_inner:
            raise DecodeError(
                FORMAT,
                "invalid_record",
                f"wrapper offset {outer.offset} is below the last inner offset {last_inner}",
            )
        base = wrap_int64(outer.offset - last_inner)
    if magic == 0:
        run = _Run(shared, base, None, False)
    elif log_append:  # inner messages take the wrapper's append time
        run = _Run(shared, base, outer.timestamp, False)
    else:
        run = _Run(shared, base, 0, True)
    for row, message in enumerate(messages):
        run.offset_deltas.append(message.offset)
        run.ts_deltas.append(message.timestamp or 0)
        run.keys.append(message.key)
        run.values.append(message.value)
        run.record_crcs.append((row, message.crc_valid))
    run.data_bytes = len(data)
    return run


# ---- rows -> Arrow ----------------------------------------------------------------------------


class _RowBuffer:
    """Runs decoded since the last flush, turned into Arrow columns in one go.

    Per-row work in Python stays in the readers; here the shared values of each run are
    built once per run and spread over its rows with `take`, and offsets, timestamps and
    sequences are computed with numpy (whose int64/int32 arithmetic wraps like Java's).
    """

    def __init__(
        self, source: str, topic: str | None, partition: int | None, batch_rows: int
    ) -> None:
        self.source = source
        self.topic = topic
        self.partition = partition
        self.batch_rows = batch_rows
        self._reset()

    def _reset(self) -> None:
        # new buffers per flush: the batches already yielded share the last ones
        self.compiled = COMPILED_COLUMNS() if COMPILED_COLUMNS else None
        self.runs: list[_Run] = []
        self.rows = 0
        self.data_bytes = 0

    def add(self, run: _Run) -> None:
        if run.rows:
            self.runs.append(run)
            self.rows += run.rows
            self.data_bytes += run.data_bytes

    @property
    def full(self) -> bool:
        return self.rows >= self.batch_rows or self.data_bytes >= FLUSH_BYTES

    def flush(self) -> Iterator[pa.RecordBatch]:
        """The buffered rows as record batches of at most `batch_rows` rows."""
        if not self.rows:
            return
        batch = self._build()
        self._reset()
        yield from in_batches(batch, self.batch_rows)

    def _build(self) -> pa.RecordBatch:
        runs = self.runs
        n = self.rows
        counts = np.fromiter((run.rows for run in runs), np.int64, len(runs))
        row_run = np.repeat(np.arange(len(runs)), counts)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        shared = pa.RecordBatch.from_arrays(
            [
                pa.array(column, KAFKA_SCHEMA.field(name).type)
                for name, column in zip(
                    _RUN_COLUMNS, zip(*(run.shared for run in runs), strict=True), strict=True
                )
            ],
            names=list(_RUN_COLUMNS),
        ).take(pa.array(row_run))

        def per_row(values, dtype) -> np.ndarray:
            return np.repeat(np.array(values, dtype), counts)

        def parts(attribute: str) -> list:
            return [getattr(run, attribute) for run in runs]

        offset_deltas = _int64s(parts("offset_deltas"), n)
        offsets = per_row([run.offset_base for run in runs], np.int64) + offset_deltas
        timestamps = per_row([run.ts_base or 0 for run in runs], np.int64) + _int64s(
            parts("ts_deltas"), n
        ) * per_row([run.ts_use_delta for run in runs], np.int64)
        no_timestamp = per_row([run.ts_base is None for run in runs], bool)
        sequences = _java_sequences(
            per_row([run.sequence_base or 0 for run in runs], np.int32),
            offset_deltas.astype(np.int32),
        )
        no_sequence = per_row([run.sequence_base is None for run in runs], bool)
        no_event_time = (
            no_timestamp
            | (timestamps == -1)
            | (timestamps > EVENT_TIME_MAX_MS)
            | (timestamps < EVENT_TIME_MIN_MS)
        )

        def sparse(attribute: str) -> tuple[np.ndarray, list]:
            rows, values = [], []
            for run, start in zip(runs, starts.tolist(), strict=True):
                for row, *value in getattr(run, attribute):
                    rows.append(start + row)
                    values.append(value)
            return np.array(rows, np.int64), values

        crc_rows, crc_values = sparse("record_crcs")
        compiled = self.compiled.arrays() if any(run.span for run in runs) else (None, None, None)
        control_rows, controls = sparse("controls")

        columns = {
            "source_file": pa.repeat(pa.scalar(self.source, pa.string()), n),
            "event_time": pa.array(
                np.where(no_event_time, 0, timestamps) * 1000,
                EVENT_TIME_TYPE,
                mask=no_event_time,
            ),
            "topic": pa.repeat(pa.scalar(self.topic, pa.string()), n),
            "partition": pa.repeat(pa.scalar(self.partition, pa.int32()), n),
            "offset": pa.array(offsets, pa.int64()),
            "sequence": pa.array(sequences, pa.int32(), mask=no_sequence),
            "timestamp_ms": pa.array(timestamps, pa.int64(), mask=no_timestamp),
            "record_crc_valid": _scatter(n, crc_rows, [v[0] for v in crc_values], pa.bool_()),
            "key": _by_walk(runs, compiled[0], partial(_binary_column, "keys")),
            "value": _by_walk(runs, compiled[1], partial(_binary_column, "values")),
            "headers": _by_walk(runs, compiled[2], _headers_column),
            "control_type": _scatter(n, control_rows, [v[0] for v in controls], pa.string()),
            "coordinator_epoch": _scatter(n, control_rows, [v[1] for v in controls], pa.int32()),
        }
        for name in _RUN_COLUMNS:
            columns[name] = shared.column(name)
        return pa.RecordBatch.from_arrays(
            [columns[field.name] for field in KAFKA_SCHEMA], schema=KAFKA_SCHEMA
        )


def _int64s(parts: list, n: int) -> np.ndarray:
    """One int64 array from the runs' per-row lists (pure walk) or arrays (compiled walk)."""
    if all(isinstance(part, list) for part in parts):
        return np.fromiter(chain.from_iterable(parts), np.int64, n)
    return np.concatenate([np.asarray(part, np.int64) for part in parts])


def _by_walk(
    runs: list[_Run], compiled: pa.Array | None, from_lists: Callable[[list[_Run]], pa.Array]
) -> pa.Array:
    """One column from the runs: each stretch of runs from the compiled walk is a slice of
    its `compiled` column (their rows are consecutive there), each stretch of runs holding
    Python lists is built by `from_lists` in one go."""
    chunks: list[pa.Array] = []
    for fast, stretch in groupby(runs, lambda run: run.span is not None):
        group = list(stretch)
        if fast:
            start = group[0].span[0]
            chunks.append(compiled.slice(start, group[-1].span[1] - start))
        else:
            chunks.append(from_lists(group))
    return chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)


def _binary_column(attribute: str, runs: list[_Run]) -> pa.Array:
    # an iterator, not a list: pyarrow converts a list of bytes ~6x slower
    return pa.array(chain.from_iterable(getattr(run, attribute) for run in runs), pa.binary())


def _java_sequences(base: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """`DefaultRecordBatch.incrementSequence` on int32 arrays: wraps to 0 past INT32_MAX."""
    int32_max = np.int32(0x7FFF_FFFF)
    wraps = base > int32_max - delta
    return np.where(wraps, delta - (int32_max - base) - np.int32(1), base + delta)


def _scatter(n: int, rows: np.ndarray, values: list, type_: pa.DataType) -> pa.Array:
    """A column that is null except at `rows`."""
    dense: list = [None] * n
    for row, value in zip(rows.tolist(), values, strict=True):
        dense[row] = value
    return pa.array(dense, type_)


def _headers_column(runs: list[_Run]) -> pa.Array:
    """The list<struct<key, value>> column of runs holding sparse `(row, pairs)` lists:
    empty lists except where a record has headers."""
    counts = np.zeros(sum(run.rows for run in runs), np.int32)
    headers = []
    start = 0
    for run in runs:
        for row, pairs in run.headers:
            counts[start + row] = len(pairs)
            headers.append(pairs)
        start += run.rows
    offsets = np.concatenate(([0], np.cumsum(counts, dtype=np.int32)))
    fields = list(HEADER_TYPE.value_type)
    size = int(offsets[-1])
    pairs = pa.StructArray.from_arrays(
        [
            pa.array((key for pairs in headers for key, _ in pairs), fields[0].type, size=size),
            pa.array((value for pairs in headers for _, value in pairs), fields[1].type, size=size),
        ],
        fields=fields,
    )
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pairs, type=HEADER_TYPE)

"""Reader of a v2 record batch (magic 2): the header, the optional decompression of the
records section, then exactly recordsCount records (docs/kafka.md §2.5-§2.8).

Data batches go through the numba-compiled record walk (`compiled.py`) when the flush has
one (decoder.py decides: not before the process has read enough to repay numba's start),
else through `_walk_records`, its pure-Python twin; control batches always take the pure
walk, whose keys and values `_control_fields` reads.
"""

from __future__ import annotations

from wirecodecs.binary import INT16, INT32, read_varint, read_varlong, wrap_int64
from wirecodecs.checksums import crc32c_matches
from wirecodecs.compression import decompress
from wirecodecs.errors import DecodeError
from wirecodecs.kafka.columns import Control, EntryColumns, Run
from wirecodecs.kafka.entry import (
    CODEC_MASK,
    CODECS,
    DECOMPRESS_AS,
    FORMAT,
    LOG_APPEND_TIME_BIT,
    TIMESTAMP_TYPES,
    V2_CRC_FROM,
    V2_HEADER,
)
from wirecodecs.kafka.options import KafkaOptions

# batch attribute bits of v2 only (docs/kafka.md §2.6)
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40  # baseTimestamp holds the delete horizon

# length, attributes, 2 deltas, 2 lengths, header count: at least 1 byte each
MIN_RECORD_BYTES = 7

CONTROL_TYPES = (  # control record key type id -> control_type (docs/kafka.md §2.8)
    "abort",
    "commit",
    "leader_change",
    "snapshot_header",
    "snapshot_footer",
    "kraft_version",
    "kraft_voters",
)
UNKNOWN_CONTROL_TYPE = "unknown"  # any other type id
END_TXN_TYPES = (0, 1)  # ABORT and COMMIT carry an EndTransactionMarker value


def read_record_batch(entry: memoryview, start: int, opts: KafkaOptions, compiled) -> Run:
    """The v2 batch `entry` found at file offset `start`: header, optional decompression,
    then exactly recordsCount records that fill the records section (`compiled`: the
    flush's `compiled.Columns`, or None for the pure walk)."""
    if len(entry) < V2_HEADER.size:
        raise DecodeError(
            FORMAT,
            "record_size_too_small",
            f"v2 batch of {len(entry)} bytes is shorter than its {V2_HEADER.size}-byte header",
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
    ) = V2_HEADER.unpack_from(entry)
    codec = attributes & CODEC_MASK
    if codec >= len(CODECS):
        raise DecodeError(FORMAT, "unknown_codec", f"compression codec id {codec}")
    if count < 0:
        raise DecodeError(FORMAT, "record_count_mismatch", f"negative recordsCount {count}")
    log_append = bool(attributes & LOG_APPEND_TIME_BIT)
    is_control = bool(attributes & CONTROL_BIT)
    columns = EntryColumns(
        byte_offset=start,
        crc_valid=crc32c_matches(entry[V2_CRC_FROM:], crc),
        magic=2,
        compression=CODECS[codec],
        timestamp_type=TIMESTAMP_TYPES[log_append],
        batch_base_offset=base_offset,
        batch_last_offset=wrap_int64(base_offset + last_offset_delta),
        partition_leader_epoch=leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=bool(attributes & TRANSACTIONAL_BIT),
        is_control=is_control,
        delete_horizon_ms=base_timestamp if attributes & DELETE_HORIZON_BIT else None,
    )
    if log_append:  # every record takes the batch's append time
        run = Run(columns, base_offset, max_timestamp, False)
    else:
        run = Run(columns, base_offset, base_timestamp, True)
    run.sequence_base = None if base_sequence == -1 else base_sequence

    section = entry[V2_HEADER.size :]
    if codec:
        data = decompress(DECOMPRESS_AS[codec], section, opts.max_decompressed_bytes, fmt=FORMAT)
    else:
        data = section
    if count > len(data) // MIN_RECORD_BYTES:
        raise DecodeError(
            FORMAT, "record_count_mismatch", f"{count} records cannot fit in {len(data)} bytes"
        )
    if not _fast_records(data, count, run, is_control, compiled):
        data = bytes(data)  # the pure walk keeps slices: not views of the stream window
        run.start_lists()
        try:
            end = _walk_records(data, count, run)
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


def _fast_records(data, count: int, run: Run, is_control: bool, compiled) -> bool:
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


def _walk_records(data: bytes, count: int, run: Run) -> int:
    """Walk `count` records (docs/kafka.md §2.7) from the start of `data`; return the end
    position.

    The pure-Python twin of the compiled walk (compiled.py; docs/kafka.md §3.4): numba's
    first call in a process costs more, even from a warm cache, than this walk takes over
    a small segment, so a process walks its first `WALKS["kafka"].pure_below` bytes here
    (wirecodecs.compiled; figures in docs/performance.md); it also gives the exact
    DecodeError of a section the compiled walk rejects, reads control batches, and serves
    hosts without numba.
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
            pos = _headers(data, pos, index, run.headers)
        else:
            pos += 1
        if pos != end:
            raise DecodeError(
                FORMAT,
                "record_size_mismatch",
                f"record {index} declares {end} as its end but its fields end at {pos}",
            )
    return pos


def _headers(data: bytes, pos: int, row: int, out: list) -> int:
    """A record's headers (docs/kafka.md §2.7): keys are UTF-8 and never null (Java
    decodes them with replacement characters), values may be null; wire order and
    duplicates are kept."""
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


def _control_fields(run: Run) -> None:
    """Control record key (version, type) and, for ABORT/COMMIT, the coordinator epoch
    (docs/kafka.md §2.8). Java rejects a short key or value and a negative version; it
    reads higher versions as version 0 and ignores trailing bytes."""
    for row, (key, value) in enumerate(zip(run.keys, run.values, strict=True)):
        if key is None or len(key) < 4 or INT16.unpack_from(key)[0] < 0:
            raise DecodeError(FORMAT, "invalid_control_record", f"record {row}: key {key!r}")
        (type_id,) = INT16.unpack_from(key, 2)
        epoch = None
        if type_id in END_TXN_TYPES:
            if value is None or len(value) < 6 or INT16.unpack_from(value)[0] < 0:
                raise DecodeError(
                    FORMAT, "invalid_control_record", f"record {row}: marker value {value!r}"
                )
            (epoch,) = INT32.unpack_from(value, 2)
        known = 0 <= type_id < len(CONTROL_TYPES)
        run.controls.append(
            Control(row, CONTROL_TYPES[type_id] if known else UNKNOWN_CONTROL_TYPE, epoch)
        )

"""Decoder for cernan Avro source dumps: v1/v2 packets back to back (cernan.md §1-§5, §10).

The walk reads a u32 length (payload bytes, NOT counting its own 4: the wiki is wrong),
takes the whole frame and reads the 24-byte header, the v2 key/value section and the Avro
container (`avro.py`). Policy, as the golden sidecars encode it:

* packet-level all-or-nothing: a packet with any header, KV or Avro error yields no
  records; it becomes one `Quarantined` item and one packets row with stage/code/detail;
* strict sequential framing: a frame cut by the end of the file is a truncated tail (a
  packets row with `complete` false) and ends the walk; a length above `max_packet_bytes`
  is never buffered: the frame is skipped by its length (quarantined) or, if the file ends
  first, is the truncated tail;
* option `resync`: after such a framing error, scan forward for a plausible packet (§10.7:
  version 1|2, control 0|1, a length that fits, `Obj\\x01` where the layout puts it); the
  bytes passed over are `bytes_skipped`, and the packet found has `resynced` true (its
  frames and records count as good ones, like any other).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO

import pyarrow as pa

from wirecodecs.accounting import HEAD_BYTES, FileAccounting, Quarantined
from wirecodecs.cernan import avro
from wirecodecs.cernan.avro import PacketError
from wirecodecs.cernan.schema import (
    PACKETS_SCHEMA,
    arrow_type,
    datums_json,
    load_datum_schema,
    records_schema,
)
from wirecodecs.registry import TableRows
from wirecodecs.rows import (
    EPOCH,
    EVENT_TIME_MAX_MS,
    EVENT_TIME_MIN_MS,
    EVENT_TIME_TYPE,
    FLUSH_BYTES,
    in_batches,
)
from wirecodecs.stream import StreamWindow, truncated_tail

FORMAT = "cernan"
PACKETS = "packets"  # the companion table's name (WireFormat.tables)

OPTIONS: dict[str, object] = {
    "batch_rows": 65536,  # rows per yielded Arrow record batch (at most)
    # safety bound: a larger length is never buffered (cernan's own limit is 1 MiB; above
    # it packets decode with the warning exceeds_cernan_max_payload)
    "max_packet_bytes": 64 << 20,
    "max_decompressed_bytes": 64 << 20,  # per Avro block
    "resync": False,  # after a framing error, scan for the next plausible packet
    "datum_schema_file": "",  # .avsc of the expected datum: typed `record` column
    "event_time_field": "",  # datum field (dotted path) that gives event_time
    "event_time_unit": "ms",  # for a numeric event_time_field: s | ms | us | ns
}
CERNAN_MAX_PAYLOAD = 1 << 20  # cernan >= 0.9.0 closes the connection above this
_UNITS_US = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": 0.001}

_LENGTH = struct.Struct(">I")  # payload bytes after the prefix
_HEADER = struct.Struct(
    ">I"  # version: 1 or 2 (cernan reads < 2 as v1 and >= 2 as v2)
    "I"  # control: bit 0 SYNC, the rest reserved
    "Q"  # id: echoed in the ACK
    "Q"  # shard_by: cernan's order_by, the Kafka key
)
_PREFIX = _LENGTH.size
_U16 = struct.Struct(">H")
# Resync candidates: a length, then version 1|2 and control 0|1 (overlapping matches).
_CANDIDATE = re.compile(rb"(?=(?s:.{4})\x00\x00\x00[\x01\x02]\x00\x00\x00[\x00\x01])")
_SCAN_BYTES = 1 << 20


def decode(
    stream: BinaryIO, source: str, accounting: FileAccounting, options: Mapping[str, object]
) -> Iterator[pa.RecordBatch | Quarantined | TableRows]:
    """Walk a cernan dump; yield record batches, packets rows (`TableRows`) and
    quarantined packets in file order and fill `accounting` (policy: module docstring)."""
    opts = _options(options)
    window = StreamWindow(stream)
    out = _Buffer(source, opts)
    resynced = False
    try:
        while True:
            have = window.fill(_PREFIX)
            if have == 0:
                break
            start = window.offset
            if have < _PREFIX:  # truncated_length_prefix: no packet row (no length)
                truncated_tail(window, accounting)
                break
            (length,) = _LENGTH.unpack(window.peek(_PREFIX))
            total = _PREFIX + length
            if length > opts["max_packet_bytes"] or window.fill(total) < total:
                outcome = yield from _framing_error(window, length, accounting, out, opts)
                if outcome == "end":
                    break
                resynced = outcome == "resynced"
                continue
            frame = window.peek(total)
            window.consume(total)
            packet = read_packet(
                frame, start, out.reader, opts["max_decompressed_bytes"], out.render
            )
            packet.resynced, resynced = resynced, False
            out.add(packet)
            if packet.error is None:
                accounting.count_good(total, records=len(packet.datums))
            else:
                accounting.count_bad(total, records_lost=packet.error.lost)
                yield from out.flush()
                yield _quarantined(source, frame, start, packet.error)
            if out.full:
                yield from out.flush()
        yield from out.flush()
    finally:
        accounting.bytes_total += window.bytes_read


def _options(given: Mapping[str, object]) -> dict[str, object]:
    """Defaults overlaid with `given` (names were checked by `registry.resolve_options`)."""
    opts = {**OPTIONS, **given}
    for name in ("batch_rows", "max_packet_bytes", "max_decompressed_bytes"):
        value = opts[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"cernan option {name} must be a positive integer, not {value!r}")
    if opts["event_time_unit"] not in _UNITS_US:
        raise ValueError(f"cernan option event_time_unit must be one of {', '.join(_UNITS_US)}")
    return opts


def _cut(length: int, available: int) -> str:
    return f"declared {length}, {available} available"


def _framing_error(window, length, accounting, out, opts) -> Iterator:
    """A length the walk cannot take a whole frame by (above max_packet_bytes, or past
    the end of the file): resync past it, pass over it unbuffered, or end the walk at a
    truncated tail. Yields what to emit; returns "resynced", "skipped" or "end"."""
    start = window.offset
    too_large = length > opts["max_packet_bytes"]
    code = "packet_too_large" if too_large else "truncated_packet"
    if opts["resync"]:
        skipped, found = _resync(window, opts["max_packet_bytes"])
        if found:  # the garbage up to a plausible packet is skipped
            out.framing(start, length, code, f"resync skipped {skipped} bytes")
            accounting.count_skipped(skipped)
            return "resynced"
        out.framing(start, length, code, "resync found no packet after it")
        accounting.count_truncated_tail(skipped)  # with the rest: the file's tail
        truncated_tail(window, accounting)
        return "end"
    if not too_large:
        out.framing(start, length, "truncated_packet", _cut(length, window.available - _PREFIX))
        truncated_tail(window, accounting)
        return "end"
    head = bytes(window.peek(HEAD_BYTES))
    total = _PREFIX + length
    passed = 0
    while passed < total:
        have = window.fill(1)
        if not have:
            break
        step = min(have, total - passed)
        window.consume(step)
        passed += step
    if passed < total:
        out.framing(start, length, "truncated_packet", _cut(length, passed - _PREFIX))
        accounting.count_truncated_tail(passed)
        return "end"
    detail = f"length {length} exceeds max_packet_bytes ({opts['max_packet_bytes']})"
    out.framing(start, length, "packet_too_large", detail, complete=True)
    accounting.count_bad(total)
    yield from out.flush()
    yield Quarantined.from_frame(out.source, start, head, "packet_too_large", detail, length=total)
    return "skipped"


def _resync(window: StreamWindow, max_packet: int) -> tuple[int, bool]:
    """Consume bytes, in bounded steps, up to the next plausible packet start after the
    current position; returns (bytes consumed, whether a packet was found)."""
    consumed = 0
    skip = 1  # the current position is the frame that failed
    while True:
        have = window.fill(skip + _SCAN_BYTES)
        for match in _CANDIDATE.finditer(window.peek(have), skip):
            if _plausible(window, match.start(), max_packet):
                window.consume(match.start())
                return consumed + match.start(), True
        if have < skip + _SCAN_BYTES:  # the end of the file
            return consumed, False
        step = have - _HEADER.size  # a candidate may straddle the step: look again
        window.consume(step)
        consumed += step
        skip = 0


def _plausible(window: StreamWindow, at: int, max_packet: int) -> bool:
    (length,) = _LENGTH.unpack(window.peek(at + _PREFIX)[at:])
    if length < _HEADER.size + len(avro.MAGIC) or length > max_packet:
        return False
    end = at + _PREFIX + length
    if window.fill(end) < end:
        return False
    payload = window.peek(end)[at + _PREFIX :]
    try:
        avro_at = _HEADER.size if payload[3] == 1 else _kv(payload)[1]
    except PacketError:
        return False
    return payload[avro_at : avro_at + len(avro.MAGIC)] == avro.MAGIC


# ---- one packet ---------------------------------------------------------------------------------


@dataclass
class Packet:
    """What one complete frame held: header, KV, container facts, datums or the error."""

    offset: int
    length: int
    version: int | None = None
    control: int | None = None
    id: int | None = None
    shard_by: int | None = None
    kv: list[tuple[bytes, bytes]] | None = None
    kv_section_length: int | None = None
    avro_offset: int | None = None  # where the container starts in the file
    avro_length: int | None = None
    avro_sha256: str | None = None
    container: avro.Container | None = None
    datums: list = field(default_factory=list)
    rendered: object = None  # the datum column's values (`read_packet`'s `render`)
    warnings: list[str] = field(default_factory=list)
    error: PacketError | None = None
    resynced: bool = False


def read_packet(
    frame: memoryview,
    offset: int,
    reader=None,
    max_decompressed: int = OPTIONS["max_decompressed_bytes"],
    render: Callable[[Packet], object] | None = None,
) -> Packet:
    """Decode one complete frame (length prefix included); never raises for bad bytes:
    the packet's `error` says what was wrong (`reader`: the expected datum schema;
    `render`: turns the datums into what the records table holds, `packet.rendered`)."""
    length = len(frame) - _PREFIX
    packet = Packet(offset, length)
    payload = frame[_PREFIX:]
    try:
        _read_payload(packet, payload, offset + _PREFIX, reader, max_decompressed)
        if render is not None:
            packet.rendered = _rendered(render, packet)
    except PacketError as err:
        if err.stage == "avro_block" and err.container is not None:
            packet.container = err.container
        if err.code in ("kv_truncated", "avro_bad_magic") and _char_counted_kv(payload):
            err.detail += (
                "; written by the pycernan unicode bug: KV lengths count characters, "
                "not UTF-8 bytes"
            )
        packet.error = err
        packet.datums = []
    return packet


def _rendered(render: Callable[[Packet], object], packet: Packet) -> object:
    """`render(packet)`; a datum it cannot take (too deeply nested, a value outside the
    typed column's range) fails the packet, not the file."""
    try:
        return render(packet)
    except Exception as exc:  # msgspec, json, pyarrow and converters raise various types
        err = PacketError("avro_block", "avro_datum_render_failed", f"{type(exc).__name__}")
        err.container = packet.container
        err.lost = len(packet.datums)
        raise err from None


def _read_payload(packet: Packet, payload: memoryview, at: int, reader, max_bytes: int) -> None:
    if len(payload) < _HEADER.size:
        raise PacketError("header", "payload_too_short", f"{len(payload)} < {_HEADER.size}")
    packet.version, packet.control, packet.id, packet.shard_by = _HEADER.unpack_from(payload)
    if packet.length > CERNAN_MAX_PAYLOAD:
        packet.warnings.append("exceeds_cernan_max_payload")
    if packet.version not in (1, 2):
        raise PacketError("header", "unsupported_version", str(packet.version))
    if packet.control & ~1:
        packet.warnings.append("reserved_control_bits")
    start = _HEADER.size
    if packet.version == 2:
        packet.kv, end = _kv(payload)
        packet.kv_section_length = end - start
        _kv_warnings(packet.kv, packet.warnings)
        start = end
    section = payload[start:]
    packet.avro_offset = at + start
    packet.avro_length = len(section)
    packet.avro_sha256 = hashlib.sha256(section).hexdigest()
    container = avro.read_header(section, packet.warnings)
    packet.container = container
    avro.read_blocks(container, section, max_bytes, reader)
    packet.datums = container.datums


def _kv(payload: memoryview) -> tuple[list[tuple[bytes, bytes]], int]:
    """The v2 KV section (#KV u8, then u8 key length, key, u16 value length, value)."""
    end = len(payload)
    pos = _HEADER.size
    if pos >= end:
        raise PacketError("kv", "kv_truncated", "no #KV byte")
    count = payload[pos]
    pos += 1
    pairs = []
    for index in range(count):
        if pos >= end:
            raise PacketError("kv", "kv_truncated", f"pair {index}: key length")
        size = payload[pos]
        pos += 1
        if size > end - pos:
            raise PacketError("kv", "kv_truncated", f"pair {index}: key bytes ({size} declared)")
        key = bytes(payload[pos : pos + size])
        pos += size
        if end - pos < _U16.size:
            raise PacketError("kv", "kv_truncated", f"pair {index}: value length")
        (size,) = _U16.unpack_from(payload, pos)
        pos += _U16.size
        if size > end - pos:
            raise PacketError("kv", "kv_truncated", f"pair {index}: value bytes ({size} declared)")
        pairs.append((key, bytes(payload[pos : pos + size])))
        pos += size
    return pairs, pos


def _kv_warnings(pairs: list[tuple[bytes, bytes]], warnings: list[str]) -> None:
    keys = [key for key, _ in pairs]
    if len(set(keys)) < len(keys):
        warnings.append("duplicate_kv_key")
    if any(_text(key) is None for key in keys):
        warnings.append("kv_key_not_utf8")


def _text(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _char_counted_kv(payload: memoryview) -> bool:
    """True when the KV section parses with its lengths read as character counts of
    UTF-8 text (pycernan <= 0.0.16 sends `len(str)`) and the container magic follows:
    the packet came from that client's unicode bug."""
    data = bytes(payload)
    if len(data) <= _HEADER.size or data[:4] != b"\x00\x00\x00\x02":
        return False
    pos = _HEADER.size + 1
    wide = False
    for _ in range(data[_HEADER.size]):
        for width in (1, 2):
            if pos + width > len(data):
                return False
            chars = int.from_bytes(data[pos : pos + width], "big")
            pos += width
            end = _utf8_chars_end(data, pos, chars)
            if end is None:
                return False
            wide = wide or end - pos != chars
            pos = end
    return wide and data[pos : pos + len(avro.MAGIC)] == avro.MAGIC


def _utf8_chars_end(data: bytes, pos: int, chars: int) -> int | None:
    """Where `chars` UTF-8 characters starting at `pos` end, or None if they do not fit."""
    for _ in range(chars):
        if pos >= len(data):
            return None
        lead = data[pos]
        pos += 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return pos if pos <= len(data) else None


def _quarantined(source: str, frame: memoryview, start: int, err: PacketError) -> Quarantined:
    return Quarantined.from_frame(source, start, frame, err.code, f"{err.stage}: {err.detail}")


# ---- rows -> Arrow ------------------------------------------------------------------------------


def _hex64(value: int | None) -> str | None:
    return None if value is None else f"{value:016x}"


class _Buffer:
    """Packets and records decoded since the last flush, turned into Arrow in one go."""

    def __init__(self, source: str, opts: Mapping[str, object]) -> None:
        self.source = source
        self.batch_rows = opts["batch_rows"]
        self.index = 0  # packet index in the file (truncated frames included)
        path = opts["datum_schema_file"]
        self.reader = load_datum_schema(str(path)) if path else None
        self.datum_type, self.convert = (
            arrow_type(self.reader) if self.reader is not None else (None, None)
        )
        self.schema = records_schema(self.datum_type)
        field_path = str(opts["event_time_field"])
        self.time_path = field_path.split(".") if field_path else None
        self.time_unit = _UNITS_US[opts["event_time_unit"]]
        self._reset()

    def _reset(self) -> None:
        self.packets: list[dict] = []
        self.columns: dict[str, list] = {name: [] for name in self.schema.names}
        self.rows = 0
        self.payload_bytes = 0

    @property
    def full(self) -> bool:
        return self.rows >= self.batch_rows or self.payload_bytes >= FLUSH_BYTES

    def framing(
        self, start: int, length: int, code: str, detail: str, *, complete: bool = False
    ) -> None:
        """A packets row for a frame the walk could not take whole."""
        row = _empty_packet_row(self.source, start, self.index, length)
        row.update(complete=complete, status="error", error_stage="framing")
        row.update(error_code=code, error_detail=detail)
        self.packets.append(row)
        self.index += 1

    def add(self, packet: Packet) -> None:
        times = self._records(packet) if packet.error is None else []
        first = min((time for time in times if time is not None), default=None)
        self.packets.append(self._packet_row(packet, first))
        self.index += 1
        self.payload_bytes += packet.length

    def _records(self, packet: Packet) -> list:
        datums = packet.datums
        n = len(datums)
        if not n:
            return []
        container = packet.container
        columns = self.columns
        times = [self._event_time(datum) for datum in datums] if self.time_path else [None] * n
        shared = {
            "source_file": self.source,
            "byte_offset": packet.offset,
            "packet_index": self.index,
            "id": packet.id,
            "shard_by": packet.shard_by,
            "schema_fingerprint": container.schema.fingerprint,
            "schema_full_name": container.schema.full_name,
        }
        for name, value in shared.items():
            columns[name].extend([value] * n)
        columns["event_time"].extend(times)
        for block, count in enumerate(container.block_counts):
            columns["block_index"].extend([block] * count)
            columns["record_index_in_block"].extend(range(count))
        columns["record_index"].extend(range(n))
        if self.datum_type is None:
            columns["record_json"].extend(packet.rendered)
        else:
            columns["record"].append(packet.rendered)  # one Arrow array per packet
        self.rows += n
        return times

    def render(self, packet: Packet) -> list[bytes] | pa.Array:
        """A packet's datums as JSON, or as one typed Arrow array (`datum_schema_file`)."""
        datums = packet.datums
        if self.datum_type is None:
            return datums_json(datums, packet.container.schema.floats)
        convert = self.convert
        return pa.array(datums if convert is None else list(map(convert, datums)), self.datum_type)

    def _event_time(self, datum) -> int | None:
        """The datum's event time in µs since the epoch, or None (missing, bad, out of range)."""
        value = datum
        for name in self.time_path:
            if not isinstance(value, dict):
                return None
            value = value.get(name)
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.UTC)
            return (value - EPOCH) // dt.timedelta(microseconds=1)
        if isinstance(value, int | float) and not isinstance(value, bool):
            micros = int(value * self.time_unit)
            if EVENT_TIME_MIN_MS * 1000 <= micros <= EVENT_TIME_MAX_MS * 1000:
                return micros
        return None

    def _packet_row(self, packet: Packet, event_time: int | None) -> dict:
        row = _empty_packet_row(self.source, packet.offset, self.index, packet.length)
        row.update(complete=True, resynced=packet.resynced, warnings=packet.warnings)
        row["event_time"] = event_time
        row["record_count"] = len(packet.datums)
        if packet.version is not None:
            row.update(
                version=packet.version,
                control=packet.control,
                sync=bool(packet.control & 1),
                id=packet.id,
                id_hex=_hex64(packet.id),
                shard_by=packet.shard_by,
                shard_by_hex=_hex64(packet.shard_by),
                cernan_kafka_key=f"{packet.shard_by:X}",
            )
        if packet.kv is not None and not (packet.error and packet.error.stage == "kv"):
            row["kv"] = [
                {"key": _text(key), "key_bytes": key, "value": value} for key, value in packet.kv
            ]
            kv_map = {}
            for key, value in packet.kv:
                text = _text(key)
                if text is not None:
                    kv_map[text] = _text(value)
            row["kv_map"] = list(kv_map.items())
            row["kv_section_length"] = packet.kv_section_length
        row.update(
            avro_offset=packet.avro_offset,
            avro_length=packet.avro_length,
            avro_sha256=packet.avro_sha256,
        )
        container = packet.container
        if container is not None:
            schema = container.schema
            row.update(
                codec=container.codec,
                schema_json=container.schema_json,
                schema_full_name=schema.full_name,
                schema_fingerprint=schema.fingerprint,
                ocf_sync=container.sync,
                ocf_user_metadata=list(container.user_metadata.items()),
                block_count=len(container.block_counts),
                block_record_counts=container.block_counts,
                declared_record_count=sum(container.block_counts),
            )
        if packet.error is not None:
            err = packet.error
            row.update(
                status="error",
                error_stage=err.stage,
                error_code=err.code,
                error_detail=err.detail,
                records_before_error=err.records_before,
            )
        return row

    def flush(self) -> Iterator[pa.RecordBatch | TableRows]:
        """Records first, then the packets rows of the same stretch of the file."""
        if self.rows:
            columns = self.columns
            arrays = []
            for item in self.schema:
                values = columns[item.name]
                if item.name == "event_time":
                    arrays.append(pa.array(values, pa.int64()).cast(EVENT_TIME_TYPE))
                elif item.name == "record":
                    arrays.append(pa.concat_arrays(values))
                else:
                    arrays.append(pa.array(values, item.type))
            batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
            yield from in_batches(batch, self.batch_rows)
        if self.packets:
            rows = self.packets
            for row in rows:
                if row["event_time"] is not None:
                    row["event_time"] = EPOCH + dt.timedelta(microseconds=row["event_time"])
            batch = pa.RecordBatch.from_pylist(rows, schema=PACKETS_SCHEMA)
            yield from (TableRows(PACKETS, part) for part in in_batches(batch, self.batch_rows))
        self._reset()


_EMPTY_PACKET = {name: None for name in PACKETS_SCHEMA.names}


def _empty_packet_row(source: str, offset: int, index: int, length: int) -> dict:
    row = dict(_EMPTY_PACKET)
    row.update(
        source_file=source,
        byte_offset=offset,
        packet_index=index,
        packet_length=length,
        complete=False,
        resynced=False,
        status="ok",
        warnings=[],
        record_count=0,
    )
    return row

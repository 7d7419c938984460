"""Cernan rows: the records table (one row per datum of an ok packet) and the packets
table (one row per frame), built from `Packet`s and turned into Arrow a flush at a time."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from wirecodecs.cernan.arrow_types import arrow_type, load_datum_schema
from wirecodecs.cernan.options import UNITS_US, CernanOptions
from wirecodecs.cernan.packet import CONTROL_SYNC, Packet, text_or_none
from wirecodecs.cernan.render import datums_json
from wirecodecs.cernan.schema import PACKETS, PACKETS_SCHEMA, records_schema
from wirecodecs.registry import TableRows
from wirecodecs.rows import (
    EPOCH,
    EVENT_TIME_MAX_MS,
    EVENT_TIME_MIN_MS,
    EVENT_TIME_TYPE,
    FLUSH_BYTES,
    in_batches,
)


def _hex64(value: int | None) -> str | None:
    return None if value is None else f"{value:016x}"


class PacketRows:
    """Packets and records decoded since the last flush, turned into Arrow in one go."""

    def __init__(self, source: str, opts: CernanOptions) -> None:
        self.source = source
        self.batch_rows = opts.batch_rows
        self.index = 0  # packet index in the file (truncated frames included)
        path = opts.datum_schema_file
        self.reader = load_datum_schema(path) if path else None
        self.datum_type, self.convert = (
            arrow_type(self.reader) if self.reader is not None else (None, None)
        )
        self.schema = records_schema(self.datum_type)
        field_path = str(opts.event_time_field)
        self.time_path = field_path.split(".") if field_path else None
        self.time_unit = UNITS_US[opts.event_time_unit]
        self._reset()

    @property
    def json_only(self) -> bool:
        """Whether the datums are wanted only as JSON text: the compiled walk can take them."""
        return self.datum_type is None and self.time_path is None

    def _reset(self) -> None:
        self.packets: list[dict] = []
        self.shared: dict[str, list] = {name: [] for name in _SHARED}  # a value per packet
        self.counts: list[int] = []  # records per packet
        self.blocks_per_packet: list[int] = []
        self.block_counts: list[int] = []  # records per block, every packet's
        self.times: list[int | None] = []  # a value per record (`event_time_field`)
        self.typed: list[pa.Array] = []  # the `record` column: an array per packet
        self.json_texts: list[bytes] = []  # `record_json`: each packet's texts back to back
        self.json_ends: list[np.ndarray] = []  # and where each datum's text ends in the flush
        self.json_bytes = 0
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
        """Note the packet's records: its shared values once, spread over its rows at flush."""
        n = packet.records
        if not n:
            return []
        container = packet.container
        shared = (
            packet.offset,
            self.index,
            packet.id,
            packet.shard_by,
            container.schema.fingerprint,
            container.schema.full_name,
        )
        for values, value in zip(self.shared.values(), shared, strict=True):
            values.append(value)
        self.counts.append(n)
        self.blocks_per_packet.append(len(container.block_counts))
        self.block_counts += container.block_counts
        times = [self._event_time(d) for d in packet.datums] if self.time_path else []
        self.times += times
        if self.datum_type is None:
            text, ends = packet.rendered
            self.json_texts.append(text)
            self.json_ends.append(ends + self.json_bytes)
            self.json_bytes += len(text)
        else:
            self.typed.append(packet.rendered)  # one Arrow array per packet
        self.rows += n
        return times

    def render(self, packet: Packet) -> tuple[bytes, np.ndarray] | pa.Array:
        """A packet's datums as JSON (their texts back to back and where each ends), or as
        one typed Arrow array (`datum_schema_file`)."""
        datums = packet.datums
        if self.datum_type is None:
            blocks = packet.container.json_blocks  # the compiled walk's
            if len(blocks) == 1:
                return blocks[0]
            if blocks:
                starts = np.cumsum([0] + [len(text) for text, _ in blocks[:-1]])
                ends = [
                    block_ends + start
                    for (_, block_ends), start in zip(blocks, starts, strict=True)
                ]
                return b"".join(text for text, _ in blocks), np.concatenate(ends)
            lines = datums_json(datums, packet.container.schema.floats)
            lengths = np.fromiter(map(len, lines), np.int64, len(lines))
            return b"".join(lines), np.cumsum(lengths)
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
        row["record_count"] = packet.records
        if packet.version is not None:
            row.update(
                version=packet.version,
                control=packet.control,
                sync=bool(packet.control & CONTROL_SYNC),
                id=packet.id,
                id_hex=_hex64(packet.id),
                shard_by=packet.shard_by,
                shard_by_hex=_hex64(packet.shard_by),
                cernan_kafka_key=f"{packet.shard_by:X}",
            )
        if packet.kv is not None and not (packet.error and packet.error.stage == "kv"):
            row["kv"] = [
                {"key": text_or_none(key), "key_bytes": key, "value": value}
                for key, value in packet.kv
            ]
            kv_map = {}
            for key, value in packet.kv:
                text = text_or_none(key)
                if text is not None:
                    kv_map[text] = text_or_none(value)
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

    def _json_array(self) -> pa.Array:
        """The flush's `record_json` column, built from its buffers."""
        if self.json_bytes >= 1 << 31:
            raise OverflowError("record_json of one flush exceeds 2 GiB")
        offsets = np.zeros(self.rows + 1, np.int32)
        np.concatenate(self.json_ends, out=offsets[1:], casting="unsafe")
        data = pa.py_buffer(b"".join(self.json_texts))
        return pa.StringArray.from_buffers(self.rows, pa.py_buffer(offsets), data)

    def _record_arrays(self) -> list[pa.Array]:
        """The flush's records columns: each packet's shared values spread over its rows by
        one `take`, the indexes counted in numpy."""
        rows = np.arange(self.rows)
        counts = np.array(self.counts, np.int64)
        of_packet = pa.array(np.repeat(np.arange(counts.size), counts))
        block_counts = np.array(self.block_counts, np.int64)
        blocks = np.array(self.blocks_per_packet, np.int64)
        first_block = np.repeat(np.cumsum(blocks) - blocks, blocks)
        block_index = np.arange(block_counts.size) - first_block
        columns = {
            name: pa.array(values, self.schema.field(name).type).take(of_packet)
            for name, values in self.shared.items()
        }
        columns["source_file"] = pa.array([self.source]).take(pa.array(np.zeros_like(rows)))
        columns["block_index"] = pa.array(np.repeat(block_index, block_counts).astype(np.int32))
        block_starts = np.cumsum(block_counts) - block_counts
        columns["record_index_in_block"] = pa.array(rows - np.repeat(block_starts, block_counts))
        columns["record_index"] = pa.array(rows - np.repeat(np.cumsum(counts) - counts, counts))
        if self.time_path:
            times = pa.array(self.times, pa.int64()).cast(EVENT_TIME_TYPE)
        else:
            times = pa.nulls(self.rows, EVENT_TIME_TYPE)
        columns["event_time"] = times
        if self.datum_type is None:
            columns["record_json"] = self._json_array()
        else:
            columns["record"] = pa.concat_arrays(self.typed)
        return [columns[name] for name in self.schema.names]

    def flush(self) -> Iterator[pa.RecordBatch | TableRows]:
        """Records first, then the packets rows of the same stretch of the file."""
        if self.rows:
            batch = pa.RecordBatch.from_arrays(self._record_arrays(), schema=self.schema)
            yield from in_batches(batch, self.batch_rows)
        if self.packets:
            rows = self.packets
            for row in rows:
                if row["event_time"] is not None:
                    row["event_time"] = EPOCH + dt.timedelta(microseconds=row["event_time"])
            batch = pa.RecordBatch.from_pylist(rows, schema=PACKETS_SCHEMA)
            yield from (TableRows(PACKETS, part) for part in in_batches(batch, self.batch_rows))
        self._reset()


_SHARED = (  # the records columns a packet's rows share, in `_records`' order
    "byte_offset",
    "packet_index",
    "id",
    "shard_by",
    "schema_fingerprint",
    "schema_full_name",
)
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

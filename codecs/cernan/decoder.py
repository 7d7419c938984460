"""Decoder for cernan Avro source dumps: v1/v2 packets back to back (docs/cernan.md,
"Byte layout" and "Landings and the walk").

The walk reads a u32 length (payload bytes, NOT counting its own 4: the wiki is wrong),
takes the whole frame and reads the 24-byte header, the v2 key/value section
(`packet.py`) and the Avro container (`avro.py`); `rows.py` turns packets into rows.
Policy, as the golden sidecars encode it:

* packet-level all-or-nothing: a packet with any header, KV or Avro error yields no
  records; it becomes one `Quarantined` item and one packets row with stage/code/detail;
* strict sequential framing: a frame cut by the end of the file is a truncated tail (a
  packets row with `complete` false) and ends the walk; a length above `max_packet_bytes`
  is never buffered: the frame is skipped by its length (quarantined) or, if the file ends
  first, is the truncated tail;
* option `resync`: after such a framing error, scan forward for a plausible packet ("Resync":
  version 1|2, control 0|1, a length that fits, `Obj\\x01` where the layout puts it); the
  bytes passed over are `bytes_skipped`, and the packet found has `resynced` true (its
  frames and records count as good ones, like any other).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

import pyarrow as pa

from wirecodecs.accounting import HEAD_BYTES, FileAccounting, Quarantined
from wirecodecs.cernan import avro
from wirecodecs.cernan.avro import PacketError
from wirecodecs.cernan.options import CernanOptions
from wirecodecs.cernan.packet import (
    HEADER,
    LENGTH,
    PREFIX,
    V1,
    read_kv,
    read_packet,
)
from wirecodecs.cernan.rows import PacketRows
from wirecodecs.compiled import WALKS, file_size
from wirecodecs.registry import TableRows
from wirecodecs.stream import StreamWindow, truncated_tail

FORMAT = "cernan"

# Resync candidates: a length, then version 1|2 and control 0|1 (overlapping matches).
_CANDIDATE = re.compile(rb"(?=(?s:.{4})\x00\x00\x00[\x01\x02]\x00\x00\x00[\x00\x01])")
_SCAN_BYTES = 1 << 20
# The compiled JSON walk (`compiled.py`, the `record_json` column) has a fixed cost per
# process before its first block (loading its cached machine code; docs/cernan.md §8),
# then takes less CPU per MB than the pure path: packets take it once the process has read
# `WALK.pure_below` bytes of cernan data (or from the start of a file this large), so that
# a small file does not pay for it (figures: docs/performance.md, Cernan decoder).
WALK = WALKS["cernan"]


def _compiled(window: StreamWindow, size: int) -> bool:
    """Whether the next packet takes the compiled walk (where its datums allow)."""
    return WALK.compiled(max(window.bytes_read, size)) is not None


def decode(
    stream: BinaryIO, source: str, accounting: FileAccounting, opts: CernanOptions
) -> Iterator[pa.RecordBatch | Quarantined | TableRows]:
    """Walk a cernan dump; yield record batches, packets rows (`TableRows`) and
    quarantined packets in file order and fill `accounting` (policy: module docstring)."""
    window = StreamWindow(stream)
    size = file_size(stream)
    out = PacketRows(source, opts)
    resynced = False
    try:
        while True:
            have = window.fill(PREFIX)
            if have == 0:
                break
            start = window.offset
            if have < PREFIX:  # truncated_length_prefix: no packet row (no length)
                truncated_tail(window, accounting)
                break
            (length,) = LENGTH.unpack(window.peek(PREFIX))
            total = PREFIX + length
            if length > opts.max_packet_bytes or window.fill(total) < total:
                outcome = yield from _framing_error(window, length, accounting, out, opts)
                if outcome == "end":
                    break
                resynced = outcome == "resynced"
                continue
            frame = window.peek(total)
            window.consume(total)
            packet = read_packet(
                frame,
                start,
                out.reader,
                opts.max_decompressed_bytes,
                out.render,
                out.json_only and _compiled(window, size),
            )
            packet.resynced, resynced = resynced, False
            out.add(packet)
            if packet.error is None:
                accounting.count_good(total, records=packet.records)
            else:
                accounting.count_bad(total, records_lost=packet.error.lost)
                yield from out.flush()
                yield _quarantined(source, frame, start, packet.error)
            if out.full:
                yield from out.flush()
        yield from out.flush()
    finally:
        accounting.bytes_total += window.bytes_read
        WALK.count(window.bytes_read)


def _cut(length: int, available: int) -> str:
    return f"declared {length}, {available} available"


def _framing_error(window, length, accounting, out, opts) -> Iterator:
    """A length the walk cannot take a whole frame by (above max_packet_bytes, or past
    the end of the file): resync past it, pass over it unbuffered, or end the walk at a
    truncated tail. Yields what to emit; returns "resynced", "skipped" or "end"."""
    start = window.offset
    too_large = length > opts.max_packet_bytes
    code = "packet_too_large" if too_large else "truncated_packet"
    if opts.resync:
        skipped, found = _resync(window, opts.max_packet_bytes)
        if found:  # the garbage up to a plausible packet is skipped
            out.framing(start, length, code, f"resync skipped {skipped} bytes")
            accounting.count_skipped(skipped)
            return "resynced"
        out.framing(start, length, code, "resync found no packet after it")
        accounting.count_truncated_tail(skipped)  # with the rest: the file's tail
        truncated_tail(window, accounting)
        return "end"
    if not too_large:
        out.framing(start, length, "truncated_packet", _cut(length, window.available - PREFIX))
        truncated_tail(window, accounting)
        return "end"
    head = bytes(window.peek(HEAD_BYTES))
    total = PREFIX + length
    passed = 0
    while passed < total:
        have = window.fill(1)
        if not have:
            break
        step = min(have, total - passed)
        window.consume(step)
        passed += step
    if passed < total:
        out.framing(start, length, "truncated_packet", _cut(length, passed - PREFIX))
        accounting.count_truncated_tail(passed)
        return "end"
    detail = f"length {length} exceeds max_packet_bytes ({opts.max_packet_bytes})"
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
        step = have - HEADER.size  # a candidate may straddle the step: look again
        window.consume(step)
        consumed += step
        skip = 0


def _plausible(window: StreamWindow, at: int, max_packet: int) -> bool:
    (length,) = LENGTH.unpack(window.peek(at + PREFIX)[at:])
    if length < HEADER.size + len(avro.MAGIC) or length > max_packet:
        return False
    end = at + PREFIX + length
    if window.fill(end) < end:
        return False
    payload = window.peek(end)[at + PREFIX :]
    try:  # a candidate's u32 version is 1 or 2: its last byte says which
        avro_at = HEADER.size if payload[3] == V1 else read_kv(payload)[1]
    except PacketError:
        return False
    return payload[avro_at : avro_at + len(avro.MAGIC)] == avro.MAGIC


def _quarantined(source: str, frame: memoryview, start: int, err: PacketError) -> Quarantined:
    return Quarantined.from_frame(source, start, frame, err.code, f"{err.stage}: {err.detail}")

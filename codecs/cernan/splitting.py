"""Where a large cernan dump may be cut (`split`, cernan's `WireFormat.split`).

Packets are strictly framed: the walk goes from length prefix to length prefix, so the
frame starts are found by that same hop, reading 4 bytes per packet instead of guessing
from a version pattern. That gives the walk's own frame starts, never a false one, and
the packet number each starts with (`packet_index` runs over the file), which a guess
could not. The hop stops where the walk cannot go on by the length: a frame that runs
past the end of the file, or, with `resync` on, a length above `max_packet_bytes` (the
walk then scans for the next packet; the rest of the file stays one range).
"""

from __future__ import annotations

from collections.abc import Sequence

from wirecodecs.cernan.options import CernanOptions
from wirecodecs.cernan.packet import LENGTH
from wirecodecs.registry import OpenFile, SplitPoint, Splits


def split(
    open_file: OpenFile,
    path: str,
    size: int,
    boundaries: Sequence[int],
    opts: CernanOptions,
) -> Splits:
    """For each boundary, the first packet at or after it, with its packet number and
    offset as the shifts of the columns that count from the file's start."""
    if not boundaries:
        return Splits()
    points: list[SplitPoint] = []
    pending = iter(boundaries)
    boundary = next(pending)
    at = index = 0
    with open_file(path) as file:
        while at + LENGTH.size <= size:
            file.seek(at)
            (length,) = LENGTH.unpack(file.read(LENGTH.size))
            end = at + LENGTH.size + length
            if end > size or (opts.resync and length > opts.max_packet_bytes):
                break
            if at >= boundary:
                points.append(SplitPoint(at, {"packet_index": index, "avro_offset": at}))
                boundary = next((b for b in pending if b > at), None)
                if boundary is None:
                    break
            at, index = end, index + 1
    return Splits(points)

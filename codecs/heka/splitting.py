"""Where a large plain Heka stream may be cut (`split`, Heka's `WireFormat.split`).

A split point is a record separator where the decoder's own frame test (`_probe`: unit
separator after the header, a header that parses, a message length in range) finds a
frame that ends inside the file. That alone can be a 0x1E inside an earlier frame. If
the earlier frame's header ends before the point, the range before the point ends inside
that frame, a truncated tail the decode job sees (and then decodes the file whole). But
a header running over the point would be cut by the range's end, and the decoder, at the
end of a stream, handles a cut header by looking for later frames or skipping, which can
end with `eof` as if nothing were wrong. So a point is refused while any 0x1E in the 257
bytes before it has a header length byte that reaches it: then every decision the walk
takes before the point reads only bytes before it, and the range before a false point
always ends in a truncated tail. A whole-file gzip or zstd stream is never cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO

from wirecodecs.heka.decoder import _FRAME, _SHORT, RS, _probe
from wirecodecs.heka.options import HekaOptions
from wirecodecs.inflate import RawSource
from wirecodecs.registry import OpenFile, SplitPoint, Splits

_REACH = 2 + 0xFF  # from a 0x1E, its header length byte reaches at most this far
_SCAN_BYTES = 64 << 10  # bytes searched per read


def split(
    open_file: OpenFile,
    path: str,
    size: int,
    boundaries: Sequence[int],
    options: HekaOptions,
) -> Splits:
    """For each boundary, the first frame start at or after it, before the next boundary
    (none when there is no frame in between)."""
    if not boundaries:
        return Splits()
    max_len = options.max_message_size
    with open_file(path) as file:
        if RawSource(file).sniff() is not None:  # whole-file compression
            return Splits()
        points = []
        for start, limit in zip(boundaries, [*boundaries[1:], size], strict=True):
            found = frame_start(file, start, limit, size, max_len)
            if found is not None:
                points.append(SplitPoint(found))
        return Splits(points)


def frame_start(file: BinaryIO, start: int, limit: int, size: int, max_len: int) -> int | None:
    """The first offset in [start, limit) that may be cut at (module docstring)."""
    pos = start
    while pos < limit:
        low = max(0, pos - _REACH)
        file.seek(low)
        # the header after the last candidate is read along (a header is at most 258 bytes)
        data = file.read(pos - low + _SCAN_BYTES + _REACH + 1)
        view = memoryview(data)
        end = min(limit, pos + _SCAN_BYTES) - low
        at = data.find(RS, pos - low, end)
        while at >= 0:
            if _whole_frame(view, at, low, size, max_len) and not _reached(data, at):
                return low + at
            at = data.find(RS, at + 1, end)
        pos += _SCAN_BYTES
    return None


def _whole_frame(view: memoryview, at: int, low: int, size: int, max_len: int) -> bool:
    """Whether the decoder sees a frame at `view[at]` that ends inside the file."""
    state, length, header = _probe(view, at, max_len)
    if state == _SHORT and header is not None:  # the view ends first: does the file?
        return low + at + length <= size
    return state == _FRAME


def _reached(data: bytes, at: int) -> bool:
    """Whether a 0x1E before `at` has a header length byte at or reaching past `at`."""
    before = data.rfind(RS, max(0, at - _REACH), at)
    while before >= 0:
        if before + 1 >= at or before + data[before + 1] + 3 > at:
            return True
        before = data.rfind(RS, max(0, at - _REACH), before)
    return False

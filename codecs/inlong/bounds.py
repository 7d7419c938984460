"""What the compiled walk (compiled.py) and its callers (decoder.py, payload.py) share,
importable without numba: its limits, the statuses a walk stops with, what it reports."""

from __future__ import annotations

from typing import NamedTuple

# a walk's limits (an int64 array): max_decompressed_bytes, batch rows and bytes (a flush),
# chunk rows and bytes (a message the pure walk would cut in chunks is left to it)
L_DECOMPRESSED, L_BATCH_ROWS, L_BATCH_BYTES, L_CHUNK_ROWS, L_CHUNK_BYTES = range(5)

# what a walk stopped at (the frame it stopped at comes with it)
DONE = 0
FLUSH = 1  # the buffered rows must be flushed before this message
FALLBACK = 2  # this message goes through the pure walk (`message.parse`)


class Walked(NamedTuple):
    """The row buffer's rows and bytes after a walk, and what the messages it took add
    to the accounting."""

    buffered_rows: int
    buffered_bytes: int
    frames: int
    items: int
    frame_bytes: int

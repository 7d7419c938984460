"""Where every byte of an input file went, and the frames that could not be decoded.

Each decoder fills one `FileAccounting` per file while it walks it. The invariant a run's
manifest relies on: decoded + quarantined + truncated tail + skipped == total bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

HEAD_BYTES = 64  # how many leading bytes of a bad frame a quarantine row keeps


@dataclass(frozen=True)
class Quarantined:
    """A frame (or region) that could not be decoded, kept so a person can find its bytes."""

    source: str
    byte_offset: int
    length: int
    kind: str
    detail: str
    head: bytes  # the first HEAD_BYTES bytes of the region

    @classmethod
    def from_frame(
        cls, source: str, offset: int, frame, kind: str, detail: str, *, length: int | None = None
    ) -> Quarantined:
        """The bad frame `frame` (bytes or a view) found at `offset`; `length` when the
        region is longer than the bytes at hand (drained, or only its head peeked)."""
        size = len(frame) if length is None else length
        return cls(source, offset, size, kind, detail, bytes(frame[:HEAD_BYTES]))


@dataclass
class FileAccounting:
    """Byte and frame counts for one input file (one row of the run manifest)."""

    source: str
    format: str
    bytes_total: int = 0
    bytes_decoded: int = 0  # complete frames whose records were decoded
    bytes_quarantined: int = 0  # complete frames, or unwalkable regions, that were not
    bytes_truncated_tail: int = 0  # an incomplete last frame (active segment, cut fetch)
    bytes_skipped: int = 0  # garbage passed over while resynchronising
    frames_good: int = 0
    frames_bad: int = 0
    records_good: int = 0
    records_bad: int = 0  # records known lost inside bad frames (when a count was declared)
    payloads_good: int = 0  # messages carried in good frames' records (envelope + payload)
    payloads_bad: int = 0  # ... that the payload format rejected (each one quarantined)
    stop_reason: str = "eof"  # eof | truncated_tail | a DecodeError kind that ended the walk

    def count_good(self, length: int, records: int = 1) -> None:
        """A frame of `length` bytes whose `records` records were decoded."""
        self.bytes_decoded += length
        self.frames_good += 1
        self.records_good += records

    def count_bad(self, length: int, records_lost: int = 0) -> None:
        """A quarantined frame or region of `length` bytes, with the records known lost."""
        self.bytes_quarantined += length
        self.frames_bad += 1
        self.records_bad += records_lost

    def count_skipped(self, length: int) -> None:
        """Garbage passed over while looking for the next frame."""
        self.bytes_skipped += length

    def count_truncated_tail(self, length: int) -> None:
        """An incomplete last frame: it ends the walk."""
        self.bytes_truncated_tail += length
        self.stop_reason = "truncated_tail"

    @property
    def balanced(self) -> bool:
        accounted = (
            self.bytes_decoded
            + self.bytes_quarantined
            + self.bytes_truncated_tail
            + self.bytes_skipped
        )
        return accounted == self.bytes_total

    def to_dict(self) -> dict:
        return asdict(self)

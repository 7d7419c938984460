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

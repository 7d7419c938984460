"""What a sample writer returns: the files it wrote for a day and what a decoder must find.

Kept apart from `wirecodecs.samples`, which imports every format's sample writer to list
them, so that the writers can import these types without an import cycle.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

SUCCESS_MARKER = "_SUCCESS"
DAY_MS = 86_400_000  # one day in milliseconds: the writers spread their records over it


@dataclass(frozen=True)
class SampleFile:
    """One written file and what a correct decoder must find in it."""

    path: Path
    frames: int  # complete frames written (damaged ones included)
    records: int  # records in those frames (Kafka: control records included)
    crc_invalid_frames: int = 0  # checksum broken on purpose, records still decodable
    crc_invalid_records: int = 0
    undecodable_frames: int = 0  # payload broken on purpose: must be quarantined
    undecodable_records: int = 0
    truncated_tail_bytes: int = 0  # an incomplete last frame

    @property
    def decodable_records(self) -> int:
        return self.records - self.undecodable_records


@dataclass(frozen=True)
class SampleDay:
    """Everything `write_sample_day` wrote; `paths` lists the files, marker last."""

    format: str
    date: dt.date
    seed: int
    files: list[SampleFile]
    marker: Path

    @property
    def paths(self) -> list[Path]:
        return [item.path for item in self.files] + [self.marker]

    def totals(self) -> dict[str, int]:
        """Per-file counts summed, plus how many files carry deliberate damage."""
        numeric = [f.name for f in fields(SampleFile) if f.name != "path"]
        sums = {name: sum(getattr(item, name) for item in self.files) for name in numeric}
        damaged = [
            item
            for item in self.files
            if item.crc_invalid_frames or item.undecodable_frames or item.truncated_tail_bytes
        ]
        return {"files": len(self.files), "damaged_files": len(damaged), **sums}

    def describe(self) -> str:
        """One line for logs: what was written and what was damaged on purpose."""
        t = self.totals()
        return (
            f"{t['files']} files, {t['frames']} frames, {t['records']} records; damaged on "
            f"purpose: {t['crc_invalid_frames']} CRC-invalid frame(s) "
            f"({t['crc_invalid_records']} records), {t['undecodable_frames']} undecodable "
            f"frame(s) ({t['undecodable_records']} records), "
            f"{t['truncated_tail_bytes']} truncated-tail bytes"
        )

    def to_json(self) -> str:
        files = [{**asdict(item), "path": str(item.path)} for item in self.files]
        return json.dumps(
            {
                "format": self.format,
                "date": self.date.isoformat(),
                "seed": self.seed,
                "totals": self.totals(),
                "files": files,
            },
            indent=2,
        )

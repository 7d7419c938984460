"""The Hercules decoder's options (`wirecodecs.options`)."""

from __future__ import annotations

import dataclasses

from wirecodecs.options import OptionError, Options

FRAMINGS = ("batch", "events", "stream_read")
COMPRESSIONS = ("auto", "none", "lz4")


@dataclasses.dataclass(frozen=True)
class HerculesOptions(Options):
    FORMAT = "hercules"

    framing: str = "batch"  # batch | events | stream_read
    compression: str = "auto"  # auto (.lz4 name: LZ4 block) | none | lz4
    max_event_bytes: int = 1 << 20  # a larger event is corrupt (the gate accepts 500 000)
    max_depth: int = 100  # container/vector nesting; deeper is corrupt (bounds the recursion)
    max_lz4_body_bytes: int = 100 << 20  # decompressed LZ4 body bound (the gate's limit)
    batch_rows: int = 65536  # rows per yielded Arrow record batch (at most)

    def check(self) -> None:
        self.positive("max_event_bytes", "max_depth", "max_lz4_body_bytes", "batch_rows")
        self.one_of("framing", FRAMINGS)
        self.one_of("compression", COMPRESSIONS)
        if self.max_depth > 200:
            raise OptionError("hercules option max_depth must be at most 200 (recursion bound)")

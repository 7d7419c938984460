"""The InLong decoder's options (`wirecodecs.options`)."""

from __future__ import annotations

import dataclasses

from wirecodecs.options import OptionError, Options

FRAMINGS = ("message", "length_prefixed")


@dataclasses.dataclass(frozen=True)
class InlongOptions(Options):
    FORMAT = "inlong"

    framing: str = "message"  # message: one message per file | length_prefixed: u32 BE + message
    max_message_bytes: int = 64 << 20  # a longer message (or length prefix) is not trusted
    max_decompressed_bytes: int = 128 << 20  # per snappy block / V4 body: a bigger output is a bomb
    batch_rows: int = 65536  # rows per yielded Arrow record batch (at most)

    def check(self) -> None:
        self.one_of("framing", FRAMINGS)
        self.positive("max_message_bytes", "max_decompressed_bytes", "batch_rows")
        if self.max_message_bytes >= 1 << 31:
            raise OptionError("inlong option max_message_bytes must be below 2 GiB")

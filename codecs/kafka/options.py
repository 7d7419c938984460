"""The Kafka decoder's options (`wirecodecs.options`)."""

from __future__ import annotations

import dataclasses

from wirecodecs.options import OptionError, Options


@dataclasses.dataclass(frozen=True)
class KafkaOptions(Options):
    FORMAT = "kafka"

    max_frame_bytes: int = 128 << 20  # a larger size field is not trusted: rest of file quarantined
    max_decompressed_bytes: int = 128 << 20  # per batch / wrapper: a bigger output is a bomb
    batch_rows: int = 65536  # rows per yielded Arrow record batch (at most)

    def check(self) -> None:
        self.positive("max_frame_bytes", "max_decompressed_bytes", "batch_rows")
        if self.max_decompressed_bytes >= 1 << 31:
            raise OptionError("kafka option max_decompressed_bytes must be below 2 GiB")

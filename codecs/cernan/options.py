"""The cernan decoder's options (`wirecodecs.options`)."""

from __future__ import annotations

import dataclasses

from wirecodecs.cernan.packet import MAX_DECOMPRESSED_BYTES
from wirecodecs.options import Options

UNITS_US = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": 0.001}  # option `event_time_unit`


@dataclasses.dataclass(frozen=True)
class CernanOptions(Options):
    FORMAT = "cernan"

    batch_rows: int = 65536  # rows per yielded Arrow record batch (at most)
    # safety bound: a larger length is never buffered (cernan's own limit is 1 MiB; above
    # it packets decode with the warning exceeds_cernan_max_payload)
    max_packet_bytes: int = 64 << 20
    max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES  # per Avro block
    resync: bool = False  # after a framing error, scan for the next plausible packet
    datum_schema_file: str = ""  # .avsc of the expected datum: typed `record` column
    event_time_field: str = ""  # datum field (dotted path) that gives event_time
    event_time_unit: str = "ms"  # for a numeric event_time_field: s | ms | us | ns

    def check(self) -> None:
        self.positive("batch_rows", "max_packet_bytes", "max_decompressed_bytes")
        self.one_of("event_time_unit", UNITS_US)

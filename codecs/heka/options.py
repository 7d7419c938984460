"""The Heka decoder's options (`wirecodecs.options`)."""

from __future__ import annotations

import dataclasses

from wirecodecs.options import OptionError, Options


@dataclasses.dataclass(frozen=True)
class HekaOptions(Options):
    FORMAT = "heka"

    # A larger message_length is not trusted: the search resumes inside (Heka's default
    # is 64 KiB; Mozilla readers impose none). Memory per frame is bounded by it.
    max_message_size: int = 8 << 20
    # JSON file {"<hmac_signer>_<hmac_key_version>": "<key>"}, read once per file; "" = none.
    hmac_keys_file: str = ""
    batch_rows: int = 8192  # rows per yielded Arrow record batch (at most)

    def check(self) -> None:
        self.positive("max_message_size", "batch_rows")
        if self.max_message_size >= 1 << 31:
            raise OptionError("heka option max_message_size must be below 2 GiB")

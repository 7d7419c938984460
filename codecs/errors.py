"""The one error type every decoder raises for bad input.

A decode error always says where it happened (format, source, byte offset) and what kind
of damage it is, so that a quarantine row or a log line points at bytes a person can open.
"""

from __future__ import annotations


class DecodeError(Exception):
    """Undecodable input: carries format, source, byte offset, a short kind and a detail.

    `kind` is a stable snake_case code (e.g. ``crc_mismatch``, ``length_out_of_range``,
    ``decompress_failed``) that downstream tables group by; `detail` is prose for people.
    """

    def __init__(
        self,
        format: str,
        kind: str,
        detail: str,
        *,
        source: str | None = None,
        offset: int | None = None,
    ) -> None:
        self.format = format
        self.kind = kind
        self.detail = detail
        self.source = source
        self.offset = offset
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.source or '<stream>'}@{self.offset if self.offset is not None else '?'}"
        return f"{self.format} {self.kind} at {where}: {self.detail}"

    def __reduce__(self):  # keep the keyword-only fields across pickling (Spark executors)
        return _rebuild, (self.format, self.kind, self.detail, self.source, self.offset)


def _rebuild(format, kind, detail, source, offset):
    return DecodeError(format, kind, detail, source=source, offset=offset)

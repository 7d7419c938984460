"""InLong attribute strings: Java's modified UTF-8, and the two ways InLong splits them.

* `mutf8` decodes what `DataOutput.writeUTF` wrote (V0-V3 attribute blocks).
* `split_strict` is Guava's `Splitter.on('&').trimResults().withKeyValueSeparator('=')`,
  which `InLongMsg` applies to V4 common and private attributes: entries trimmed with
  `guava_trim`, and an entry without `=`, a value holding `=`, or a repeated key is an
  error (Java throws IllegalArgumentException).
* `split_lenient` is Sort's `StringUtils.splitKv(attr, '&', '=')` (format-common), the way
  InLong's consumers read V0-V3 attribute strings (docs/inlong.md, "Row model").
* `event_time_ms` picks the event time the way Sort's `parseHead` does: `t`, else `dt`.
"""

from __future__ import annotations

import datetime as dt
import re

from wirecodecs.errors import DecodeError
from wirecodecs.rows import EPOCH

FORMAT = "inlong"
_NUL = b"\xc0\x80"  # modified UTF-8's two-byte U+0000
_BAD_MUTF8 = re.compile(rb"[\xf0-\xff]")  # Java's readUTF has no 4-byte sequences
_T_LAYOUTS = ((12, "%Y%m%d%H%M"), (10, "%Y%m%d%H"), (8, "%Y%m%d"))  # by length, longest first
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")  # what Long.parseLong accepts (ASCII digits)
# Guava's CharMatcher.whitespace() (its WHITESPACE table: Unicode White_Space), which
# `trimResults()` trims. Not Python's str.strip() set: that one also holds U+001C-U+001F.
GUAVA_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def mutf8(raw: bytes, what: str) -> str:
    """Java modified UTF-8 (`readUTF`): C0 80 is U+0000 and characters outside the BMP are
    two 3-byte surrogates (CESU-8), which are paired again here."""
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        pass
    if _BAD_MUTF8.search(raw):
        raise DecodeError(FORMAT, "invalid_attribute", f"{what}: not modified UTF-8 (4-byte form)")
    try:
        text = raw.replace(_NUL, b"\0").decode("utf-8", "surrogatepass")
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeError as err:
        raise DecodeError(FORMAT, "invalid_attribute", f"{what}: {err.reason}") from None


def utf8(raw: bytes, what: str) -> str:
    """A V3 private or V4 attribute (`new String(bytes)` under a UTF-8 JVM). Java would put
    U+FFFD in for malformed bytes; here they are an error (the frame is quarantined)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DecodeError(FORMAT, "invalid_attribute", f"{what}: {err.reason}") from None


def guava_trim(text: str) -> str:
    """`CharMatcher.whitespace().trimFrom(text)`: Guava's whitespace off both ends."""
    return text.strip(GUAVA_WHITESPACE)


def split_strict(text: str, what: str) -> dict[str, str]:
    """Guava's strict map splitter (V4): entries trimmed, exactly one `=` each, no key
    twice; anything else is the error Java throws from `getAttrs()`."""
    out: dict[str, str] = {}
    for chunk in text.split("&"):
        entry = guava_trim(chunk)
        key, sep, value = entry.partition("=")
        if not sep or "=" in value:
            raise DecodeError(FORMAT, "invalid_attribute", f"{what}: entry {entry!r} is not k=v")
        if key in out:
            raise DecodeError(FORMAT, "invalid_attribute", f"{what}: duplicate key {key!r}")
        out[key] = value
    return out


def split_lenient(text: str) -> dict[str, str]:
    """Sort's `splitKv(text, '&', '=')`: the first `=` of an entry ends its key (later ones
    stay in the value), a chunk without `=` is a key with an empty value, the last of a
    repeated key wins. The `"" -> ""` entry Sort makes of an empty chunk is left out."""
    out: dict[str, str] = {}
    for chunk in text.split("&"):
        key, _, value = chunk.partition("=")
        if key or value:
            out[key] = value
    return out


def event_time_ms(attributes: dict[str, str]) -> int | None:
    """Sort's head time: `t` as yyyyMMdd / yyyyMMddHH / yyyyMMddHHmm (by its length, any
    suffix ignored; UTC here, the JVM's default zone in Sort), else `dt` as epoch ms; None
    when neither is there or readable (Sort fails the message)."""
    t = attributes.get("t")
    if t is not None:
        for length, layout in _T_LAYOUTS:
            if len(t) >= length:
                return _parse_t(t[:length], layout)
        return None
    value = attributes.get("dt")
    if value is None or not _JAVA_LONG.fullmatch(value):
        return None
    ms = int(value)
    return ms if -(1 << 63) <= ms < 1 << 63 else None


def _parse_t(text: str, layout: str) -> int | None:
    if not text.isdigit():
        return None
    try:
        moment = dt.datetime.strptime(text, layout).replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    return (moment - EPOCH) // dt.timedelta(milliseconds=1)

"""Attribute strings: Java's modified UTF-8, InLong's strict (V4) and Sort's lenient
(V0-V3) splitters, and Sort's event time rules, on hand-written cases from the spec."""

from __future__ import annotations

import datetime as dt

import pytest

from wirecodecs.errors import DecodeError
from wirecodecs.inlong.attributes import (
    event_time_ms,
    guava_trim,
    mutf8,
    split_lenient,
    split_strict,
)

# Guava's CharMatcher.Whitespace.TABLE as Guava (32.x, the version the spec's vectors were
# made with) writes it: a hash table, hence the order and the repeated U+3000 fillers
GUAVA_TABLE = (
    "\u2002\u3000\r\u0085\u200a\u2005\u2000\u3000"
    "\u2029\u000b\u3000\u2008\u2003\u205f\u3000\u1680"
    "\u0009\u0020\u2006\u2001\u202f\u00a0\u000c\u2009"
    "\u3000\u2004\u3000\u3000\u2028\n\u2007\u3000"
)
GUAVA = set(GUAVA_TABLE)
PYTHON = {chr(c) for c in range(0x110000) if chr(c).isspace()}  # what str.strip() trims


def ms(*args) -> int:
    return int(dt.datetime(*args, tzinfo=dt.UTC).timestamp() * 1000)


def test_mutf8_nul_and_supplementary_characters():
    # Java's modified UTF-8 (docs/inlong.md, V0-V3 blocks): U+0000 is C0 80, U+1F600 two
    # 3-byte surrogates
    assert mutf8(b"a\xc0\x80b", "x") == "a\0b"
    assert mutf8(b"\xed\xa0\xbd\xed\xb8\x80", "x") == "\U0001f600"
    assert mutf8("中文".encode(), "x") == "中文"


@pytest.mark.parametrize(
    "raw", [b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"\xed\xa0\xbd"]
)  # 4-byte form, bad lead, cut sequence, unpaired surrogate
def test_mutf8_rejects(raw):
    with pytest.raises(DecodeError) as err:
        mutf8(raw, "attr")
    assert err.value.kind == "invalid_attribute"


def test_lenient_split_reads_like_sort():
    assert split_lenient("a=1&b=x=y&flag&&c=") == {"a": "1", "b": "x=y", "flag": "", "c": ""}
    assert split_lenient("k=1&k=2") == {"k": "2"}
    assert split_lenient("") == {}


def test_guava_and_python_whitespace_differ():
    """The sets are not the same (else the test below would check nothing)."""
    only_python, only_guava = PYTHON - GUAVA, GUAVA - PYTHON
    assert len(GUAVA) == 25
    assert only_python == {"\x1c", "\x1d", "\x1e", "\x1f"}
    assert not only_guava  # on this Python; the test below covers either way


@pytest.mark.parametrize("char", sorted(GUAVA ^ PYTHON) + sorted(GUAVA))
def test_attributes_are_trimmed_as_guava_trims(char):
    """Every character the two definitions disagree on, and every Guava whitespace:
    Guava's trimResults() trims it from both ends of an entry, and only then."""
    text = f"{char}{char}k={char}v{char}"
    if char in GUAVA:
        assert guava_trim(text) == f"k={char}v"
        assert split_strict(f"a=1&{text}", "x") == {"a": "1", "k": f"{char}v"}
    else:
        assert guava_trim(text) == text
        assert split_strict(f"a=1&{text}", "x") == {"a": "1", f"{char}{char}k": f"{char}v{char}"}


def test_strict_split_is_guavas():
    assert split_strict(" a=1 & b = 2", "x") == {"a": "1", "b ": " 2"}
    for text in ("a=1&junk", "url=a=b", "a=1&a=2", "a=1&&b=2"):
        with pytest.raises(DecodeError):
            split_strict(text, "x")


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [
        ({"t": "20240301", "dt": "5"}, ms(2024, 3, 1)),
        ({"t": "2024030113q"}, ms(2024, 3, 1, 13)),
        ({"t": "202403011345"}, ms(2024, 3, 1, 13, 45)),
        ({"t": "2024030"}, None),
        ({"t": "2024139912"}, None),
        ({"dt": "1700000000123"}, 1700000000123),
        ({"dt": "-5"}, -5),
        ({"dt": "1_000"}, None),
        ({"dt": "9223372036854775808"}, None),
        ({}, None),
    ],
)
def test_event_time_t_then_dt(attributes, expected):
    assert event_time_ms(attributes) == expected

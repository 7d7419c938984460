"""Strings as the Heka row model shows them: text, with the bytes kept where not UTF-8.

Shared by the pure walk's flush and the compiled walk's (which calls these only for a
column that holds invalid UTF-8: `arrow_texts` checks whole columns in Arrow)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain

import numpy as np
import pyarrow as pa

from wirecodecs.heka.message import VALUE_TYPES


class _ValueTypeNames(dict):
    """Field.value_type codes to their names (absent means STRING); other codes as text."""

    def __missing__(self, code: int) -> str:
        return str(code)


VALUE_TYPE_NAMES = _ValueTypeNames({None: "STRING", **dict(enumerate(VALUE_TYPES))})


def _text(raw: bytes | None) -> tuple[str | None, bytes | None]:
    """A string as text, and its bytes when they are not UTF-8 (else None)."""
    if raw is None:
        return None, None
    try:
        return raw.decode(), None
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), raw


def _all_utf8(values: Iterable[bytes | None]) -> bool:
    """Whether every value is UTF-8, checked in one decode: joined by NUL bytes, which no
    multi-byte sequence can span, the whole is UTF-8 exactly when each value is."""
    try:
        b"\0".join(filter(None, values)).decode()
    except UnicodeDecodeError:
        return False
    return True


def texts(values: Sequence[bytes | None]) -> tuple[pa.Array, pa.Array]:
    """A string column and its `*_raw` twin from bytes (None: null). The common case, all
    UTF-8, is the bytes as they are, seen as strings; else value by value (`_text`)."""
    if _all_utf8(values):
        return pa.array(values, pa.binary()).view(pa.string()), pa.nulls(len(values), pa.binary())
    texts_, raws = zip(*map(_text, values), strict=True)
    return pa.array(texts_, pa.string()), pa.array(raws, pa.binary())


def text_lists(lists: Sequence[tuple[bytes, ...]]) -> tuple[pa.Array, pa.Array]:
    """The fields' `value_string` and `value_string_raw` (every element's bytes where any
    element of that Field is not UTF-8, else null), like `texts` for lists."""
    if _all_utf8(chain.from_iterable(lists)):
        texts_ = pa.array(lists, pa.list_(pa.binary())).view(pa.list_(pa.string()))
        return texts_, pa.nulls(len(lists), pa.list_(pa.binary()))
    texts_, raws = [], []
    for values in lists:
        try:
            texts_.append(tuple(map(bytes.decode, values)))
            raws.append(None)
        except UnicodeDecodeError:
            texts_.append(tuple(value.decode("utf-8", "replace") for value in values))
            raws.append(values)
    return pa.array(texts_, pa.list_(pa.string())), pa.array(raws, pa.list_(pa.binary()))


def _is_utf8(array: pa.Array) -> bool:
    """Whether every value of a binary (or list of binary) array is UTF-8: at once when its
    value bytes are all ASCII (a single numpy pass, the common case), else by Arrow's full
    validation of the same buffers seen as strings, which checks each value on its own."""
    values = array.buffers()[-1]  # the value bytes (last for both layouts)
    if values is None or np.frombuffer(values, np.uint8).max(initial=0) < 0x80:
        return True
    as_text = array.view(pa.list_(pa.string()) if pa.types.is_list(array.type) else pa.string())
    try:
        as_text.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def arrow_texts(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """`texts` of a binary array: the same arrays, without a Python object per value
    unless some value is not UTF-8."""
    if _is_utf8(values):
        return values.view(pa.string()), pa.nulls(len(values), pa.binary())
    return texts(values.to_pylist())


def arrow_text_lists(lists: pa.Array) -> tuple[pa.Array, pa.Array]:
    """`text_lists` of a list<binary> array, likewise."""
    if _is_utf8(lists):
        return lists.view(pa.list_(pa.string())), pa.nulls(len(lists), pa.list_(pa.binary()))
    return text_lists([tuple(values) for values in lists.to_pylist()])

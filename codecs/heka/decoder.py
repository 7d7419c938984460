"""Decoder for Heka framed protobuf streams: 0x1E, header length, header, 0x1F, body.

The walk (docs/heka.md, "Record framing") looks for a record separator, checks that the
header length lands on the unit separator, that the header parses, and that its
`message_length` is in 1..`max_message_size`; anything else is not a frame, and the search
goes on one byte after that 0x1E (Heka's splitter), the bytes passed over counted as
skipped garbage. A frame is consumed whole (bodies are never rescanned): its body is a raw
snappy block or a protobuf Message (found by trial, snappy first, as Mozilla's readers
do); a body that is neither, or a message without a timestamp, is quarantined. A uuid
that is not 16 bytes (36 characters of text, as python_moztelemetry's streams have, or
none at all, as Heka's Go client test sends) is a verdict (`uuid_valid`), not a filter,
like an HMAC signature (`hmac_valid`, `hmac_status`). A frame cut by the end of the
stream is a truncated tail.

Whole-file gzip and zstd are recognised by their magic bytes and inflated as a stream
(`inflate`); offsets are then offsets in the inflated stream, and the file's byte
accounting is folded back onto the compressed bytes (see `_fold`). A file that only
starts like one (the inflater chokes before anything is framed) is walked again as a
plain stream, and is one if that frames anything.
"""

from __future__ import annotations

import contextlib
import hmac
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import BinaryIO, NamedTuple

import pyarrow as pa

from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.binary import read_uvarint
from wirecodecs.compression import decompress
from wirecodecs.errors import DecodeError
from wirecodecs.heka.message import (
    DEFAULT_SEVERITY,
    FIELD_MEMBERS,
    HASH_FUNCTIONS,
    VALUE_TYPES,
    Field,
    Header,
    Message,
    parse_header,
    parse_message,
)
from wirecodecs.heka.options import HekaOptions
from wirecodecs.heka.schema import FIELD_TYPE, HEKA_SCHEMA
from wirecodecs.inflate import Inflated, RawSource
from wirecodecs.rows import EVENT_TIME_MAX_MS, EVENT_TIME_MIN_MS, FLUSH_BYTES
from wirecodecs.stream import StreamWindow

FORMAT = "heka"

RS, US = 0x1E, 0x1F
_RS = b"\x1e"
_FRAME, _NOT_FRAME, _SHORT = "frame", "not_frame", "short"
_NS_PER_US = 1000
_EVENT_NS_MIN = EVENT_TIME_MIN_MS * 1_000_000
_EVENT_NS_MAX = EVENT_TIME_MAX_MS * 1_000_000 + 999_999


def decode(
    stream: BinaryIO, source: str, accounting: FileAccounting, opts: HekaOptions
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Walk a Heka stream (plain, gzip or zstd); yield row batches and quarantined frames in
    stream order and fill `accounting` (see the module docstring for the damage policy)."""
    keys = load_hmac_keys(opts.hmac_keys_file)
    raw = RawSource(stream)
    codec = raw.sniff()
    if codec is None:
        try:
            yield from _walk(StreamWindow(raw), source, accounting, opts, keys)
        finally:
            accounting.bytes_total += raw.raw_bytes
        return
    inflated = Inflated(raw, codec, FORMAT)
    walked = FileAccounting(source, FORMAT)
    yield from _walk(StreamWindow(inflated), source, walked, opts, keys)
    if not _framed(walked) and not inflated.clean and raw.rewind():
        # Nothing framed and the inflater choked: perhaps a plain stream whose garbage
        # before its first frame looks like a magic. Walked again as plain, it is one if
        # that frames anything (nothing was yielded so far: nothing counts twice).
        plain = FileAccounting(source, FORMAT)
        yield from _walk(StreamWindow(raw), source, plain, opts, keys)
        if _framed(plain):
            plain.bytes_total = raw.raw_bytes
            _add(plain, accounting)
            return
    inflated.finish()
    if inflated.failure is not None:
        yield Quarantined.from_frame(
            source,
            inflated.failure_offset,
            inflated.failure_head,
            inflated.failure.kind,
            f"{inflated.failure.detail} (offset and length in compressed bytes)",
            length=inflated.failed_bytes,
        )
    _fold(walked, inflated, raw.raw_bytes)
    _add(walked, accounting)


def load_hmac_keys(path: str) -> dict[str, bytes]:
    """The signer table: "<signer>_<key version>" -> key bytes (the UTF-8 of the string).

    A missing or malformed file is a configuration error (ValueError), not bad input."""
    if not path:
        return {}
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"heka option hmac_keys_file: cannot read {path}: {err}") from None
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in table.items()
    ):
        raise ValueError(f"heka option hmac_keys_file: {path} must map strings to strings")
    return {signer: key.encode() for signer, key in table.items()}


# ---- framing -----------------------------------------------------------------------------


def _probe(view: memoryview, at: int, max_len: int) -> tuple[str, int, Header | None]:
    """Whether a frame starts at `view[at]` (an RS): (_FRAME, frame length, header),
    (_NOT_FRAME, 0, None), or (_SHORT, bytes needed from `at`, header if it was read)
    when the view ends first."""
    have = len(view) - at
    if have < 2:
        return _SHORT, 2, None
    hlen = view[at + 1]
    if have < hlen + 3:
        return _SHORT, hlen + 3, None
    if view[at + 2 + hlen] != US:
        return _NOT_FRAME, 0, None
    try:
        header = parse_header(bytes(view[at + 2 : at + 2 + hlen]))
    except DecodeError:
        return _NOT_FRAME, 0, None
    length = header.message_length
    if not length or length > max_len:  # absent (1E 00 1F), zero, or over the limit
        return _NOT_FRAME, 0, None
    total = hlen + 3 + length
    if have < total:
        return _SHORT, total, header
    return _FRAME, total, header


def _later_frame(view: memoryview, max_len: int) -> int:
    """The first position after 0 where a complete frame starts, or -1 (end of stream)."""
    data = bytes(view)  # under 258 bytes: what is left of a stream that ends in a header
    at = data.find(_RS, 1)
    while at >= 0:
        if _probe(view, at, max_len)[0] == _FRAME:
            return at
        at = data.find(_RS, at + 1)
    return -1


def _walk(
    window: StreamWindow,
    source: str,
    acc: FileAccounting,
    opts: HekaOptions,
    keys: Mapping[str, bytes],
) -> Iterator[pa.RecordBatch | Quarantined]:
    max_len = opts.max_message_size
    rows = _Rows(source, opts.batch_rows)
    fields_seen: dict[bytes, Field] = {}  # parse_message's memo of Fields, for this stream
    after_garbage = False  # bytes were skipped since the last frame
    need = 3
    view = None  # everything buffered from the position, while known without the window
    while True:
        if view is None or len(view) < need:
            have = window.fill(need)
            if have == 0:
                break
            view = window.peek(have)
        have = len(view)
        if view[0] != RS:
            at = window.find(_RS, have)
            _skip(window, acc, have if at < 0 else at)
            after_garbage, need, view = True, 3, None
            continue
        state, size, header = _probe(view, 0, max_len)
        if state == _NOT_FRAME:
            _skip(window, acc, 1)
            after_garbage, need, view = True, 3, None
            continue
        if state == _SHORT:
            if have >= need:  # more may come: ask for what the frame needs
                need = size
                continue
            if header is None and (later := _later_frame(view, max_len)) > 0:
                _skip(window, acc, later)  # a bogus header length swallowed real frames
                after_garbage, need, view = True, 3, None
                continue
            if after_garbage and header is None:
                _skip(window, acc, have)
            else:
                acc.count_truncated_tail(have)
                window.consume(have)
            break
        start = window.offset
        frame = view[:size]
        window.consume(size)
        after_garbage, need, view = False, 3, view[size:]  # what `peek` would now give
        try:
            row = _row(frame, header, keys, max_len, fields_seen)
        except DecodeError as err:
            yield from rows.flush()
            yield _quarantine(frame, start, source, acc, err)
            continue
        acc.count_good(size)
        rows.add(start, size, row)
        if rows.full:
            yield from rows.flush()
    yield from rows.flush()


def _skip(window: StreamWindow, acc: FileAccounting, n: int) -> None:
    acc.count_skipped(n)
    window.consume(n)


def _quarantine(
    frame: memoryview, start: int, source: str, acc: FileAccounting, err: DecodeError
) -> Quarantined:
    acc.count_bad(len(frame), records_lost=1)
    return Quarantined.from_frame(source, start, frame, err.kind, err.detail)


def _framed(acc: FileAccounting) -> bool:
    """Whether a walk found any frame (it yields nothing before its first)."""
    return acc.frames_good + acc.frames_bad > 0


_BYTES = ("bytes_decoded", "bytes_quarantined", "bytes_truncated_tail", "bytes_skipped")
_COUNTS = ("bytes_total", *_BYTES, "frames_good", "frames_bad", "records_good", "records_bad")


def _add(walked: FileAccounting, acc: FileAccounting) -> None:
    """A walk's counts added to the file's, which ends as the walk did."""
    for name in _COUNTS:
        setattr(acc, name, getattr(acc, name) + getattr(walked, name))
    acc.stop_reason = walked.stop_reason


def _fold(walked: FileAccounting, inflated: Inflated, raw_total: int) -> None:
    """`walked`, the accounting of an inflated stream, turned into compressed file bytes:
    the raw bytes that inflated are shared among decoded, quarantined, truncated and skipped
    in proportion to the inflated stream's counts (a compressed byte has no exact
    counterpart); bytes that would not inflate are quarantined, bytes after the last member
    skipped."""
    inflated_raw = raw_total - inflated.failed_bytes - inflated.trailing_bytes
    parts = [getattr(walked, name) for name in _BYTES]
    if not any(parts):  # nothing came out: the bytes are what stopped it, or a clean empty
        stopped_by = 1 if inflated.failure is not None else 2 if inflated.truncated else 0
        parts = [int(i == stopped_by) for i in range(len(parts))]
    for name, share in zip(_BYTES, _apportion(inflated_raw, parts), strict=True):
        setattr(walked, name, share)
    walked.bytes_total = raw_total
    walked.count_skipped(inflated.trailing_bytes)
    if inflated.failure is not None:
        walked.count_bad(inflated.failed_bytes)
        walked.stop_reason = inflated.failure.kind
    elif inflated.truncated:
        walked.stop_reason = "truncated_tail"


def _apportion(total: int, parts: list[int]) -> list[int]:
    """`total` split in proportion to `parts` (not all zero), by largest remainders."""
    whole = sum(parts)
    shares = [total * part // whole for part in parts]
    order = sorted(range(len(parts)), key=lambda i: (total * parts[i]) % whole, reverse=True)
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares


# ---- one record ------------------------------------------------------------------------


class RowValues(NamedTuple):
    """One record's columns that `_row` fills; the walk knows the rest. Strings come as
    bytes: those with a `*_raw` twin (`_TWINNED`) fill both columns, hmac_signer only its
    text. A 16-byte uuid comes as its canonical text, any other as sent."""

    hmac_valid: bool | None
    event_time: int | None
    hmac_status: str | None
    uuid: bytes | None
    uuid_valid: bool
    timestamp: int
    type: bytes | None
    logger: bytes | None
    severity: int
    severity_present: bool
    payload: bytes | None
    env_version: bytes | None
    pid: int | None
    hostname: bytes | None
    unknown_fields: bytes | None
    hmac_hash_function: str | None
    hmac_signer: bytes | None
    hmac_key_version: int | None
    hmac: bytes | None
    body_encoding: str


def _hmac_status(header: Header, body: bytes, keys: Mapping[str, bytes]) -> str | None:
    """Heka's `authenticateMessage` as a verdict: None when unsigned (no `hmac`), else
    valid, invalid_digest, unknown_signer (no key for "<signer>_<version>") or
    unsupported_hash (a hash function code other than MD5/SHA1)."""
    if header.hmac is None:
        return None
    code = header.hmac_hash_function or 0
    if code not in (0, 1):
        return "unsupported_hash"
    signer = (header.hmac_signer or b"").decode("utf-8", "replace")
    key = keys.get(f"{signer}_{header.hmac_key_version or 0}")
    if key is None:
        return "unknown_signer"
    digest = hmac.digest(key, body, "sha1" if code else "md5")
    return "valid" if hmac.compare_digest(digest, header.hmac) else "invalid_digest"


def _maybe_snappy(body: bytes, max_len: int) -> bool:
    """Whether `body` can be a raw snappy block: its leading varint (the uncompressed
    length) must allow a block this long (snappy's MaxCompressedLength: 32 + n + n/6)."""
    declared = body[0]  # a frame's body is never empty
    if declared >= 0x80:
        try:
            declared, _ = read_uvarint(FORMAT, body, 0, 5, "snappy length")
        except DecodeError:
            return False
    return 0 < declared <= max_len and len(body) <= 32 + declared + declared // 6


def _strict(message: Message | None) -> bool:
    """lua_sandbox's checks: a 16-byte uuid and a timestamp (Heka Go checks neither)."""
    return (
        message is not None
        and message.timestamp is not None
        and message.uuid is not None
        and len(message.uuid) == 16
    )


def _body_message(
    body: bytes, max_len: int, fields_seen: dict[bytes, Field]
) -> tuple[Message, str, bool]:
    """The Message in a body, its encoding and whether its uuid is the 16 bytes
    message.proto defines, found by trial as Mozilla's readers do: a raw snappy block that
    inflates to a message, else a plain protobuf. A message that passes lua_sandbox's
    checks wins over one that does not, so that a plain body is not taken for a snappy
    block by chance. A message without a timestamp is not a row: that is the error raised
    when one of the two readings gave a message (the inflated one first), else the plain
    reading's."""
    inflated = None
    if _maybe_snappy(body, max_len):
        with contextlib.suppress(DecodeError):
            inflated = parse_message(decompress("snappy", body, max_len, fmt=FORMAT), fields_seen)
        if _strict(inflated):
            return inflated, "snappy", True
    try:
        plain = parse_message(body, fields_seen)
    except DecodeError:
        if inflated is None:
            raise
        plain = None
    if _strict(plain):
        return plain, "protobuf", True
    for message, encoding in ((inflated, "snappy"), (plain, "protobuf")):
        if message is not None and message.timestamp is not None:
            return message, encoding, False  # not strict for its uuid
    raise DecodeError(FORMAT, "missing_timestamp", "message has no timestamp")


def _row(
    frame: memoryview,
    header: Header,
    keys: Mapping[str, bytes],
    max_len: int,
    fields_seen: dict[bytes, Field],
) -> tuple[RowValues, tuple[Field, ...]]:
    """One record's values (strings still bytes: `_Rows.flush` turns whole columns into
    text), and its Fields (raises DecodeError for a bad body)."""
    body = bytes(frame[len(frame) - header.message_length :])
    status = _hmac_status(header, body, keys)
    message, encoding, uuid_valid = _body_message(body, max_len, fields_seen)
    uuid = message.uuid
    if uuid_valid:
        hex_ = uuid.hex()
        uuid = f"{hex_[:8]}-{hex_[8:12]}-{hex_[12:16]}-{hex_[16:20]}-{hex_[20:]}".encode()
    timestamp = message.timestamp
    severity = message.severity
    code = header.hmac_hash_function
    values = RowValues(
        None if status is None else status == "valid",
        timestamp // _NS_PER_US if _EVENT_NS_MIN <= timestamp <= _EVENT_NS_MAX else None,
        status,
        uuid,
        uuid_valid,
        timestamp,
        message.type,
        message.logger,
        DEFAULT_SEVERITY if severity is None else severity,
        severity is not None,
        message.payload,
        message.env_version,
        message.pid,
        message.hostname,
        message.unknown,
        None if code is None else HASH_FUNCTIONS[code] if code in (0, 1) else str(code),
        header.hmac_signer,
        header.hmac_key_version,
        header.hmac,
        encoding,
    )
    return values, message.fields


_TWINNED = frozenset(("uuid", "type", "logger", "payload", "env_version", "hostname"))


class _ValueTypeNames(dict):
    """Field.value_type codes to their names (absent means STRING); other codes as text."""

    def __missing__(self, code: int) -> str:
        return str(code)


_VALUE_TYPE_NAMES = _ValueTypeNames({None: "STRING", **dict(enumerate(VALUE_TYPES))})


class _Rows:
    """Records decoded since the last flush, turned into Arrow columns in one go.

    A row is kept as its `RowValues` and the Fields of all rows in one flat list: no
    per-row list, and Fields are plain tuples of atoms, which the garbage collector stops
    tracking, so its full collections do not scan them until the flush."""

    def __init__(self, source: str, batch_rows: int) -> None:
        self.source = source
        self.batch_rows = batch_rows
        self._reset()

    def _reset(self) -> None:
        self.offsets: list[int] = []
        self.lengths: list[int] = []
        self.rows: list[RowValues] = []
        self.fields: list[Field] = []
        self.field_ends: list[int] = [0]
        self.data_bytes = 0

    def add(self, offset: int, length: int, row: tuple[RowValues, tuple[Field, ...]]) -> None:
        values, fields = row
        self.offsets.append(offset)
        self.lengths.append(length)
        self.rows.append(values)
        self.fields += fields
        self.field_ends.append(len(self.fields))
        self.data_bytes += length

    @property
    def full(self) -> bool:
        return len(self.rows) >= self.batch_rows or self.data_bytes >= FLUSH_BYTES

    def flush(self) -> Iterator[pa.RecordBatch]:
        if not self.rows:
            return
        n = len(self.rows)
        arrays = {
            "source_file": pa.repeat(pa.scalar(self.source, pa.string()), n),
            "byte_offset": pa.array(self.offsets, pa.int64()),
            "frame_length": pa.array(self.lengths, pa.int32()),
            "fields": _fields_column(self.fields, self.field_ends),
        }
        for name, values in zip(RowValues._fields, zip(*self.rows, strict=True), strict=True):
            if name in _TWINNED:
                arrays[name], arrays[f"{name}_raw"] = _texts(values)
            elif name == "hmac_signer":
                arrays[name] = _texts(values)[0]
            else:
                arrays[name] = pa.array(values, HEKA_SCHEMA.field(name).type)
        self._reset()
        yield pa.RecordBatch.from_arrays(
            [arrays[name] for name in HEKA_SCHEMA.names], schema=HEKA_SCHEMA
        )


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


def _texts(values: Sequence[bytes | None]) -> tuple[pa.Array, pa.Array]:
    """A string column and its `*_raw` twin from bytes (None: null). The common case, all
    UTF-8, is the bytes as they are, seen as strings; else value by value (`_text`)."""
    if _all_utf8(values):
        return pa.array(values, pa.binary()).view(pa.string()), pa.nulls(len(values), pa.binary())
    texts, raws = zip(*map(_text, values), strict=True)
    return pa.array(texts, pa.string()), pa.array(raws, pa.binary())


def _text_lists(lists: Sequence[tuple[bytes, ...]]) -> tuple[pa.Array, pa.Array]:
    """The fields' `value_string` and `value_string_raw` (every element's bytes where any
    element of that Field is not UTF-8, else null), like `_texts` for lists."""
    if _all_utf8(chain.from_iterable(lists)):
        texts = pa.array(lists, pa.list_(pa.binary())).view(pa.list_(pa.string()))
        return texts, pa.nulls(len(lists), pa.list_(pa.binary()))
    texts, raws = [], []
    for values in lists:
        try:
            texts.append(tuple(map(bytes.decode, values)))
            raws.append(None)
        except UnicodeDecodeError:
            texts.append(tuple(value.decode("utf-8", "replace") for value in values))
            raws.append(values)
    return pa.array(texts, pa.list_(pa.string())), pa.array(raws, pa.list_(pa.binary()))


def _fields_column(fields: list[Field], ends: list[int]) -> pa.Array:
    """The list<struct> `fields` column: the Fields of all rows, row i's being
    `fields[ends[i]:ends[i + 1]]`. Fields repeat (`parse_message` hands out one object
    for the same bytes), so each distinct one is converted once, then gathered by index."""
    distinct, index = _distinct(fields)
    structs = _field_structs(distinct)
    if len(distinct) < len(fields):
        structs = structs.take(pa.array(index, pa.int32()))
    return pa.ListArray.from_arrays(
        pa.array(ends, pa.int32()), structs, type=HEKA_SCHEMA.field("fields").type
    )


def _distinct(items: list) -> tuple[list, list[int]]:
    """The distinct objects of `items` (by identity, first seen first) and, for each item,
    its position among them."""
    first: dict[int, int] = {}
    firsts = list(map(first.setdefault, map(id, items), range(len(items))))
    rank = {at: i for i, at in enumerate(first.values())}
    return [items[at] for at in first.values()], list(map(rank.__getitem__, firsts))


def _field_structs(fields: list[Field]) -> pa.StructArray:
    """The `FIELD_TYPE` struct of each Field, its strings made text column by column."""
    columns = zip(*fields, strict=True) if fields else [()] * len(FIELD_MEMBERS)
    names, codes, representations, strings, blobs, integers, doubles, bools, unknown = columns
    children = [
        *_texts(names),
        pa.array(list(map(_VALUE_TYPE_NAMES.__getitem__, codes)), pa.string()),
        *_texts(representations),
        *_text_lists(strings),
        pa.array(blobs, pa.list_(pa.binary())),
        pa.array(integers, pa.list_(pa.int64())),
        pa.array(doubles, pa.list_(pa.float64())),
        pa.array(bools, pa.list_(pa.bool_())),
        pa.array(unknown, pa.binary()),
    ]
    return pa.StructArray.from_arrays(children, fields=list(FIELD_TYPE))

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
import hashlib
import hmac
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np
import pyarrow as pa

from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.binary import read_uvarint
from wirecodecs.compiled import WALKS
from wirecodecs.compression import decompress
from wirecodecs.errors import DecodeError
from wirecodecs.heka.message import (
    DEFAULT_SEVERITY,
    FIELD_MEMBERS,
    HASH_FUNCTIONS,
    HMAC_STATUSES,
    Field,
    Header,
    Message,
    parse_header,
    parse_message,
)
from wirecodecs.heka.options import HekaOptions
from wirecodecs.heka.schema import FIELD_TYPE, HEKA_SCHEMA
from wirecodecs.heka.texts import VALUE_TYPE_NAMES, text_lists, texts
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


# A stream takes the pure walk until the process has read `WALK.pure_below` bytes of Heka
# (this stream's first ones counted) or taken the compiled walk: loading it from numba's
# cache costs more CPU than the pure walk spends on a smaller stream (docs/heka.md,
# "Compiled walk"; figures in docs/performance.md).
WALK = WALKS["heka"]
_FRAME_TABLE = 4096  # frames listed per compiled framing call
_SPARE_BYTES = 16 << 20  # inflated snappy bodies held at once (beyond one frame's)


def _walk(
    window: StreamWindow,
    source: str,
    acc: FileAccounting,
    opts: HekaOptions,
    keys: Mapping[str, bytes],
) -> Iterator[pa.RecordBatch | Quarantined]:
    compiled = WALK.compiled(lambda: window.fill(WALK.pure_below))
    try:
        if compiled is None:
            yield from _pure_walk(window, source, acc, opts, keys)
        else:
            yield from _compiled_walk(compiled, window, source, acc, opts, keys)
    finally:
        WALK.count(window.bytes_read)


def _compiled_walk(
    fp,
    window: StreamWindow,
    source: str,
    acc: FileAccounting,
    opts: HekaOptions,
    keys: Mapping[str, bytes],
) -> Iterator[pa.RecordBatch | Quarantined]:
    """The walk of `_pure_walk`, a buffered view at a time: `fp.frames` (`fp`: the module
    `compiled`) lists its frames, the snappy candidates are inflated and the signatures
    checked here (C calls per frame), `fp.messages` appends the rows to the flush's
    column buffers (`fp.Buffers`)."""
    max_len = opts.max_message_size
    buffers = fp.Buffers(source, opts.batch_rows)
    table = np.empty((fp.FRAME_ROWS, _FRAME_TABLE), np.int64)
    signers: dict[tuple, object] = {}  # (signer, key version, hash as listed) -> `_signing`
    after_garbage = False
    need = 3
    while True:
        have = window.fill(need)
        if have == 0:
            break
        view = window.peek(have)
        if have < need and view[0] == RS:  # the stream ends inside a frame candidate
            if _stream_ends(window, acc, view, _probe(view, 0, max_len)[2], after_garbage, max_len):
                break
            after_garbage, need = True, 3
            continue
        data = np.frombuffer(view, np.uint8)
        pos, need, count, skipped, after_garbage = fp.frames(data, max_len, table, after_garbage)
        acc.count_skipped(skipped)
        yield from _compiled_rows(
            fp,
            buffers,
            view,
            data,
            table,
            count,
            window.offset,
            source,
            acc,
            max_len,
            keys,
            signers,
        )
        window.consume(pos)
        need = need or 3
    if buffers.rows:
        yield buffers.flush()


def _compiled_rows(
    fp, buffers, view, data, table, count, base, source, acc, max_len, keys, signers
) -> Iterator[pa.RecordBatch | Quarantined]:
    """Rows (or quarantined frames) for the `count` frames listed in `table`."""
    first = 0
    while first < count:
        last, spare = _inflate(view, table, first, count, max_len, fp)
        _verify(view, table, first, last, keys, signers, fp)
        while first < last:
            rows, frame_bytes = int(buffers.used[fp.U_ROWS]), int(buffers.used[fp.U_FRAME_BYTES])
            first, why, need = fp.messages(
                data,
                spare,
                table,
                first,
                last,
                base,
                buffers.batch_rows,
                FLUSH_BYTES,
                buffers.buffers,
                buffers.used,
            )
            added = int(buffers.used[fp.U_ROWS]) - rows
            acc.bytes_decoded += int(buffers.used[fp.U_FRAME_BYTES]) - frame_bytes
            acc.frames_good += added
            acc.records_good += added
            if why == fp.FULL:
                yield buffers.flush()
            elif why == fp.GROW:
                buffers.grow(need)
            elif why == fp.BAD:
                if buffers.rows:
                    yield buffers.flush()
                start, size, body, length = table[
                    [fp.F_START, fp.F_SIZE, fp.F_BODY, fp.F_BODY_LEN], first
                ].tolist()
                try:
                    _body_message(bytes(view[body : body + length]), max_len, {})
                except DecodeError as err:
                    yield _quarantine(view[start : start + size], base + start, source, acc, err)
                else:
                    raise RuntimeError(
                        f"heka: the compiled walk rejects the frame at {base + start}"
                    )
                first += 1


def _inflate(view, table, first, count, max_len, fp) -> tuple[int, np.ndarray]:
    """The snappy trial's inflation for frames from `first` (snappy candidates only, those
    that inflate), back to back, until `_SPARE_BYTES` are held: (frame after the last one
    done, the inflated bodies)."""
    pieces, held = [], 0
    candidates = np.flatnonzero(table[fp.F_MAYBE_SNAPPY, first:count]) + first
    for f in candidates.tolist():
        if held >= _SPARE_BYTES:
            return f, np.frombuffer(b"".join(pieces), np.uint8)
        body = table[fp.F_BODY, f]
        try:
            piece = decompress(
                "snappy", bytes(view[body : body + table[fp.F_BODY_LEN, f]]), max_len, fmt=FORMAT
            )
        except DecodeError:
            continue
        table[fp.F_INFLATED, f] = held
        table[fp.F_INFLATED_LEN, f] = len(piece)
        pieces.append(piece)
        held += len(piece)
    return count, np.frombuffer(b"".join(pieces), np.uint8)


def _verify(view, table, first, last, keys, signers, fp) -> None:
    """The HMAC verdicts of the signed frames `first:last`, as codes in their F_STATUS."""
    signed = np.flatnonzero(table[fp.F_HMAC_LEN, first:last] >= 0) + first
    if not len(signed):
        return
    rows = [
        fp.F_HASH,
        fp.F_SIGNER,
        fp.F_SIGNER_LEN,
        fp.F_VERSION,
        fp.F_HMAC,
        fp.F_HMAC_LEN,
        fp.F_BODY,
        fp.F_BODY_LEN,
    ]
    codes = []
    for code, signer, signer_len, version, at, length, body, body_len in zip(
        *table[rows][:, signed].tolist(), strict=True
    ):
        signer_key = (
            bytes(view[signer : signer + signer_len]) if signer_len >= 0 else None,
            version,
            code,
        )
        signing = signers.get(signer_key)
        if signing is None:
            signing = signers[signer_key] = _signing(
                keys,
                0 if code == fp.NONE else code,
                signer_key[0],
                None if version == fp.NONE else version,
            )
        verdict = _verdict(signing, view[body : body + body_len], view[at : at + length])
        codes.append(_STATUS_CODES[verdict])
    table[fp.F_STATUS, signed] = codes


_STATUS_CODES = {status: code for code, status in enumerate(HMAC_STATUSES)}


def _pure_walk(
    window: StreamWindow,
    source: str,
    acc: FileAccounting,
    opts: HekaOptions,
    keys: Mapping[str, bytes],
) -> Iterator[pa.RecordBatch | Quarantined]:
    """The walk in pure Python (hosts without numba; the twin the tests hold the compiled
    walk to)."""
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
            if _stream_ends(window, acc, view, header, after_garbage, max_len):
                break
            after_garbage, need, view = True, 3, None
            continue
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


def _stream_ends(
    window: StreamWindow,
    acc: FileAccounting,
    view: memoryview,
    header: Header | None,
    after_garbage: bool,
    max_len: int,
) -> bool:
    """The stream ends inside the frame candidate at the position (`view`: all that is
    left; `header`: its header, when read): a truncated tail, or garbage. False when a
    bogus header length swallowed real frames: those are skipped to, and the walk goes on."""
    if header is None and (later := _later_frame(view, max_len)) > 0:
        _skip(window, acc, later)
        return False
    if after_garbage and header is None:
        _skip(window, acc, len(view))
    else:
        acc.count_truncated_tail(len(view))
        window.consume(len(view))
    return True


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
    signing = _signing(
        keys, header.hmac_hash_function or 0, header.hmac_signer, header.hmac_key_version
    )
    return _verdict(signing, body, header.hmac)


def _signing(keys: Mapping[str, bytes], code: int, signer: bytes | None, version: int | None):
    """What checks a body signed with hash function `code` by "<signer>_<version>" (signer
    as UTF-8 text, absent version 0): the verdict when no digest can be made, else the
    key's `_Pads` (the compiled walk keeps one per signer)."""
    if code not in (0, 1):
        return "unsupported_hash"
    key = keys.get(f"{(signer or b'').decode('utf-8', 'replace')}_{version or 0}")
    if key is None:
        return "unknown_signer"
    return _Pads.of(key, HASH_FUNCTIONS[code].lower())


_INNER_PAD = bytes(byte ^ 0x36 for byte in range(256))  # RFC 2104's ipad, as a table
_OUTER_PAD = bytes(byte ^ 0x5C for byte in range(256))  # and opad


class _Pads(NamedTuple):
    """An HMAC key as RFC 2104 uses it: the hash states after its inner and outer pads,
    copied per body. Cheaper than `hmac`'s copy of a keyed HMAC (two hash copies and no
    Python wrapper), the hashing still hashlib's."""

    inner: object
    outer: object

    @classmethod
    def of(cls, key: bytes, name: str) -> _Pads:
        inner = hashlib.new(name)
        if len(key) > inner.block_size:
            key = hashlib.new(name, key).digest()
        key = key.ljust(inner.block_size, b"\0")
        outer = inner.copy()
        inner.update(key.translate(_INNER_PAD))
        outer.update(key.translate(_OUTER_PAD))
        return cls(inner, outer)


def _verdict(signing, body, signature) -> str:
    """A signed body's HMAC verdict (see `_hmac_status`), `signing` from `_signing`; the
    digests compared in constant time."""
    if isinstance(signing, str):
        return signing
    inner = signing.inner.copy()
    inner.update(body)
    outer = signing.outer.copy()
    outer.update(inner.digest())
    return "valid" if hmac.compare_digest(outer.digest(), signature) else "invalid_digest"


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
                arrays[name], arrays[f"{name}_raw"] = texts(values)
            elif name == "hmac_signer":
                arrays[name] = texts(values)[0]
            else:
                arrays[name] = pa.array(values, HEKA_SCHEMA.field(name).type)
        self._reset()
        yield pa.RecordBatch.from_arrays(
            [arrays[name] for name in HEKA_SCHEMA.names], schema=HEKA_SCHEMA
        )


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
        *texts(names),
        pa.array(list(map(VALUE_TYPE_NAMES.__getitem__, codes)), pa.string()),
        *texts(representations),
        *text_lists(strings),
        pa.array(blobs, pa.list_(pa.binary())),
        pa.array(integers, pa.list_(pa.int64())),
        pa.array(doubles, pa.list_(pa.float64())),
        pa.array(bools, pa.list_(pa.bool_())),
        pa.array(unknown, pa.binary()),
    ]
    return pa.StructArray.from_arrays(children, fields=list(FIELD_TYPE))

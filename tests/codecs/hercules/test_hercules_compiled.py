"""The compiled event walk (`compiled.py`) against the pure `EventReader` on the same events:
rows identical, and every value the walk leaves to the pure reader fails or decodes there
with the same error or row. Events: the golden vectors' Kafka values, realistic log
events, each damaged at every byte, and rendering corner cases (floats of every bit
pattern class, escapes, non-ASCII, invalid UTF-8, duplicate keys)."""

from __future__ import annotations

import gzip
import json
import math
import random
import struct
import uuid

import pyarrow as pa
import pytest
from budget import sweep
from hercules_helpers import DATA

from wirecodecs.errors import DecodeError
from wirecodecs.hercules.compiled import Columns
from wirecodecs.hercules.decoder import read_value
from wirecodecs.hercules.encoder import Event, Value, encode_event
from wirecodecs.hercules.options import HerculesOptions
from wirecodecs.hercules.payload import decode_values
from wirecodecs.hercules.samples import log_event

OPTS = HerculesOptions()


def pure(values: list[bytes], opts: HerculesOptions = OPTS):
    """The rows and errors of `decode_values`, every value read by the pure reader."""
    columns = Columns(opts.max_depth)
    errors = []
    for index, value in enumerate(values):
        try:
            event, entries = read_value(value, opts)
        except DecodeError as err:
            errors.append((index, err.kind, err.offset, err.detail))
        else:
            columns.add_pure(index, event, entries)
    return columns.batch(None).to_pylist(), errors


def compiled(values: list[bytes], opts: HerculesOptions = OPTS):
    carried = decode_values(pa.array(values, pa.binary()), opts)
    failed = {index for index, _ in carried.errors}
    assert carried.value_index.to_pylist() == [i for i in range(len(values)) if i not in failed]
    errors = [(index, err.kind, err.offset, err.detail) for index, err in carried.errors]
    return carried.batch.to_pylist(), errors


def same(values: list[bytes], opts: HerculesOptions = OPTS) -> list:
    got = compiled(values, opts)
    assert repr(got) == repr(pure(values, opts))  # repr: NaN values compare equal
    return got[0]


def test_golden_values():
    """The vectors' Kafka record values, and every vector file less its 4-byte count
    (one event or several, whole or damaged: trailing bytes, truncation, bad types)."""
    lines = gzip.decompress((DATA / "kafka_records.jsonl.gz").read_bytes()).splitlines()
    values = [bytes.fromhex(json.loads(line)["value_hex"]) for line in lines]
    values += [path.read_bytes()[4:] for path in sorted(DATA.glob("*.bin"))]
    rows, errors = same(values), pure(values)[1]
    assert len(rows) == len(lines) + 2 and errors  # two vector files hold a single event


@pytest.fixture(scope="module")
def events() -> list[bytes]:
    rng = random.Random(11)
    return [encode_event(log_event(rng, 17_000_000_000_000_000 + i * 977)) for i in range(6)]


def test_log_events_and_every_flipped_and_cut_byte(events):
    rows = same(events)
    assert len(rows) == len(events)
    for event in events[:2]:
        # swept (tests/budget.py), always with the head: version, timestamp, uuid, tag count
        positions = sweep(range(len(event)), keep=range(27))
        flipped = []
        for pos in positions:
            mutated = bytearray(event)
            mutated[pos] ^= 0xFF
            flipped.append(bytes(mutated))
        same(flipped)
        same([event[:cut] for cut in positions] + [event + b"\x01"])


def _event(tags) -> bytes:
    return encode_event(Event(123_456, uuid.UUID(int=7), tags))


def test_floats_of_every_kind_render_as_repr():
    rng = random.Random(3)
    doubles = [struct.unpack(">d", rng.randbytes(8))[0] for _ in range(3000)]
    doubles += [0.0, -0.0, 1e16, 1e15, 1e-4, 1e-5, 5e-324, math.inf, -math.inf, math.nan]
    doubles += [rng.uniform(-1e6, 1e6) for _ in range(1000)] + [float(i) for i in range(-50, 50)]
    singles = [struct.unpack(">f", rng.randbytes(4))[0] for _ in range(3000)]
    values = [
        _event([(f"d{i}", Value("Double", d)) for i, d in enumerate(doubles[at : at + 50])])
        for at in range(0, len(doubles), 50)
    ]
    values += [
        _event([(f"f{i}", Value("Float", f)) for i, f in enumerate(singles[at : at + 50])])
        for at in range(0, len(singles), 50)
    ]
    values.append(_event([("v", Value("Vector", doubles[:300], "Double"))]))
    rows = same(values)
    assert len(rows) == len(values)


def test_texts_escapes_and_what_is_left_to_the_pure_reader():
    texts = ['a"b\\c', "\x00\x01\x1f\x7f\n\r\t\b\f", "é€😀", "", "x" * 5000, "%/[]"]
    values = [_event([(text[:200], Value("String", text))]) for text in texts]
    values.append(_event([("a", Value("Integer", 1)), ("b", Value("Long", -(2**63))),
                          ("a", Value("String", "dup"))]))  # fmt: skip
    values.append(_event([("k" * 255, Value("Container", [("k" * 255, Value("Null", None))]))]))
    bad = _event([("key", Value("String", "ok"))])
    values.append(bad.replace(b"ok", b"o\xff"))
    values.append(bad.replace(b"key", b"k\xc3y"))
    values.append(_event([(f"{i}", Value("Vector", [None] * 3, "Null")) for i in range(3)]))
    values.append(_event([("b", Value("Vector", list(range(256)), "Byte"))]))
    rows = same(values)
    assert len(rows) == len(values)


@pytest.mark.parametrize("max_depth", [1, 2, 5, 100])
def test_limits_are_the_same_on_both_walks(max_depth, events):
    opts = HerculesOptions(max_depth=max_depth, max_event_bytes=600)
    same(events, opts)

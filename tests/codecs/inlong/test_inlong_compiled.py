"""The compiled message walk (codecs/inlong/compiled.py) against the pure one
(`message.parse`, all messages under `forced("pure")`): identical outcome, rows,
batch boundaries, quarantined items and accounting, on the golden vectors, the sample
days and the mutation corpus; its snappy decoder against cramjam's."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import random

import cramjam
import numpy as np
import pyarrow as pa
import pytest
from budget import examples, sweep
from decoding import ChunkedReads
from hypothesis import given, settings
from hypothesis import strategies as st
from inlong_helpers import CASES, vector
from test_inlong_mutation import SEEDS, frame_bytes, framed

from wirecodecs import FileAccounting
from wirecodecs.compiled import forced
from wirecodecs.inlong import bounds, compiled, decoder, samples
from wirecodecs.inlong import encoder as enc
from wirecodecs.inlong.decoder import decode
from wirecodecs.inlong.options import InlongOptions
from wirecodecs.inlong.payload import decode_values

FAST = settings(max_examples=examples(2))


def outcome(data: bytes, walk: str, **options) -> list:
    """Everything the file decoder yields on `walk`, and its accounting, as plain values."""
    accounting = FileAccounting("mem.bin", "inlong")
    opts = InlongOptions(**options)
    with forced(walk):
        got = [
            item.to_pylist() if isinstance(item, pa.RecordBatch) else dataclasses.astuple(item)
            for item in decode(io.BytesIO(data), "mem.bin", accounting, opts)
        ]
    return [*got, accounting.to_dict()]


def carried(values: list[bytes], walk: str) -> tuple:
    with forced(walk):
        got = decode_values(pa.array(values, pa.binary()), InlongOptions())
    errors = [(index, err.kind, err.offset, err.detail) for index, err in got.errors]
    return got.batch.to_pylist(), got.value_index.to_pylist(), errors


def assert_same(data: bytes, **options) -> None:
    assert outcome(data, "compiled", **options) == outcome(data, "pure", **options)


@pytest.mark.parametrize("case", CASES)
def test_vectors(case):
    data = vector(case)
    assert_same(data)
    for batch_rows in (65536, 2):
        assert_same(framed(data), framing="length_prefixed", batch_rows=batch_rows)


def test_vectors_back_to_back_and_carried():
    data = [vector(case) for case in CASES]
    for batch_rows in (65536, 5, 1):
        assert_same(enc.length_prefixed(data), framing="length_prefixed", batch_rows=batch_rows)
    assert carried(data, "compiled") == carried(data, "pure")


@pytest.mark.parametrize("day", [samples.length_prefixed_day, samples.message_files_day])
def test_sample_days(day, tmp_path):
    framing = "length_prefixed" if day is samples.length_prefixed_day else "message"
    for sample in day(tmp_path, dt.date(2024, 3, 1), 11):
        data = sample.path.read_bytes()
        for batch_rows in (65536, 7):
            assert_same(data, framing=framing, batch_rows=batch_rows)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_byte_flipped_and_every_truncation(seed):
    data = vector(seed)
    positions = sweep(range(len(data)), keep=frame_bytes(data))
    mutants = [data[:cut] for cut in positions]
    for at in positions:
        damaged = bytearray(data)
        damaged[at] ^= 0xFF
        mutants.append(bytes(damaged))
    for mutant in mutants:
        assert_same(mutant)
    assert_same(enc.length_prefixed(mutants), framing="length_prefixed", batch_rows=3)
    assert carried(mutants, "compiled") == carried(mutants, "pure")


@FAST
@given(st.sampled_from(SEEDS), st.data())
def test_random_edits(seed, data):
    message = bytearray(vector(seed))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(message)))
        message[at : at + data.draw(st.integers(0, 3))] = data.draw(st.binary(max_size=4))
    assert_same(framed(bytes(message)), framing="length_prefixed")
    assert carried([bytes(message)], "compiled") == carried([bytes(message)], "pure")


ATTRS = ["", "a", "a=", "=b", "=", "&&", "a=1&a=2&b=3&a=4", "dt=+17&x=y=z", "dt=-0", "dt=0017",
         "dt=99999999999999999999", "dt=1.5", "groupId=g&bid=b&tid=t", "bid=b&tid=t",
         "t=2024030112", "k=v\x00w", " a = 1 ", "a=1& b=2\t", "a=1&&b=2", "x=\u00e9",
         "dt=1700000000000&groupId=x&streamId=y&cnt=9",
         "&".join(f"k{i}=v" for i in range(70))]  # fmt: skip


@pytest.mark.parametrize("attr", ATTRS)
def test_attribute_strings(attr):
    """Lenient (V0-V2) and strict (V4) splits, repeated keys, the V4 fields, event time,
    group and stream ids, entries past MAX_ENTRIES, non-ASCII text."""
    messages = []
    for version in (0, 1, 2):
        blocks = [(attr, [b"i1", b""]), (attr + "&z=1", [b"i2"])]
        messages.append(enc.encode_blocks(version, blocks, 1_700_000_000_000, compress=True))
    for ext in (0, 4):
        messages.append(enc.encode_v4([b"a"], attr, ext_field=ext, data_time=17, compress=True))
    for message in messages:
        assert_same(message)
    assert carried(messages, "compiled") == carried(messages, "pure")


def test_common_messages_take_the_compiled_walk():
    """V0-V2 blocks and V4 bodies, plain or snappy, walk without the pure path."""
    attr = "m=0&groupId=g&streamId=s&dt=1700000000000"
    messages = [
        enc.encode_blocks(version, [(attr, [b"x" * 10, b""]), ("", [b"y"])], 1, compress=zipped)
        for version in (0, 1, 2)
        for zipped in (False, True)
    ]
    messages += [enc.encode_v4([b"a", b"b"], attr, ext_field=4, compress=z) for z in (False, True)]
    data = np.frombuffer(enc.length_prefixed(messages), np.uint8)
    frames = np.empty((4, 16), np.int64)
    count, _ = compiled.scan_prefixed(data, 0, 1 << 20, frames)
    limits = np.array([1 << 20, 1 << 20, 1 << 30, 1 << 20, 1 << 30], np.int64)
    columns = compiled.Columns()
    assert columns.walk(data, frames, 0, count, limits, 0, 0) == (bounds.DONE, count)
    assert columns.counts().frames == count == len(messages)


def snappy_blocks() -> list[bytes]:
    rng = random.Random(3)
    texts = [b"", b"a", b"ab" * 40, bytes(range(256)) * 3, b"x" * 5000]
    texts += [
        bytes(rng.choice(b"abc,.0123") for _ in range(rng.randrange(1, 3000))) for _ in range(20)
    ]
    return [bytes(cramjam.snappy.compress_raw(text)) for text in texts]


def compiled_snappy(block: bytes) -> bytes | None:
    out = np.empty(1 << 17, np.uint8)
    size = compiled.snappy(np.frombuffer(block, np.uint8), 0, len(block), out, 1 << 17)
    return None if size < 0 else out[:size].tobytes()


def cramjam_snappy(block: bytes) -> bytes | None:
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError:
        return None


def test_snappy_matches_cramjam_on_valid_blocks():
    for block in snappy_blocks():
        assert compiled_snappy(block) == cramjam_snappy(block)


@FAST
@given(st.sampled_from(snappy_blocks()), st.data())
def test_snappy_accepts_nothing_cramjam_rejects(block, data):
    """A damaged block: whatever the compiled decoder accepts, cramjam accepts with the
    same output (what it rejects goes to the pure walk, where cramjam decides)."""
    damaged = bytearray(block)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(damaged)))
        damaged[at : at + data.draw(st.integers(0, 2))] = data.draw(st.binary(max_size=3))
    got = compiled_snappy(bytes(damaged))
    if got is not None:
        assert got == cramjam_snappy(bytes(damaged))


@FAST
@given(
    st.lists(st.text(max_size=4), max_size=12),
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 4), st.integers(0, 9)), max_size=6),
)
def test_repeated_runs(values, runs):
    """`_repeated` (the attribute maps' keys and values): each run of values repeated its
    count of times, empty runs and values and counts of 0, 1 and past a doubling."""
    runs = [(min(first, len(values)), min(first + size, len(values)), repeat)
            for first, size, repeat in runs]  # fmt: skip
    column = pa.array(values, pa.string())
    firsts, stops, repeats = np.array(runs, np.int64).reshape(-1, 3).T.copy()
    offsets = np.frombuffer(column.buffers()[1], np.int32)
    data = np.frombuffer(column.buffers()[2] or b"", np.uint8)
    got = compiled._repeated(firsts, stops, repeats, offsets, data)
    want = [value for first, stop, repeat in runs for _ in range(repeat)
            for value in values[first:stop]]  # fmt: skip
    assert got.to_pylist() == want
    got.validate(full=True)


def test_the_compiled_walk_takes_over_within_a_file(auto_walk):
    """Once the process has read `pure_below` bytes the compiled walk takes the rest of
    the file (from the next window of frames), its rows joining the pure walk's in the
    same batches."""
    auto_walk.setattr(decoder.WALK, "pure_below", 5000)
    auto_walk.setattr(decoder, "WINDOW_BYTES", 2000)
    data = enc.length_prefixed([vector(case) for case in CASES] * 3)
    assert len(data) > 4 * decoder.WALK.pure_below  # windows on both walks
    accounting = FileAccounting("mem.bin", "inlong")
    opts = InlongOptions(framing="length_prefixed", batch_rows=40)
    stream = ChunkedReads(data, [1500])  # the window reads a little at a time
    auto = list(decode(stream, "mem.bin", accounting, opts))
    assert decoder.WALK.read == len(data)
    got = [item.to_pylist() if isinstance(item, pa.RecordBatch) else dataclasses.astuple(item)
           for item in auto]  # fmt: skip
    pure = outcome(data, "pure", framing="length_prefixed", batch_rows=40)
    assert [*got, accounting.to_dict()] == pure

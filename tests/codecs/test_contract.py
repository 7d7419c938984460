"""Every registered format, and every envelope + payload pair the registry builds, keeps
the `WireFormat` contract (wirecodecs/registry.py) on an empty file, a clean file cut
mid-frame and a clean sample file: fuzz_targets.check (no escaped exception, rows of the
row schema in batches of at most `batch_rows`, quarantine in file order, the accounting
balanced, the same outcome whatever the read and batch sizes), then what each case must
give. Fast and Spark-free, so a new format is held to the contract as soon as it registers.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest
from decoding import Decoded, as_declared, decode_all
from fuzz_targets import TARGETS, check
from ranges import find

from wirecodecs import registry
from wirecodecs.accounting import FileAccounting
from wirecodecs.options import resolve
from wirecodecs.samples import SampleFile, write_sample_day


def carried_formats() -> list[str]:
    """Every "<envelope>+<payload>" the registry builds (e.g. kafka+inlong)."""
    pairs = []
    for envelope in registry.names():
        for payload in registry.names():
            try:
                registry.source_format(envelope, payload)
            except registry.UnknownFormatError:
                continue
            pairs.append(f"{envelope}+{payload}")
    return pairs


FORMATS = registry.names() + carried_formats()
# The sample source (wirecodecs.samples, by dags/sources.yaml name) whose files each format
# decodes with its default options.
SAMPLE_SOURCES = {
    "cernan": "cernan",
    "heka": "heka",
    "hercules": "hercules",
    "inlong": "inlong_messages",
    "kafka": "kafka",
    "kafka+hercules": "hercules_kafka",
    "kafka+inlong": "inlong_kafka",
}
DAY = dt.date(2026, 11, 3)
BATCH_ROWS = 3  # below every sample file's row count: the batch size bounds every batch


@dataclass(frozen=True)
class Sample:
    """A sample file's bytes, its path in the landing day (the decode's source) and what
    its writer put in it."""

    data: bytes
    source: str
    written: SampleFile


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> dict[str, Sample]:
    """Per format, the file of its sample day with the fewest frames damaged on purpose
    (none but inlong_kafka's one undecodable record value), its cut tail dropped."""
    out = {}
    for name, source in SAMPLE_SOURCES.items():
        root = tmp_path_factory.mktemp(source)
        day = write_sample_day(source, root, DAY)
        written = min(day.files, key=lambda f: f.crc_invalid_frames + f.undecodable_frames)
        data = written.path.read_bytes()
        data = data[: len(data) - written.truncated_tail_bytes]
        out[name] = Sample(data, written.path.relative_to(root).as_posix(), written)
    return out


def decode(name: str, sample: Sample, data: bytes, **options) -> Decoded:
    """`data` held to the whole contract, then decoded as `sample`'s file."""
    check(TARGETS[name], data)
    return decode_all(data, sample.source, name, **as_declared(name, options))


def frame_starts(decoded: Decoded) -> list[int]:
    """Where the frames that gave rows start (each row's lineage offset)."""
    return sorted({row["byte_offset"] for row in decoded.rows})


def test_the_registry_lists_carried_formats():
    assert {"kafka+hercules", "kafka+inlong"} <= set(FORMATS)


@pytest.mark.parametrize("name", FORMATS)
def test_empty_file_gives_nothing_and_zero_accounting(name, samples):
    got = decode(name, samples[name], b"")
    assert got.items == []
    assert got.accounting == FileAccounting(samples[name].source, name)


@pytest.mark.parametrize("name", FORMATS)
def test_clean_sample_gives_what_was_written(name, samples):
    sample = samples[name]
    wire = registry.get(name)
    got = decode(name, sample, sample.data, batch_rows=BATCH_ROWS)
    assert len(got.rows) == sample.written.decodable_records
    assert len(got.quarantined) == sample.written.undecodable_frames
    schema = wire.row_schema(resolve(wire, as_declared(name, {"batch_rows": BATCH_ROWS})))
    assert got.batches and all(batch.schema == schema for batch in got.batches)
    assert all(0 < batch.num_rows <= BATCH_ROWS for batch in got.batches)
    assert got.accounting.bytes_truncated_tail == 0
    assert got.accounting.stop_reason == "eof"


@pytest.mark.parametrize("name", FORMATS)
def test_file_cut_mid_frame_keeps_the_frames_before_and_accounts_the_tail(name, samples):
    sample = samples[name]
    whole = decode_all(sample.data, sample.source, name)
    last = frame_starts(whole)[-1]
    cut = (last + len(sample.data)) // 2
    got = decode(name, sample, sample.data[:cut])
    assert got.rows == [row for row in whole.rows if row["byte_offset"] < last]
    assert got.accounting.frames_good == whole.accounting.frames_good - 1
    assert got.accounting.bytes_skipped == whole.accounting.bytes_skipped
    tail = got.accounting.bytes_truncated_tail + got.accounting.bytes_quarantined
    assert tail == whole.accounting.bytes_quarantined + cut - last


@pytest.mark.parametrize("name", [name for name in FORMATS if registry.get(name).split])
def test_split_points_are_increasing_frame_starts_inside_the_file(name, samples):
    data = samples[name].data
    boundaries = [len(data) * quarter // 4 for quarter in (1, 2, 3)]
    points = [point.offset for point in find(name, data, boundaries).points]
    assert points == sorted(set(points))
    assert all(boundaries[0] <= point < len(data) for point in points)
    starts = frame_starts(decode_all(data, samples[name].source, name))
    assert set(points) <= set(starts)


@pytest.mark.parametrize("name", FORMATS)
def test_sample_file_is_a_data_file(name, samples):
    assert registry.get(name).data_file(samples[name].source) is True

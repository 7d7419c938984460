"""Kafka segments carrying another format's messages: the envelope + payload glue.

The carried format here is a small test format whose messages are "<count>:<text>" and
become `count` rows, so one record value may give zero, one or many rows, and a value it
rejects must be quarantined alone. The real carried formats (Hercules, InLong) have their
own tests; this one pins the glue's row, error and accounting rules.
"""

from __future__ import annotations

import dataclasses
import io

import pyarrow as pa
import pytest

from wirecodecs import DecodeError, FileAccounting, Quarantined, UnknownFormatError
from wirecodecs.kafka import encoder as enc
from wirecodecs.kafka.carrier import ENVELOPE_FIELDS, carrying
from wirecodecs.kafka.options import KafkaOptions
from wirecodecs.options import Options, resolve
from wirecodecs.registry import CarriedRows, PayloadCodec, WireFormat, source_format
from wirecodecs.rows import lineage_fields

SCHEMA = pa.schema([*lineage_fields(None), pa.field("text", pa.string())])
VALUE_SCHEMA = pa.schema(list(SCHEMA)[2:])  # all but the lineage pair


@dataclasses.dataclass(frozen=True)
class CountedOptions(Options):
    FORMAT = "counted"

    suffix: str = ""


def _decode_values(values: pa.BinaryArray, options: CountedOptions) -> CarriedRows:
    """Each value "<count>:<text>" as `count` rows of that text."""
    texts, value_index, errors = [], [], []
    for index, value in enumerate(values.to_pylist()):
        count, sep, text = value.decode().partition(":")
        if not sep or not count.isdigit():
            error = DecodeError("counted", "no_count", "expected <count>:<text>", offset=0)
            errors.append((index, error))
            continue
        texts += [f"{text}{options.suffix}"] * int(count)
        value_index += [index] * int(count)
    event_time = pa.nulls(len(texts), SCHEMA.field("event_time").type)
    batch = pa.RecordBatch.from_arrays([event_time, pa.array(texts)], schema=VALUE_SCHEMA)
    return CarriedRows(batch, pa.array(value_index, pa.int32()), errors)


COUNTED = WireFormat(
    "counted",
    SCHEMA,
    decode=lambda *args: iter(()),
    options=CountedOptions,
    payload=PayloadCodec(_decode_values),
)


def _segment(*batches: list[bytes | None], control_after: int | None = None):
    """A log of gzip v2 batches with these record values (keys "k<offset>"), a commit
    marker after batch `control_after`; returns the bytes and where each entry starts."""
    entries, offset = [], 0
    for number, values in enumerate(batches):
        records = [
            enc.Record(f"k{offset + i}".encode(), value, 1_700_000_000_000 + offset + i)
            for i, value in enumerate(values)
        ]
        entries.append(enc.RecordBatch(records, base_offset=offset, codec="gzip"))
        offset += len(values)
        if control_after == number:
            marker = enc.control_batch(
                "commit",
                base_offset=offset,
                producer_id=1,
                producer_epoch=0,
                coordinator_epoch=0,
                timestamp=1_700_000_000_000,
            )
            entries.append(marker)
            offset += 1
    encoded = [enc.encode(entry) for entry in entries]
    starts = [sum(len(chunk) for chunk in encoded[:i]) for i in range(len(encoded))]
    return b"".join(encoded), starts


def _run(data: bytes, **options):
    fmt = carrying(COUNTED)
    accounting = FileAccounting(source="logs/orders-3/0.log", format=fmt.name)
    resolved = resolve(fmt, options)
    items = list(fmt.decode(io.BytesIO(data), accounting.source, accounting, resolved))
    rows = [row for item in items if isinstance(item, pa.RecordBatch) for row in item.to_pylist()]
    bad = [item for item in items if isinstance(item, Quarantined)]
    return fmt, accounting, rows, bad


def test_each_value_becomes_its_rows_with_the_envelope_appended():
    data, starts = _segment([b"2:a", b"0:none", None], [b"1:b"], control_after=0)
    fmt, accounting, rows, bad = _run(data, counted={"suffix": "!"})
    assert fmt.name == "kafka+counted"
    assert fmt.schema.names == SCHEMA.names + [field.name for field in ENVELOPE_FIELDS]
    assert bad == []
    # offset 3 is the commit marker: a log entry, not a message; so is the null value
    assert [(r["text"], r["kafka_offset"], r["kafka_key"], r["byte_offset"]) for r in rows] == [
        ("a!", 0, b"k0", starts[0]),
        ("a!", 0, b"k0", starts[0]),
        ("b!", 4, b"k4", starts[2]),
    ]
    assert {(r["kafka_topic"], r["kafka_partition"], r["kafka_crc_valid"]) for r in rows} == {
        ("orders", 3, True)
    }
    assert [r["kafka_timestamp_ms"] for r in rows] == [1_700_000_000_000] * 2 + [1_700_000_000_004]
    assert (accounting.payloads_good, accounting.payloads_bad) == (3, 0)
    assert accounting.records_good == len(rows) == 3
    assert accounting.balanced and accounting.frames_good == 3


def test_a_rejected_value_is_quarantined_alone():
    data, _ = _segment([b"1:a", b"garbage", b"1:c"])
    _, accounting, rows, bad = _run(data)
    assert [r["text"] for r in rows] == ["a", "c"]
    (item,) = bad
    assert (item.byte_offset, item.length, item.head) == (0, 7, b"garbage")
    assert item.kind == "payload_no_count"
    assert "kafka offset 1, at byte 0 of the value: expected <count>:<text>" in item.detail
    assert (accounting.payloads_good, accounting.payloads_bad) == (2, 1)
    assert (accounting.records_good, accounting.records_bad) == (2, 1)
    assert accounting.frames_bad == 0 and accounting.bytes_decoded == len(data)


def test_a_bad_kafka_entry_stays_a_quarantined_frame():
    good, _ = _segment([b"1:a"])
    damaged = bytearray(_segment([b"1:b"])[0])
    damaged[-3] ^= 0xFF  # inside the gzip payload: the entry cannot be decoded
    _, accounting, rows, bad = _run(good + bytes(damaged))
    assert [r["text"] for r in rows] == ["a"]
    assert len(bad) == 1 and not bad[0].kind.startswith("payload_")
    assert accounting.frames_bad == 1 and accounting.payloads_bad == 0


def test_options_go_to_their_own_decoder():
    fmt = carrying(COUNTED)
    assert fmt.options == {"kafka": KafkaOptions, "counted": CountedOptions}
    _, _, rows, _ = _run(_segment([b"1:x"])[0], counted={"suffix": "?"}, kafka={"batch_rows": 10})
    assert rows[0]["text"] == "x?"


def test_an_envelope_and_a_payload_option_of_one_name_are_both_set():
    options = resolve(source_format("kafka", "hercules"), {
        "kafka": {"batch_rows": 10}, "hercules": {"batch_rows": 20},
    })  # fmt: skip
    assert (options["kafka"].batch_rows, options["hercules"].batch_rows) == (10, 20)


def test_unknown_payloads_and_envelopes_are_named():
    with pytest.raises(UnknownFormatError, match="unknown payload 'avro9' for envelope 'kafka'"):
        source_format("kafka", "avro9")
    assert source_format("kafka", "raw").name == "kafka"


@pytest.mark.parametrize("payload", ["hercules", "inlong"])
@pytest.mark.parametrize(
    ("path", "holds_entries"),
    [
        ("orders-0/00000000000000000000.log", True),
        ("orders-0/00000000000000000000.index", False),
        ("orders-0/00000000000000000000.timeindex", False),
        ("orders-0/leader-epoch-checkpoint", False),
        ("orders-0-delete/00000000000000000000.log", False),
    ],
)
def test_carried_formats_leave_out_the_segments_companions(payload, path, holds_entries):
    """A partition folder of Kafka-borne messages holds the same index and checkpoint files
    as any other: they are not decoded (nor counted as garbage) whatever the payload."""
    assert source_format("kafka", payload).data_file(path) is holds_entries

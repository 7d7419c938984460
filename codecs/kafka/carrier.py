"""Kafka segments whose record values are another format's messages (envelope + payload).

`carrying(payload)` is the format of a source declared as envelope ``kafka`` with that
payload: the Kafka decoder cuts and checks the log entries, then the record values of each
Kafka batch go together through the payload format's `PayloadCodec.decode_values`, which
returns their rows in columns. A row is the payload's row, lineage pair pointing at the
Kafka entry, with the record's place in the log appended (`ENVELOPE_FIELDS`).

Which records carry a message: control records (transaction markers) and null values
(tombstones) are part of the log, not messages, so they make no row and no error. A value
the payload format rejects is quarantined on its own (kind ``payload_<kind>``, head = the
value's first bytes); the rest of its entry is kept. In the accounting, bytes and frames
stay the Kafka entries'; `payloads_good`/`payloads_bad` count the carried messages, and
`records_good` becomes the number of rows written, as for every format.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc

from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.errors import DecodeError
from wirecodecs.kafka.decoder import decode as decode_kafka
from wirecodecs.kafka.index import split
from wirecodecs.kafka.layout import is_data_file
from wirecodecs.kafka.options import KafkaOptions
from wirecodecs.options import Options
from wirecodecs.registry import CarriedRows, WireFormat
from wirecodecs.rows import in_batches

ENVELOPE_FIELDS = [
    pa.field("kafka_topic", pa.string()),  # from a `<topic>-<partition>/` folder, else null
    pa.field("kafka_partition", pa.int32()),
    pa.field("kafka_offset", pa.int64(), nullable=False),
    pa.field("kafka_timestamp_ms", pa.int64()),  # as the log reports it; null for magic 0
    pa.field("kafka_key", pa.binary()),
    pa.field("kafka_crc_valid", pa.bool_()),  # the entry's own checksum verdict
]
# Kafka row column -> envelope column
_FROM_KAFKA = {
    "topic": "kafka_topic",
    "partition": "kafka_partition",
    "offset": "kafka_offset",
    "timestamp_ms": "kafka_timestamp_ms",
    "key": "kafka_key",
    "crc_valid": "kafka_crc_valid",
}
_ENVELOPE = ["source_file", "byte_offset", *_FROM_KAFKA]  # what a row takes from its record
_READ = [*_ENVELOPE, "value"]


def carrying(payload: WireFormat) -> WireFormat:
    """The format of Kafka segments whose record values are `payload` messages (a format
    with a `PayloadCodec`, as `registry.source_format` checks). Its options are the two
    formats', each under its format's name (`wirecodecs.options`)."""
    schema = pa.schema(list(payload.schema) + ENVELOPE_FIELDS)
    decode_values = payload.payload.decode_values

    def decode(
        stream: BinaryIO, source: str, accounting: FileAccounting, options: Mapping[str, Options]
    ) -> Iterator[pa.RecordBatch | Quarantined]:
        kafka_options, payload_options = options["kafka"], options[payload.name]
        rows_written = 0
        for item in decode_kafka(stream, source, accounting, kafka_options):
            if isinstance(item, Quarantined):
                yield item
                continue
            rows_written += yield from _payload_rows(
                item, accounting, payload_options, kafka_options
            )
            del item  # the flush's values: not held while the next flush decodes
        accounting.records_bad += accounting.payloads_bad
        accounting.records_good = rows_written

    def _payload_rows(
        kafka_rows: pa.RecordBatch,
        accounting: FileAccounting,
        payload_options: Options,
        kafka_options: KafkaOptions,
    ) -> Generator[pa.RecordBatch | Quarantined, None, int]:
        """The rows (and quarantined values) of one Kafka flush's messages; returns how
        many rows. A function of its own, so that a flush's rows are let go before the next
        flush decodes."""
        records = _carrying_messages(kafka_rows)
        if not records.num_rows:
            return 0
        carried = decode_values(records["value"], payload_options)
        for index, err in carried.errors:
            yield _quarantine_value(records.slice(index, 1).to_pylist()[0], payload.name, err)
        accounting.payloads_bad += len(carried.errors)
        accounting.payloads_good += records.num_rows - len(carried.errors)
        if carried.batch.num_rows:  # a value may carry several messages: more rows than records
            yield from in_batches(
                _with_envelope(carried, records, schema), kafka_options.batch_rows
            )
        return carried.batch.num_rows

    return WireFormat(
        f"kafka+{payload.name}",
        schema,
        decode,
        {"kafka": KafkaOptions, payload.name: payload.options},
        data_file=is_data_file,  # segments only, like plain Kafka: not their index files
        split=split,  # cut where the segment's index says, like plain Kafka
    )


def _carrying_messages(kafka_rows: pa.RecordBatch) -> pa.RecordBatch:
    """The records of a Kafka batch that carry a message: neither control records nor
    null values (tombstones)."""
    carrying = pc.and_(pc.invert(kafka_rows["is_control"]), pc.is_valid(kafka_rows["value"]))
    records = kafka_rows.select(_READ)
    return records if pc.all(carrying).as_py() else records.filter(carrying)


def _with_envelope(carried: CarriedRows, records: pa.RecordBatch, schema: pa.Schema):
    """The payload's rows with the lineage pair and envelope columns of their records."""
    envelope = {name: _spread(records[name], carried.value_index) for name in _ENVELOPE}
    columns = {name: envelope[name] for name in ("source_file", "byte_offset")}
    columns.update(zip(carried.batch.schema.names, carried.batch.columns, strict=True))
    columns.update((column, envelope[name]) for name, column in _FROM_KAFKA.items())
    return pa.RecordBatch.from_arrays([columns[name] for name in schema.names], schema=schema)


def _spread(column: pa.Array, index: pa.Array) -> pa.Array:
    """`column` taken at `index` (a record's value to each of its rows). A column of one
    value or of nulls only, as the source file, topic and partition are and usually the
    key, is repeated instead: a payload has many more rows than records, and a gather of
    strings costs several times a repeat."""
    if column.null_count == len(column):
        return pa.nulls(len(index), column.type)
    if not column.null_count and pc.count_distinct(column).as_py() == 1:
        return pa.repeat(column[0], len(index))
    return column.take(index)


def _quarantine_value(record: dict, payload: str, err: DecodeError) -> Quarantined:
    where = f", at byte {err.offset} of the value" if err.offset is not None else ""
    return Quarantined.from_frame(
        record["source_file"],
        record["byte_offset"],
        record["value"],
        f"payload_{err.kind}",
        f"{payload} message in kafka offset {record['offset']}{where}: {err.detail}",
    )

"""Kafka segments whose record values are another format's messages (envelope + payload).

`carrying(payload)` is the format of a source declared as envelope ``kafka`` with that
payload: the Kafka decoder cuts and checks the log entries, then every record value goes
through the payload format's `PayloadCodec.decode_value`. A row is the payload's row,
lineage pair pointing at the Kafka entry, with the record's place in the log appended
(`ENVELOPE_FIELDS`).

Which records carry a message: control records (transaction markers) and null values
(tombstones) are part of the log, not messages, so they make no row and no error. A value
the payload format rejects is quarantined on its own (kind ``payload_<kind>``, head = the
value's first bytes); the rest of its entry is kept. In the accounting, bytes and frames
stay the Kafka entries'; `payloads_good`/`payloads_bad` count the carried messages, and
`records_good` becomes the number of rows written, as for every format.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import BinaryIO

import pyarrow as pa

from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.errors import DecodeError
from wirecodecs.kafka.decoder import decode as decode_kafka
from wirecodecs.kafka.index import split
from wirecodecs.kafka.layout import is_data_file
from wirecodecs.kafka.options import KafkaOptions
from wirecodecs.options import Options
from wirecodecs.registry import WireFormat
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
_READ = ["source_file", "byte_offset", "is_control", "value", *_FROM_KAFKA]


def carrying(payload: WireFormat) -> WireFormat:
    """The format of Kafka segments whose record values are `payload` messages (a format
    with a `PayloadCodec`, as `registry.source_format` checks). Its options are the two
    formats', each under its format's name (`wirecodecs.options`)."""
    schema = pa.schema(list(payload.schema) + ENVELOPE_FIELDS)
    decode_value = payload.payload.decode_value

    def decode(
        stream: BinaryIO, source: str, accounting: FileAccounting, options: Mapping[str, Options]
    ) -> Iterator[pa.RecordBatch | Quarantined]:
        kafka_options, payload_options = options["kafka"], options[payload.name]
        rows_written = 0
        for item in decode_kafka(stream, source, accounting, kafka_options):
            if isinstance(item, Quarantined):
                yield item
                continue
            rows: list[dict] = []
            for record in item.select(_READ).to_pylist():
                value = record["value"]
                if record["is_control"] or value is None:
                    continue
                try:
                    decoded = decode_value(value, payload_options)
                except DecodeError as err:
                    accounting.payloads_bad += 1
                    yield _quarantine_value(record, payload.name, err)
                    continue
                accounting.payloads_good += 1
                envelope = {column: record[name] for name, column in _FROM_KAFKA.items()}
                lineage = {
                    "source_file": record["source_file"],
                    "byte_offset": record["byte_offset"],
                }
                rows.extend({**row, **lineage, **envelope} for row in decoded)
            if rows:  # a value may carry several messages: more rows than records
                rows_written += len(rows)
                yield from in_batches(
                    pa.RecordBatch.from_pylist(rows, schema=schema), kafka_options.batch_rows
                )
        accounting.records_bad += accounting.payloads_bad
        accounting.records_good = rows_written

    return WireFormat(
        f"kafka+{payload.name}",
        schema,
        decode,
        {"kafka": KafkaOptions, payload.name: payload.options},
        data_file=is_data_file,  # segments only, like plain Kafka: not their index files
        split=split,  # cut where the segment's index says, like plain Kafka
    )


def _quarantine_value(record: dict, payload: str, err: DecodeError) -> Quarantined:
    where = f", at byte {err.offset} of the value" if err.offset is not None else ""
    return Quarantined.from_frame(
        record["source_file"],
        record["byte_offset"],
        record["value"],
        f"payload_{err.kind}",
        f"{payload} message in kafka offset {record['offset']}{where}: {err.detail}",
    )

"""Format registry: the one place that maps a format name to its decoder and row schema.

jobs/ and the command-line inspector look formats up here, so adding a format means
registering it, never adding a branch elsewhere.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple

import pyarrow as pa

from wirecodecs.accounting import FileAccounting, Quarantined
from wirecodecs.errors import DecodeError
from wirecodecs.options import Declared, Options, Resolved


@dataclass(frozen=True)
class TableRows:
    """Rows of one of a format's companion tables (`WireFormat.tables`), yielded by its
    decoder between the main table's record batches."""

    table: str
    batch: pa.RecordBatch


Decoded = pa.RecordBatch | Quarantined | TableRows
DecodeFn = Callable[[BinaryIO, str, FileAccounting, Resolved], Iterator[Decoded]]


class CarriedRows(NamedTuple):
    """The rows of a run of carried messages, in columns (`PayloadCodec.decode_values`)."""

    batch: pa.RecordBatch  # the format's columns less the lineage pair, in message order
    value_index: pa.Int32Array  # per row: the index of the message it came from
    errors: list[tuple[int, DecodeError]]  # rejected messages by index, ascending


DecodeValuesFn = Callable[[pa.BinaryArray, Options], CarriedRows]


@dataclass(frozen=True)
class PayloadCodec:
    """How a format decodes the messages carried inside another format's frames (the
    values of a run of Kafka records, none null): `decode_values(values, options)` decodes
    them all at once, so that rows are built in columns, and names each message that
    does not read on its own."""

    decode_values: DecodeValuesFn


@dataclass(frozen=True)
class SplitPoint:
    """A frame start at which a large file may be cut: the range from `offset` decodes on
    its own through the unchanged decoder, and reads as the whole file's decode once its
    offsets are moved by `offset` and each column named in `shifts` (a count that runs
    over the file, such as a packet number) is raised by its amount."""

    offset: int
    shifts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Splits:
    """A file's split points (increasing), and what the format checked on the way, as
    entries for the file's row of the run manifest (e.g. Kafka's `index_check`)."""

    points: list[SplitPoint] = field(default_factory=list)
    checks: Mapping[str, object] = field(default_factory=dict)


OpenFile = Callable[[str], BinaryIO]  # landing path -> seekable file (FileNotFoundError)
SplitFn = Callable[[OpenFile, str, int, Sequence[int], Resolved], Splits]


def every_file(relative_path: str) -> bool:
    """The default `WireFormat.data_file`: every landed file holds frames."""
    return True


@dataclass(frozen=True)
class WireFormat:
    """A decodable format: its name, row schema, and a streaming decode function.

    `options` declares the decoder's options (`wirecodecs.options`); `decode`, `split`
    and `schema_for` receive them as `wirecodecs.options.resolve` gives them, checked.

    `decode(stream, source, accounting, options)` reads `stream` sequentially in bounded
    chunks, yields Arrow record batches of rows (matching `schema`) and `Quarantined`
    frames in file order, and fills `accounting` for the whole file by the time it ends.
    It never raises for bad input: bad frames become `Quarantined` items.

    `data_file(relative_path)` says whether a landed file holds frames; formats whose
    dumps come with companion files (indexes, checkpoints) leave those out, so the job
    neither decodes them nor reports their bytes as garbage.

    `payload` lets another format's frames carry this one's messages (see `source_format`);
    `tables` names companion tables (name -> schema) whose rows the decoder yields as
    `TableRows`; the decode job writes table T of source S beside S as S_T. `schema` is
    the main table's schema with default options; see `row_schema`.

    `split(open_file, path, size, boundaries, options)`, for formats that can find a frame
    start from an arbitrary offset, gives for each boundary (increasing offsets, none when
    the file is small) the first frame start at or after it, so that the decode job can
    cut a large file into ranges decoded in parallel; it is called for every file of a
    run, so it may also check the file's companions. Formats without one decode files
    whole. A split point that is not a frame start of the whole file's walk must show in
    the decode of the range before it: that range then does not end with `eof`.
    """

    name: str
    schema: pa.Schema
    decode: DecodeFn
    options: Declared  # its options' declaration: `wirecodecs.options.resolve` reads them
    data_file: Callable[[str], bool] = every_file
    payload: PayloadCodec | None = None  # set when the format's messages ride in envelopes
    tables: Mapping[str, pa.Schema] = field(default_factory=dict)  # companion tables
    schema_for: Callable[[Resolved], pa.Schema] | None = None
    split: SplitFn | None = None  # where a large file may be cut (None: decoded whole)

    def row_schema(self, options: Resolved) -> pa.Schema:
        """The main table's schema for a run with `options` (`schema_for`, when the
        format's columns depend on its options, e.g. a configured record schema)."""
        return self.schema if self.schema_for is None else self.schema_for(options)


class UnknownFormatError(ValueError):
    pass


def _formats() -> dict[str, WireFormat]:
    from wirecodecs.cernan import CERNAN
    from wirecodecs.heka import HEKA
    from wirecodecs.hercules import HERCULES
    from wirecodecs.inlong import INLONG
    from wirecodecs.kafka import KAFKA

    return {fmt.name: fmt for fmt in (KAFKA, INLONG, HERCULES, CERNAN, HEKA)}


def _envelopes() -> dict[str, Callable[[WireFormat], WireFormat]]:
    """Envelope format name -> how it builds the format of a source carrying a payload."""
    from wirecodecs.kafka.carrier import carrying

    return {"kafka": carrying}


def names() -> list[str]:
    return sorted(_formats())


def get(name: str) -> WireFormat:
    """The format called `name` ("<envelope>+<payload>" for a carried payload), or an
    error that lists the known ones."""
    envelope, plus, payload = name.partition("+")
    if plus:
        return source_format(envelope, payload)
    try:
        return _formats()[name]
    except KeyError:
        raise UnknownFormatError(
            f"unknown format {name!r}; known formats: {', '.join(names())}"
        ) from None


def overlay(defaults: Mapping[str, object], given: Mapping[str, object], what: str) -> dict:
    """`defaults` overlaid with `given`; a name that has no default is a configuration
    error naming `what` (e.g. "option(s) for format kafka") and the known names."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ValueError(
            f"unknown {what}: {', '.join(unknown)}; known: {', '.join(sorted(defaults))}"
        )
    return {**defaults, **given}


RAW_PAYLOAD = "raw"  # frames' contents kept as the envelope format's own columns


def source_format(envelope: str, payload: str = RAW_PAYLOAD) -> WireFormat:
    """The format of a source whose frames are cut by `envelope` and hold `payload`.

    Kafka segments whose record values are another format's messages are declared as
    envelope ``kafka`` with that format as payload; ``raw`` keeps the values as bytes.
    """
    fmt = get(envelope)
    if payload == RAW_PAYLOAD:
        return fmt
    carriers = _envelopes()
    if envelope not in carriers:
        raise UnknownFormatError(
            f"envelope {envelope!r} carries no payloads; envelopes that do: "
            f"{', '.join(sorted(carriers))}"
        )
    payloads = {name for name, carried in _formats().items() if carried.payload is not None}
    if payload not in payloads:
        raise UnknownFormatError(
            f"unknown payload {payload!r} for envelope {envelope!r}; known: "
            f"{', '.join([RAW_PAYLOAD, *sorted(payloads)])}"
        )
    return _carried(envelope, payload)


@functools.cache
def _carried(envelope: str, payload: str) -> WireFormat:
    return _envelopes()[envelope](get(payload))

"""The rows of decoded log entries, turned into the Arrow columns of `KAFKA_SCHEMA`.

A reader turns one log entry into a `Run`: the values all its rows share (`EntryColumns`)
and per-row lists. `RowBuffer` keeps the runs since the last flush and builds the columns
of all of them in one go (docs/kafka.md §4 says what each column holds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from itertools import chain, groupby
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from wirecodecs.kafka.schema import HEADER_TYPE, KAFKA_SCHEMA
from wirecodecs.rows import (
    EVENT_TIME_MAX_MS,
    EVENT_TIME_MIN_MS,
    EVENT_TIME_TYPE,
    FLUSH_BYTES,
    in_batches,
)


class EntryColumns(NamedTuple):
    """The columns whose value is the log entry's, the same for each of its rows (the
    defaults are those of a v0/v1 entry, which has no producer or batch flags)."""

    byte_offset: int
    crc_valid: bool
    magic: int
    compression: str
    timestamp_type: str | None
    batch_base_offset: int
    batch_last_offset: int
    partition_leader_epoch: int | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    is_transactional: bool = False
    is_control: bool = False
    delete_horizon_ms: int | None = None


class RecordCrc(NamedTuple):
    """The CRC verdict of the inner message at `row` of a v0/v1 wrapper."""

    row: int
    valid: bool


class Control(NamedTuple):
    """What the control record at `row` says (docs/kafka.md §2.8)."""

    row: int
    control_type: str
    coordinator_epoch: int | None  # ABORT and COMMIT markers only


class Run:
    """The rows of one log entry: values shared by all of them, then per-row lists (from
    the compiled walk: numpy offset/timestamp deltas, and `span`, its rows in the flush's
    `compiled.Columns`, which hold the keys, values and headers).

    Row offsets are `offset_base + offset_delta` and row timestamps `ts_base + ts_delta`
    (`ts_delta` ignored unless `ts_use_delta`; no timestamps when `ts_base` is None), both
    with Java's 64-bit wrap. Sparse per-row values (`headers`, `record_crcs`, `controls`)
    carry the row they belong to.
    """

    __slots__ = (
        "controls",
        "data_bytes",
        "entry",
        "headers",
        "keys",
        "offset_base",
        "offset_deltas",
        "record_crcs",
        "sequence_base",
        "span",
        "ts_base",
        "ts_deltas",
        "ts_use_delta",
        "values",
    )

    def __init__(
        self, entry: EntryColumns, offset_base: int, ts_base: int | None, ts_use_delta: bool
    ):
        self.entry = entry
        self.offset_base = offset_base
        self.ts_base = ts_base
        self.ts_use_delta = ts_use_delta
        self.sequence_base: int | None = None
        self.span: tuple[int, int] | None = None  # rows of the compiled walk's columns
        self.offset_deltas: list[int] | np.ndarray | tuple = ()
        self.ts_deltas: list[int] | np.ndarray | tuple = ()
        self.keys: list[bytes | None] | tuple = ()
        self.values: list[bytes | None] | tuple = ()
        self.headers: list[tuple[int, list[tuple[str, bytes | None]]]] | tuple = ()
        self.record_crcs: list[RecordCrc] | tuple = ()
        self.controls: list[Control] | tuple = ()
        self.data_bytes = 0

    def start_lists(self) -> None:
        """Empty per-row lists for a pure walk to append to. A run from the compiled walk
        keeps none: the runs of a flush outlive many collections, and seven lists per
        batch made Python's garbage collector take a sixth of a Kafka decode."""
        self.offset_deltas, self.ts_deltas, self.keys, self.values = [], [], [], []
        self.headers, self.record_crcs, self.controls = [], [], []

    @property
    def rows(self) -> int:
        return len(self.offset_deltas)


class RowBuffer:
    """Runs decoded since the last flush, turned into Arrow columns in one go.

    Per-row work in Python stays in the readers; here the shared values of each run are
    built once per run and spread over its rows with `take`, and offsets, timestamps and
    sequences are computed with numpy (whose int64/int32 arithmetic wraps like Java's).
    """

    def __init__(
        self,
        source: str,
        topic: str | None,
        partition: int | None,
        batch_rows: int,
        compiled_columns: Callable,
    ) -> None:
        """`compiled_columns` makes the flush's `compiled.Columns` (None: the pure walk)."""
        self.source = source
        self.topic = topic
        self.partition = partition
        self.batch_rows = batch_rows
        self.compiled_columns = compiled_columns
        self.compiled = None
        self._reset()

    def _reset(self) -> None:
        # new buffers per flush: the batches already yielded share the last ones
        self.compiled = self.compiled_columns(self.compiled)  # sized like the last flush's
        self.runs: list[Run] = []
        self.rows = 0
        self.data_bytes = 0

    def add(self, run: Run) -> None:
        if run.rows:
            self.runs.append(run)
            self.rows += run.rows
            self.data_bytes += run.data_bytes

    @property
    def full(self) -> bool:
        return self.rows >= self.batch_rows or self.data_bytes >= FLUSH_BYTES

    def flush(self) -> Iterator[pa.RecordBatch]:
        """The buffered rows as record batches of at most `batch_rows` rows."""
        if not self.rows:
            return
        batch = self._build()
        self._reset()
        yield from in_batches(batch, self.batch_rows)

    def _build(self) -> pa.RecordBatch:
        runs = self.runs
        n = self.rows
        counts = np.fromiter((run.rows for run in runs), np.int64, len(runs))
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        names = EntryColumns._fields
        per_entry = zip(*(run.entry for run in runs), strict=True)
        spread = partial(_spread, counts, n)

        def per_row(values, dtype) -> np.ndarray:
            return np.repeat(np.array(values, dtype), counts)

        def parts(attribute: str) -> list:
            return [getattr(run, attribute) for run in runs]

        if self.compiled is not None and self.compiled.rows == n:  # all from the compiled walk
            offset_deltas, ts_deltas = self.compiled.deltas()
        else:
            offset_deltas, ts_deltas = (
                _int64s(parts("offset_deltas"), n),
                _int64s(parts("ts_deltas"), n),
            )
        offsets = per_row([run.offset_base for run in runs], np.int64) + offset_deltas
        timestamps = per_row([run.ts_base or 0 for run in runs], np.int64) + ts_deltas * per_row(
            [run.ts_use_delta for run in runs], np.int64
        )
        no_timestamp = per_row([run.ts_base is None for run in runs], bool)
        sequences = _java_sequences(
            per_row([run.sequence_base or 0 for run in runs], np.int32),
            offset_deltas.astype(np.int32),
        )
        no_sequence = per_row([run.sequence_base is None for run in runs], bool)
        no_event_time = (
            no_timestamp
            | (timestamps == -1)
            | (timestamps > EVENT_TIME_MAX_MS)
            | (timestamps < EVENT_TIME_MIN_MS)
        )

        def sparse(attribute: str) -> tuple[np.ndarray, list]:
            """The runs' `attribute` items, and the rows of the batch they belong to."""
            rows, items = [], []
            for run, start in zip(runs, starts.tolist(), strict=True):
                for item in getattr(run, attribute):
                    rows.append(start + item.row)
                    items.append(item)
            return np.array(rows, np.int64), items

        crc_rows, crcs = sparse("record_crcs")
        compiled = self.compiled.arrays() if any(run.span for run in runs) else (None, None, None)
        control_rows, controls = sparse("controls")

        columns = {
            "source_file": pa.repeat(pa.scalar(self.source, pa.string()), n),
            "event_time": pa.array(
                np.where(no_event_time, 0, timestamps) * 1000,
                EVENT_TIME_TYPE,
                mask=no_event_time,
            ),
            "topic": pa.repeat(pa.scalar(self.topic, pa.string()), n),
            "partition": pa.repeat(pa.scalar(self.partition, pa.int32()), n),
            "offset": pa.array(offsets, pa.int64()),
            "sequence": pa.array(sequences, pa.int32(), mask=no_sequence),
            "timestamp_ms": pa.array(timestamps, pa.int64(), mask=no_timestamp),
            "record_crc_valid": _scatter(n, crc_rows, [crc.valid for crc in crcs], pa.bool_()),
            "key": _by_walk(runs, compiled[0], partial(_binary_column, "keys")),
            "value": _by_walk(runs, compiled[1], partial(_binary_column, "values")),
            "headers": _by_walk(runs, compiled[2], _headers_column),
            "control_type": _scatter(
                n, control_rows, [control.control_type for control in controls], pa.string()
            ),
            "coordinator_epoch": _scatter(
                n, control_rows, [control.coordinator_epoch for control in controls], pa.int32()
            ),
        }
        for name, values in zip(names, per_entry, strict=True):
            columns[name] = spread(values, KAFKA_SCHEMA.field(name).type)
        return pa.RecordBatch.from_arrays(
            [columns[field.name] for field in KAFKA_SCHEMA], schema=KAFKA_SCHEMA
        )


def _spread(counts: np.ndarray, n: int, values: tuple, type_: pa.DataType) -> pa.Array:
    """A column holding each entry's value on each of its rows (`counts` rows per entry):
    one repeated value when all entries share it (most columns of most flushes), numpy's
    repeat for other non-null fixed-width values, else Arrow's take."""
    first = values[0]
    if values.count(first) == len(values):
        return pa.repeat(pa.scalar(first, type_), n)
    if None not in values and (pa.types.is_integer(type_) or pa.types.is_boolean(type_)):
        return pa.array(np.repeat(np.array(values, type_.to_pandas_dtype()), counts), type_)
    return pa.array(values, type_).take(pa.array(np.repeat(np.arange(len(values)), counts)))


def _int64s(parts: list, n: int) -> np.ndarray:
    """One int64 array from the runs' per-row lists (pure walk) or arrays (compiled walk)."""
    if all(isinstance(part, list) for part in parts):
        return np.fromiter(chain.from_iterable(parts), np.int64, n)
    return np.concatenate([np.asarray(part, np.int64) for part in parts])


def _by_walk(
    runs: list[Run], compiled: pa.Array | None, from_lists: Callable[[list[Run]], pa.Array]
) -> pa.Array:
    """One column from the runs: each stretch of runs from the compiled walk is a slice of
    its `compiled` column (their rows are consecutive there), each stretch of runs holding
    Python lists is built by `from_lists` in one go."""
    chunks: list[pa.Array] = []
    for fast, stretch in groupby(runs, lambda run: run.span is not None):
        group = list(stretch)
        if fast:
            start = group[0].span[0]
            chunks.append(compiled.slice(start, group[-1].span[1] - start))
        else:
            chunks.append(from_lists(group))
    return chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)


def _binary_column(attribute: str, runs: list[Run]) -> pa.Array:
    # an iterator, not a list: pyarrow converts an iterator of bytes faster than a list
    return pa.array(chain.from_iterable(getattr(run, attribute) for run in runs), pa.binary())


def _java_sequences(base: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """`DefaultRecordBatch.incrementSequence` on int32 arrays: wraps to 0 past INT32_MAX."""
    int32_max = np.int32(0x7FFF_FFFF)
    wraps = base > int32_max - delta
    return np.where(wraps, delta - (int32_max - base) - np.int32(1), base + delta)


def _scatter(n: int, rows: np.ndarray, values: list, type_: pa.DataType) -> pa.Array:
    """A column that is null except at `rows`."""
    if not values:
        return pa.nulls(n, type_)
    dense: list = [None] * n
    for row, value in zip(rows.tolist(), values, strict=True):
        dense[row] = value
    return pa.array(dense, type_)


def _headers_column(runs: list[Run]) -> pa.Array:
    """The list<struct<key, value>> column of runs holding sparse `(row, pairs)` lists:
    empty lists except where a record has headers."""
    counts = np.zeros(sum(run.rows for run in runs), np.int32)
    headers = []
    start = 0
    for run in runs:
        for row, pairs in run.headers:
            counts[start + row] = len(pairs)
            headers.append(pairs)
        start += run.rows
    offsets = np.concatenate(([0], np.cumsum(counts, dtype=np.int32)))
    fields = list(HEADER_TYPE.value_type)
    size = int(offsets[-1])
    pairs = pa.StructArray.from_arrays(
        [
            pa.array((key for pairs in headers for key, _ in pairs), fields[0].type, size=size),
            pa.array((value for pairs in headers for _, value in pairs), fields[1].type, size=size),
        ],
        fields=fields,
    )
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pairs, type=HEADER_TYPE)

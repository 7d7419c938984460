"""Ids unique without a sort of the day: checked on the rows as the decode wrote them.

The decoders write a landed file's rows in the order of its ids: a Kafka segment's
offsets increase per topic-partition, a Cernan dump's (packet_index, record_index) per
file. So an id list splits into a group (topic, partition) and an order (offset): if
within every run of rows of one group in a part the order strictly increases, and the
order ranges of a group's runs never overlap, no two rows share an id. Checking that
needs one read of the id columns in the order the rows were written: the driver reads
each part file's id columns with pyarrow, a thread per core, while Spark runs the suite's
shared aggregation (`shared_scan`). Spark's own scan would hand the rows to Python
through its row-to-Arrow conversion (7x the time on a 1 GB Kafka day), and Spark tasks
reading the files would start Python workers, which cost more CPU and memory than the
read on the days this lake holds (docs/validation.md). Only the groups that break it (a
replayed batch, a file loaded twice) are searched for duplicates, by a Spark grouping of
their rows alone.

`suspect_groups`, then `duplicate_rows`, give what Great Expectations'
`expect_compound_columns_to_be_unique` counts: rows (those with every id column null
aside) whose id another row shares.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial, reduce
from itertools import pairwise

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from wirecodecs.locations import resolve

# Id column lists whose rows a decode writes in increasing order within a part file:
# the last n columns (the order) increase strictly for each value of the others (the
# group). A list the decoders do not order (Hercules' timestamp, uuid) is not here.
ORDERED_IDS: dict[tuple[str, ...], int] = {
    ("topic", "partition", "offset"): 1,
    ("kafka_topic", "kafka_partition", "kafka_offset"): 1,
    ("source_file", "packet_index", "record_index"): 2,
    ("source_file", "packet_index"): 1,
}


def order_of(columns: Sequence[str]) -> int:
    """How many trailing columns of `columns` are its order (0: not an ordered id)."""
    return ORDERED_IDS.get(tuple(columns), 0)


def kept(columns: Sequence[str]) -> Column:
    """The rows the uniqueness check counts: not every id column null (GE's default
    ignore_row_if for compound columns)."""
    return ~reduce(lambda a, b: a & b, [F.col(name).isNull() for name in columns])


def duplicate_rows(
    frame: DataFrame, columns: Sequence[str], ordered: int, suspects: list[tuple]
) -> int:
    """Rows of `frame` whose id (`columns`, the last `ordered` of them its order) another
    row shares, searched among the `suspects` groups only (`suspect_groups`)."""
    if not suspects:
        return 0
    columns = list(columns)
    ids = frame.where(kept(columns)).select(*columns)
    group = columns[:-ordered]
    keys = ids.sparkSession.createDataFrame(
        suspects, StructType([ids.schema[name] for name in group])
    ).toDF(*[f"_key_{i}" for i in range(len(group))])
    joined = ids.join(
        F.broadcast(keys),
        reduce(
            lambda a, b: a & b,
            [F.col(name).eqNullSafe(F.col(f"_key_{i}")) for i, name in enumerate(group)],
        ),
    )
    shared = joined.groupBy(*columns).count().where("count > 1")
    return shared.agg(F.sum("count")).first()[0] or 0


def suspect_groups(files: Sequence[str], columns: Sequence[str], ordered: int) -> list[tuple]:
    """The groups (values of the leading columns) whose rows in the Parquet `files` may
    share an id: a run of them in a part does not strictly increase in order, or two runs'
    ranges overlap. Reads the id columns of the files, a thread per core (pyarrow decodes
    without the GIL)."""
    group, order = list(columns[:-ordered]), list(columns[-ordered:])
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        found = pool.map(partial(_file_runs, group, order), files)
        runs = [run for file_runs in found for run in file_runs]
    return _offending(runs, len(group), len(order))


def _file_runs(group: list[str], order: list[str], location: str) -> list[tuple]:
    """The runs of one part file (see `_runs`), its rows with every id column null aside."""
    filesystem, path = resolve(location)
    runs = []
    with filesystem.open_input_file(path) as file:
        for batch in pq.ParquetFile(file).iter_batches(columns=[*group, *order]):
            present = reduce(pc.or_, [pc.is_valid(column) for column in batch.columns])
            runs += _runs(group, order, batch.filter(present))
    return runs


def _runs(group: list[str], order: list[str], batch: pa.RecordBatch) -> Iterator[tuple]:
    """One tuple per run of consecutive rows of one group: the group, its first and last
    order values, and how many steps inside it do not strictly increase (a null order
    value counts as one)."""
    n = batch.num_rows
    if n == 0:
        return
    starts = [0]
    if n > 1:
        changed = reduce(pc.or_, [_differs(batch.column(name)) for name in group])
        starts += [i + 1 for i in pc.indices_nonzero(changed).to_pylist()]
    steps = _increases(batch, order) if n > 1 else pa.array([], pa.bool_())
    nulls = reduce(pc.or_, [pc.is_null(batch.column(name)) for name in order])
    for start, end in zip(starts, [*starts[1:], n], strict=True):
        key = [batch.column(name)[start].as_py() for name in group]
        first = [batch.column(name)[start].as_py() for name in order]
        last = [batch.column(name)[end - 1].as_py() for name in order]
        bad = pc.sum(pc.invert(steps.slice(start, end - 1 - start))).as_py() or 0
        bad += pc.sum(nulls.slice(start, end - start)).as_py() or 0
        yield (*key, *first, *last, bad)


def _differs(column: pa.Array) -> pa.Array:
    """Per step i -> i+1: the value changed (a null and a value differ, two nulls do not)."""
    a, b = column.slice(0, len(column) - 1), column.slice(1)
    unequal = pc.not_equal(a, b)
    return pc.if_else(pc.is_null(unequal), pc.xor(pc.is_null(a), pc.is_null(b)), unequal)


def _increases(batch: pa.RecordBatch, order: list[str]) -> pa.Array:
    """Per step i -> i+1: the order tuple strictly increases (false where a value is null)."""
    result = None
    for name in reversed(order):
        column = batch.column(name)
        a, b = column.slice(0, len(column) - 1), column.slice(1)
        greater = pc.fill_null(pc.greater(b, a), False)
        if result is None:
            result = greater
        else:
            result = pc.or_(greater, pc.and_(pc.fill_null(pc.equal(b, a), False), result))
    return result


def _offending(runs: list, groups: int, orders: int) -> list[tuple]:
    """The groups some run breaks, or whose runs' order ranges overlap."""
    by_group = defaultdict(list)
    suspects = set()
    for run in runs:
        key = tuple(run[:groups])
        first, last = tuple(run[groups : groups + orders]), tuple(run[groups + orders : -1])
        if run[-1]:
            suspects.add(key)
        else:
            by_group[key].append((first, last))
    for key, ranges in by_group.items():
        if key in suspects:
            continue
        ranges.sort()
        if any(first <= last for (_, last), (first, _) in pairwise(ranges)):
            suspects.add(key)
    return sorted(suspects, key=repr)

"""The lake's tables: each a Delta Lake table (delta-rs) partitioned by `dt`, one day
replaced by one commit.

A decode run's executors write their parts into a folder of the run inside the day's
partition (`layout.run_dir`); `replace_day` then commits them as partition `dt=D` of the
table in one entry of its transaction log, which removes the previous run's files from the
table and adds the new ones. A reader of the table (`read_day`, `day_files`, any Delta
reader) sees the previous run or the new one, never a mix and never nothing, and the
commit costs a listing of the new parts, a read of each one's footer and one conditional
write, however large the day: no byte of it is copied. On S3 the log entry is written with
`If-None-Match`, so concurrent commits of different days of one table are safe without a
lock. The replaced files stay readable by time travel (`version=`) until `vacuum` deletes
the ones no version younger than its retention refers to, and with them the parts of runs
that never committed.

Why Delta and not Iceberg: Delta keeps each file's partition value in its log, so the parts
are registered as written; Iceberg (pyiceberg's `add_files`) reads it from a `dt` column
inside each file, which the parts do not have, and needs a catalog database every host
reaches, where a Delta table is whole in the store.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import time
import urllib.parse
from collections.abc import Hashable, Iterator, Mapping

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import TableNotFoundError
from deltalake.transaction import AddAction
from pyarrow import fs as pafs

from jobs import storage
from jobs.decode_settings import DEFAULT_RETENTION_HOURS
from wirecodecs.locations import absolute, check_location, s3_endpoint_url, s3_settings

PARTITION_COLUMN = "dt"
DAY_KEY = "wirelake.dt"  # in each commit's information: the day it replaced
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # delta-rs colours the chain of causes it reports


class SchemaChanged(Exception):
    """A run wrote parts whose columns differ from the table's."""


@contextlib.contextmanager
def on_store(table: str, operation: str) -> Iterator[None]:
    """An I/O error of delta-rs or pyarrow inside, raised again naming the table and the
    operation, on one line (it stays an OSError: a job retries it)."""
    try:
        yield
    except OSError as exc:
        cause = " ".join(ANSI_ESCAPE.sub("", str(exc)).replace("↳", "").split())
        raise OSError(f"{table}: {operation} failed on the store: {cause}") from exc


def _uri(table: str) -> tuple[str, dict[str, str]]:
    """`table` as delta-rs opens it, and its storage options: an `s3://` location's endpoint
    and region (from its query or the AWS environment, as `storage.resolve` finds them).
    Credentials stay in the environment, where delta-rs reads them itself."""
    location = absolute(table)
    check_location(location)
    parts = urllib.parse.urlsplit(location)
    if parts.scheme != "s3":
        return location, {}
    settings = s3_settings(location)
    options = {}
    endpoint = s3_endpoint_url(settings)
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        options["AWS_ALLOW_HTTP"] = str(endpoint.startswith("http:")).lower()
    if settings.get("region"):
        options["AWS_REGION"] = settings["region"]
    return urllib.parse.urlunsplit(parts._replace(query="")).rstrip("/"), options


def open_table(table: str, version: int | None = None) -> DeltaTable | None:
    """The Delta table at `table` (at `version`), None when there is none yet."""
    uri, options = _uri(table)
    try:
        return DeltaTable(uri, version=version, storage_options=options)
    except TableNotFoundError:
        return None


def _table_schema(parts: pa.Schema) -> pa.Schema:
    return parts.append(pa.field(PARTITION_COLUMN, pa.date32()))


def _difference(run: pa.Schema, table: pa.Schema) -> str:
    mine, theirs = ({f.name: str(f.type) for f in schema} for schema in (run, table))
    return "; ".join(
        f"{name}: {mine.get(name, 'absent')} in the run, {theirs.get(name, 'absent')} in the table"
        for name in sorted(mine.keys() | theirs.keys())
        if mine.get(name) != theirs.get(name)
    )


def _add_actions(table: str, run_folder: str, date: dt.date) -> tuple[list[AddAction], pa.Schema]:
    """The run's parts as log entries (path relative to the table, size, row count), and
    their schema: one listing and one footer read per part."""
    filesystem, folder = storage.resolve(run_folder)
    _, root = storage.resolve(table)
    found = filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
    parts = sorted(
        (info for info in found if info.base_name.endswith(".parquet")), key=lambda f: f.path
    )
    actions, schema = [], None
    now = int(time.time() * 1000)
    for info in parts:
        with filesystem.open_input_file(info.path) as stream:
            footer = pq.read_metadata(stream)
        schema = schema or footer.schema.to_arrow_schema()
        actions.append(
            AddAction(
                path=info.path.removeprefix(root.rstrip("/") + "/"),
                size=info.size,
                partition_values={PARTITION_COLUMN: date.isoformat()},
                modification_time=now,
                data_change=True,
                stats=json.dumps({"numRecords": footer.num_rows}),
            )
        )
    return actions, schema


def replace_day(table: str, date: dt.date, run_folder: str | None) -> int | None:
    """Make the parts in `run_folder` partition `dt=date` of `table`, in one commit; no
    folder, or one without parts: the day has no rows. Returns the table's new version
    (None: there is no table and nothing to write). Raises SchemaChanged."""
    with on_store(table, f"committing dt={date}"):
        actions, schema = _add_actions(table, run_folder, date) if run_folder else ([], None)
        delta = open_table(table)
        if delta is None:
            if schema is None:
                return None
            uri, options = _uri(table)
            DeltaTable.create(
                uri,
                schema=_table_schema(schema),
                partition_by=[PARTITION_COLUMN],
                mode="ignore",  # a run of another day may have created it meanwhile
                storage_options=options,
            )
            delta = open_table(table)
        current = pa.schema(delta.schema().to_arrow())
        if schema is not None and not _table_schema(schema).equals(current):
            raise SchemaChanged(
                f"{table}: this run's columns differ from the table's "
                f"({_difference(_table_schema(schema), current)}); a source whose row schema "
                "changes needs a new table (another warehouse or source name)"
            )
        delta.create_write_transaction(
            actions,
            mode="overwrite",
            schema=current,
            partition_by=[PARTITION_COLUMN],
            partition_filters=[(PARTITION_COLUMN, "=", date.isoformat())],
            commit_properties=CommitProperties(custom_metadata={DAY_KEY: date.isoformat()}),
        )
        delta.update_incremental()  # to the commit just made (or a later one, of other days)
        return delta.version()


def replace_days(
    tables: Mapping[Hashable, str], run_dirs: Mapping[Hashable, str], date: dt.date
) -> dict[str, int | None]:
    """`replace_day` for each table (by key) with the run folder of the same key; a table
    without one (the quarantine under `skip`) loses its day. Versions by table location."""
    return {table: replace_day(table, date, run_dirs.get(key)) for key, table in tables.items()}


def day_versions(table: str, date: dt.date) -> list[int]:
    """The versions of `table` that replaced day `date`, newest first: [0] is the run
    readers see, [1] the one it replaced (readable until vacuum deletes its files)."""
    with on_store(table, "reading the history"):
        delta = open_table(table)
        history = [] if delta is None else delta.history()
    return [entry["version"] for entry in history if entry.get(DAY_KEY) == date.isoformat()]


def day_files(table: str, date: dt.date, version: int | None = None) -> list[str]:
    """The files of partition `dt=date` (at `version`), as locations `storage` opens."""
    with on_store(table, f"listing the files of dt={date}"):
        delta = open_table(table, version)
        if delta is None:
            return []
        predicate = [(PARTITION_COLUMN, "=", date.isoformat())]
        files = delta.file_uris(file_pruning_predicate=predicate)
    query = urllib.parse.urlsplit(absolute(table)).query
    return [f"{uri}?{query}" if query else uri for uri in sorted(files)]


def day_rows(table: str, date: dt.date) -> int | None:
    """How many rows partition `dt=date` of `table` holds, from the counts its commit wrote
    into the log (no part is read); None when the table has no such day."""
    with on_store(table, f"reading the log of dt={date}"):
        delta = open_table(table)
        if delta is None:
            return None
        actions = pa.table(delta.get_add_actions(flatten=True))
    days, rows = (
        actions[name].to_pylist() for name in (f"partition.{PARTITION_COLUMN}", "num_records")
    )
    counts = [count for count, day in zip(rows, days, strict=True) if day == date]
    return sum(counts) if counts else None


def read_day(table: str, date: dt.date, version: int | None = None) -> pa.Table | None:
    """Partition `dt=date` of `table` (at `version`) in file order, without the partition
    column: the rows as the run wrote them. None when the table has no such day."""
    files = day_files(table, date, version)
    if not files:
        return None
    filesystem, _ = storage.resolve(files[0])
    paths = [storage.resolve(location)[1] for location in files]
    with on_store(table, f"reading dt={date}"):
        return pa.concat_tables(pq.read_table(path, filesystem=filesystem) for path in paths)


def vacuum(table: str, retention_hours: float = DEFAULT_RETENTION_HOURS) -> list[str]:
    """Delete the files of `table` older than `retention_hours` that no version younger
    than that refers to (replaced runs, and runs that never committed); returns their
    paths. It lists the whole table."""
    with on_store(table, "vacuum"):
        delta = open_table(table)
        if delta is None:
            return []
        return delta.vacuum(
            retention_hours=int(retention_hours),
            enforce_retention_duration=False,
            dry_run=False,
            full=True,  # also parts no commit ever named: runs killed or failed mid-commit
        )

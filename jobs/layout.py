"""Where a source's day lives: landing folder, tables, quarantine, manifest, reports.

Locations are URIs or absolute local paths, joined with "/" so that the same layout holds
on local disk, HDFS and S3. A URI's query (`s3://lake/w?endpoint_override=...`) stays at
its end: paths are joined before it.
"""

from __future__ import annotations

import datetime as dt

QUARANTINE_DIR = "_quarantine"  # tables and folders starting with "_" are not sources
MANIFEST_DIR = "_manifests"


def _split_query(location: str) -> tuple[str, str]:
    """(`location` without its query, "?query" or "")."""
    if "://" not in location:
        return location, ""
    head, mark, query = location.partition("?")
    return head, mark + query


def join(base: str, *parts: str) -> str:
    head, query = _split_query(base)
    return "/".join([head.rstrip("/"), *parts]) + query


def sibling(location: str, name: str) -> str:
    """`name` in the folder that holds `location`."""
    head, query = _split_query(location)
    return f"{head.rstrip('/').rsplit('/', 1)[0]}/{name}{query}"


def partition(date: dt.date) -> str:
    return f"dt={date.isoformat()}"


def landing_dir(landing_root: str, source: str, date: dt.date) -> str:
    """The folder one day of a source lands in (sources.yaml `paths.landing`)."""
    return join(landing_root, source, partition(date))


def table_dir(warehouse: str, source: str) -> str:
    """Decoded rows of `source`: a Delta table partitioned by `dt` (`jobs.lake`)."""
    return join(warehouse, source)


def table_name(source: str, table: str | None) -> str:
    """The table a source's companion table `table` is written to (None: the main one)."""
    return source if table is None else f"{source}_{table}"


def quarantine_table_dir(warehouse: str, source: str) -> str:
    """Undecodable frames of `source`, partitioned by `dt`."""
    return join(warehouse, QUARANTINE_DIR, source)


def manifest_path(warehouse: str, source: str, date: dt.date) -> str:
    """The decode run's accounting for one day (written last: its presence means done)."""
    return join(warehouse, MANIFEST_DIR, source, partition(date), "manifest.json")


def report_dir(reports: str, source: str, date: dt.date) -> str:
    return join(reports, source, partition(date))


def validation_path(reports: str, source: str, date: dt.date) -> str:
    """The validation result JSON of one day."""
    return join(report_dir(reports, source, date), "validation.json")


def data_docs_dir(reports: str, source: str, date: dt.date) -> str:
    """The Data Docs site of one day's validation (open index.html)."""
    return join(report_dir(reports, source, date), "data_docs")


def run_dir(table: str, date: dt.date, run_id: str) -> str:
    """Where run `run_id` writes its parts of partition `date` of `table`; they become the
    partition when the run commits (`jobs.lake.replace_day`)."""
    return join(table, partition(date), f"run-{run_id}")

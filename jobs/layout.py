"""Where a run reads and writes: the one place that knows the lake's folder layout.

Paths are plain strings so that local folders and URIs (hdfs://, s3://) work alike.
"""

from __future__ import annotations

import datetime as dt


def _join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


def landing_dir(landing_root: str, source: str, date: dt.date) -> str:
    return _join(landing_root, source, f"dt={date.isoformat()}")


def table_dir(warehouse: str, source: str) -> str:
    return _join(warehouse, source)


def partition_dir(warehouse: str, source: str, date: dt.date) -> str:
    return _join(warehouse, source, f"dt={date.isoformat()}")


def quarantine_dir(warehouse: str, source: str, date: dt.date) -> str:
    return _join(warehouse, "_quarantine", source, f"dt={date.isoformat()}")


def manifest_path(warehouse: str, source: str, date: dt.date) -> str:
    return _join(warehouse, "_manifests", source, f"dt={date.isoformat()}", "manifest.json")


def report_dir(reports: str, source: str, date: dt.date) -> str:
    return _join(reports, source, f"dt={date.isoformat()}")


def validation_path(reports: str, source: str, date: dt.date) -> str:
    return _join(report_dir(reports, source, date), "validation.json")


def data_docs_dir(reports: str, source: str, date: dt.date) -> str:
    return _join(report_dir(reports, source, date), "data_docs")

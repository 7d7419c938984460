"""Spark's Python processes import pyspark and py4j from the venv's site-packages, where
they have bytecode, although Spark puts its zips of the same modules first on their
PYTHONPATH: from a zip, every driver and worker would compile them from source
(`prefer_pyspark_bytecode` in ./wirelake; docs/performance.md)."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.spark


def test_python_workers_import_pyspark_from_site_packages(spark):
    def where(_):
        import py4j
        import pyspark

        yield pyspark.__file__, py4j.__file__, sys.path

    [(pyspark_file, py4j_file, path)] = (
        spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()
    )
    assert any(entry.endswith("/pyspark.zip") for entry in path), path  # Spark put it there
    site_packages = next(entry for entry in path if entry.endswith("site-packages"))
    assert pyspark_file == f"{site_packages}/pyspark/__init__.py", path
    assert py4j_file == f"{site_packages}/py4j/__init__.py", path

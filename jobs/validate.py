"""Validate one day of a source in the lake with its suite (spark-submit entry point).

    spark-submit jobs/validate.py --source kafka --suite kafka --date 2024-03-01 \\
        --warehouse data/warehouse --reports data/reports [--param crc_error_budget=0.001 ...]

Reads partition dt=D of the table the suite checks, <warehouse>/<table> (the source's own
table <source>, or its companion table <source>_<name> when the suite names one), and the
decode run's manifest (<warehouse>/_manifests/<source>/dt=D/manifest.json), builds the
Great Expectations context inside this job, runs the suite, and publishes
<reports>/<table>/dt=D/validation.json and Data Docs (<reports>/<table>/dt=D/data_docs/
index.html). Exits 1 when a critical expectation fails, naming each failed expectation
with its figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import shutil
import sys
import tempfile

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

import wirecodecs
from expectations import volume
from jobs import lake, layout, metrics, storage
from jobs.cli import (
    EXIT_FAILED,
    EXIT_OK,
    JobFailed,
    iso_date,
    key_value,
    run_job,
    scalar,
    setup_logging,
)
from wirecodecs.options import resolve

log = logging.getLogger("wirelake.validate")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jobs/validate.py", description="Validate one day of a source in the lake."
    )
    parser.add_argument("--source", required=True, help="table name, e.g. kafka")
    parser.add_argument("--suite", required=True, help="suite name (expectations/registry.py)")
    parser.add_argument("--date", required=True, type=iso_date, help="logical date D")
    parser.add_argument("--warehouse", required=True, help="lake root (path/URI)")
    parser.add_argument("--reports", required=True, help="reports root (path/URI)")
    parser.add_argument(
        "--param",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="suite parameter, a number or text (repeatable)",
    )
    return parser


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser()
    return resolve_suite(parser, parser.parse_args(argv))


def resolve_suite(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """`args` with the suite's spec, its parameters and the table it reads; an unknown
    suite or parameter is a usage error. It imports Great Expectations, a slow import, so
    `main` runs it while Spark starts."""
    from expectations import registry

    try:
        args.spec = registry.get(args.suite)
        args.params = args.spec.resolve({key: scalar(value) for key, value in args.param})
    except ValueError as exc:  # unknown suite or parameter, or a value of the wrong kind
        parser.error(str(exc))
    args.table = args.spec.table
    args.checked = layout.table_name(args.source, args.spec.table)  # the table the suite reads
    args.warehouse = storage.absolute(args.warehouse)
    args.reports = storage.absolute(args.reports)
    return args


def read_manifest(args) -> tuple[str, dict]:
    location = layout.manifest_path(args.warehouse, args.source, args.date)
    if not storage.exists(location):
        raise JobFailed(f"no decode manifest at {location}: run the decode job for this day first")
    return location, storage.read_json(location)


def read_partition(spark: SparkSession, args, manifest: dict) -> tuple[DataFrame, list[str]]:
    """Partition D of the checked table as the decode run the manifest records committed
    it (its version of the table), and its files; empty (its schema) when the run wrote
    none, so the count reconciliation, not a read error, reports a missing partition."""
    table = layout.table_dir(args.warehouse, args.checked)
    if "versions" not in manifest["outputs"]:
        raise JobFailed(
            f"the manifest of {args.source} dt={args.date} names no table versions: it was "
            "written before the lake's tables were Delta tables; decode the day again"
        )
    version = manifest["outputs"]["versions"].get(table)
    files = lake.day_files(table, args.date, version) if version is not None else []
    if files:
        return spark.read.parquet(*(storage.spark_location(spark, file) for file in files)), files
    log.warning("%s has no partition dt=%s; validating it as empty", table, args.date)
    fmt = wirecodecs.get(manifest["format"])
    if args.table is None:  # the options the decode recorded, read as it read them
        schema = fmt.row_schema(resolve(fmt, manifest["options"]))
    else:
        schema = fmt.tables[args.table]
    return spark.createDataFrame([], from_arrow_schema(schema, prefer_timestamp_ntz=False)), []


def run(spark: SparkSession, args: argparse.Namespace) -> dict:
    """Validate and publish; returns what validation.json holds: the Great Expectations
    validation result, plus the run's figures (source, dt, params, failures...)."""
    manifest_location, manifest = read_manifest(args)
    trailing = metrics.trailing_rows(
        args.warehouse, args.source, args.table, args.date, volume.VOLUME_DAYS
    )  # the checked table's rows on earlier days: the volume expectation's usual level
    from expectations import runner  # here: `main` loads Great Expectations while Spark starts
    from expectations.checks import RunFacts

    suite = args.spec.build(RunFacts(args.date, manifest, trailing), args.params)
    frame, files = read_partition(spark, args, manifest)
    docs_dir = layout.data_docs_dir(args.reports, args.checked, args.date)
    docs = tempfile.mkdtemp(prefix="wirelake-docs-")
    try:
        name = run_name(args, manifest)
        outcome = runner.validate(frame, suite, args.checked, docs, name, files)
        storage.publish_dir(docs, docs_dir)
    finally:
        shutil.rmtree(docs, ignore_errors=True)
    report = {
        **outcome.result,
        "source": args.source,
        "table": args.checked,
        "suite": args.suite,
        "dt": args.date.isoformat(),
        "params": args.params,
        "validated_at": dt.datetime.now(dt.UTC).isoformat(),
        "manifest": manifest_location,
        "critical_success": not outcome.critical_failures,
        "failures": outcome.failures,
        "data_docs": layout.join(docs_dir, "index.html"),
        "result_path": layout.validation_path(args.reports, args.checked, args.date),
    }
    storage.write_json(report["result_path"], report)
    metrics.record_validation(args.warehouse, report)
    return report


def run_name(args, manifest: dict) -> str:
    """What Data Docs name the validated batch by: source, table, day, decode run (its
    start); no '/', which the docs' file names refuse."""
    started = (manifest.get("run") or {}).get("started_at", "unknown")
    return f"source {args.source}, table {args.checked}, dt={args.date}, decode run {started}"


def summary_line(report: dict) -> str:
    stats = report["statistics"]
    critical = sum(1 for failure in report["failures"] if failure["critical"])
    return (
        f"validate {report['table']} dt={report['dt']} suite={report['suite']}: "
        f"{stats['evaluated_expectations']} expectations, "
        f"{stats['successful_expectations']} passed, "
        f"{stats['unsuccessful_expectations']} failed ({critical} critical); "
        f"result {report['result_path']}; data docs {report['data_docs']}"
    )


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    setup_logging()
    parser = build_parser()
    args = parser.parse_args(argv)
    report = run_job("validate", args, spark, run, prepare=lambda: resolve_suite(parser, args))
    if report is None:
        return EXIT_FAILED
    from expectations.runner import describe  # loaded by now, with Great Expectations

    for failure in report["failures"]:
        if not failure["critical"]:
            log.warning("%s", describe(failure))
    print(summary_line(report))
    critical = [describe(failure) for failure in report["failures"] if failure["critical"]]
    if critical:
        log.error(
            "critical expectation(s) failed for %s dt=%s:\n  %s\nfull result: %s",
            args.source,
            args.date,
            "\n  ".join(critical),
            report["result_path"],
        )
        return EXIT_FAILED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

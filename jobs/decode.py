"""Decode one source's landed files for one day into the lake (spark-submit entry point).

    spark-submit jobs/decode.py --source kafka --envelope kafka --payload raw \\
        --date 2024-03-01 --landing data/landing/kafka/dt=2024-03-01 --warehouse data/warehouse \\
        --reports data/reports [--error-policy fail|quarantine|skip] [--max-error-rate 0.01] \\
        [--max-bad-byte-rate 0.01] [--split-bytes 134217728] [--partitions N] [--options JSON]

A run is these steps, one module each; `run` below calls them in order:

0. `jobs.decode_args`: the arguments checked and resolved once (`DecodeRun`).
1. `jobs.plan`: the driver lists the landing folder and plans work units (`jobs.units.Unit`):
   whole files, or byte ranges of large ones that start at frames, found by executors.
2. `jobs.execute`: executors decode every unit once (`jobs.parts`) and write its rows,
   companion tables and quarantined frames straight to Parquet in a folder of the run
   inside partition D of each table; only each unit's report comes back.
3. `jobs.verify`: every file was decoded once, its accounting balances, and the error
   policy and gates pass.
4. `jobs.save`: the run's parts replace partition D of each table, one commit each that
   copies nothing, then the manifest is written, last; a failed run deletes its parts and
   leaves the previous day as it was.
"""

from __future__ import annotations

import datetime as dt
import sys
import time

from pyspark.sql import SparkSession

from jobs import execute, plan, save, verify
from jobs.cli import EXIT_FAILED, EXIT_OK, run_job, setup_logging
from jobs.decode_args import DecodeRun, parse_args
from jobs.save import DecodeReport
from jobs.units import Work


def run(spark: SparkSession, job: DecodeRun) -> DecodeReport:
    """Decode, check, write; returns the report written as the manifest. Raises JobFailed."""
    started = dt.datetime.now(dt.UTC), time.monotonic()
    listing = plan.list_landing(job.landing, job.fmt)
    partitions = job.partitions or plan.default_partitions(spark, listing.files)
    plan.log_listing(job, listing)
    folders = save.open_run(job)
    work = Work(
        job.envelope,
        job.payload,
        job.options,
        job.row_schema,
        listing.filesystem,
        folders.run_dirs,
        job.date,
    )
    try:
        splits = plan.find_split_points(
            spark, listing.files, job.fmt, work, job.split_bytes, partitions
        )
        reports, figures = execute.decode_files(spark, listing.files, splits, work, partitions)
        totals = verify.verify(reports, listing.files, job)
    except BaseException as exc:
        save.abandon(job, folders, exc)
        raise
    application_id = spark.sparkContext.applicationId
    return save.save(job, folders, listing, reports, totals, figures, started, application_id)


def summary_line(report: DecodeReport) -> str:
    totals = report.totals
    return (
        f"decode {report.job.source} dt={report.job.date.isoformat()}: files={totals.files} "
        f"bytes={totals.accounting.bytes_total} rows={totals.rows} "
        f"quarantined={totals.quarantine_items} "
        + "".join(f"{table}_rows={rows} " for table, rows in totals.table_rows.items())
        + f"truncated_tails={totals.truncated_tail_files} "
        f"error_rate={totals.error_rate:.4%} bad_byte_rate={totals.bad_byte_rate:.4%} "
        f"elapsed={report.run.elapsed_seconds:.1f}s"
    )


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    setup_logging()
    report = run_job("decode", parse_args(argv), spark, run)
    if report is None:
        return EXIT_FAILED
    print(summary_line(report))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

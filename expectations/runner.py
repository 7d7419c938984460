"""Run a suite on a Spark DataFrame with an in-memory Great Expectations context.

The context is built here, inside the job that validates (never at DAG parse time): a
Spark data source, a whole-DataFrame batch, a ValidationDefinition and a Checkpoint whose
UpdateDataDocsAction renders Data Docs into a site of our own (`wirelake`, not the
ephemeral context's temporary `local_site`) in a local folder, made to open offline
(`offline_docs`), that the caller then publishes.
"""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass

import great_expectations as gx
from great_expectations.checkpoint import UpdateDataDocsAction
from great_expectations.core.run_identifier import RunIdentifier
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)

from expectations import offline_docs, shared_scan

SITE = "wirelake"
LINEAGE = ["source_file", "byte_offset"]  # unexpected rows are reported by these columns
SHOWN_VALUES = 5  # unexpected values / rows quoted per failed expectation


@dataclass(frozen=True)
class Outcome:
    result: dict  # the Great Expectations validation result, as JSON
    failures: list[dict]  # one summary per failed expectation (see `failure_summary`)

    @property
    def success(self) -> bool:
        return not self.failures

    @property
    def critical_failures(self) -> list[dict]:
        return [failure for failure in self.failures if failure["critical"]]


def _context(docs_dir: str):
    site = {
        "class_name": "SiteBuilder",
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": docs_dir},
    }
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        data_docs_sites={SITE: site},
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def validate(
    frame,
    suite: gx.ExpectationSuite,
    asset: str,
    docs_dir: str,
    run_name: str,
    files: list[str] | None = None,
) -> Outcome:
    """Validate the Spark DataFrame `frame` (asset name `asset`; `run_name` says which
    day and decode run Data Docs show it as); Data Docs go to `docs_dir`. `files`: the
    Parquet files `frame` reads whole, whose ids the engine checks as written
    (shared_scan); without them, Great Expectations sorts the day for uniqueness.

    The first pass asks for counts and quotes (`BASIC`): quotes cost nothing on a clean
    day (shared_scan reads them only for metrics with unexpected values). A failed
    expectation sends the day to a second pass for the failing rows' lineage (`SUMMARY`)."""
    outcome = _run(frame, files, suite, asset, docs_dir, "BASIC", run_name)
    if outcome.failures:
        shutil.rmtree(docs_dir, ignore_errors=True)
        outcome = _run(frame, files, suite, asset, docs_dir, "SUMMARY", run_name)
    offline_docs.make_offline(docs_dir)
    return outcome


def _run(
    frame,
    files: list[str] | None,
    suite: gx.ExpectationSuite,
    asset: str,
    docs_dir: str,
    detail: str,
    run_name: str,
) -> Outcome:
    context = _context(docs_dir)
    source = shared_scan.add_datasource(context, "wirelake")
    engine = source.get_execution_engine()
    engine.data_asset_name = run_name  # what Data Docs call the batch
    engine.batch_files = files
    batch = source.add_dataframe_asset(name=asset).add_batch_definition_whole_dataframe(
        name="partition"
    )
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(
            name=f"{asset}-{suite.name}", data=batch, suite=context.suites.add(suite)
        )
    )
    checkpoint = context.checkpoints.add(
        gx.Checkpoint(
            name=f"{asset}-{suite.name}",
            validation_definitions=[definition],
            actions=[UpdateDataDocsAction(name="data_docs", site_names=[SITE])],
            result_format={
                "result_format": detail,
                "unexpected_index_column_names": LINEAGE,
                "partial_unexpected_count": SHOWN_VALUES,
            },
        )
    )
    run = checkpoint.run(
        batch_parameters={"dataframe": frame},
        run_id=RunIdentifier(run_name=run_name, run_time=dt.datetime.now(dt.UTC)),
    )
    (validation,) = run.run_results.values()
    result = validation.to_json_dict()
    failures = [failure_summary(item) for item in result["results"] if not item["success"]]
    return Outcome(result=result, failures=failures)


def failure_summary(item: dict) -> dict:
    """The figures a person needs from one failed expectation result."""
    config = item["expectation_config"]
    kwargs = {k: v for k, v in config["kwargs"].items() if k != "batch_id"}
    figures = item.get("result") or {}
    exception = item.get("exception_info") or {}
    return {
        "expectation": config["type"],
        "kwargs": kwargs,
        "critical": bool((config.get("meta") or {}).get("critical")),
        "why": (config.get("meta") or {}).get("why"),
        "observed_value": figures.get("observed_value"),
        "element_count": figures.get("element_count"),
        "missing_count": figures.get("missing_count"),
        "unexpected_count": figures.get("unexpected_count"),
        "unexpected_percent": figures.get("unexpected_percent"),
        "partial_unexpected_list": (figures.get("partial_unexpected_list") or [])[:SHOWN_VALUES],
        "unexpected_rows": (figures.get("partial_unexpected_index_list") or [])[:SHOWN_VALUES],
        "exception": exception.get("exception_message"),
    }


def describe(failure: dict) -> str:
    """One line: which expectation failed, on what, with which figures."""
    target = failure["kwargs"].get("column") or failure["kwargs"].get("column_list") or "table"
    level = "CRITICAL" if failure["critical"] else "warning"
    if failure["exception"]:
        figures = f"raised {failure['exception']}"
    elif failure["unexpected_count"] is not None:
        values = failure["element_count"] - (failure["missing_count"] or 0)
        allowed = 100 * (1 - failure["kwargs"].get("mostly", 1.0))
        figures = (
            f"{failure['unexpected_count']} unexpected of {values} non-null values "
            f"({failure['unexpected_percent']:.3f}%, allowed {allowed:.3f}%), "
            f"e.g. {failure['partial_unexpected_list']}"
        )
        if failure["unexpected_rows"]:
            figures += f" at {failure['unexpected_rows']}"
    else:
        expected = {k: v for k, v in failure["kwargs"].items() if k not in ("column", "meta")}
        figures = f"observed {failure['observed_value']}, expected {expected}"
    return f"{level} {failure['expectation']}({target}): {figures}"

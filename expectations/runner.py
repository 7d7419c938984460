"""Run a suite on a Spark DataFrame with an in-memory Great Expectations context.

The context is built here, inside the job that validates (never at DAG parse time): a
Spark data source, a whole-DataFrame batch, a ValidationDefinition and a Checkpoint whose
UpdateDataDocsAction renders Data Docs into a site of our own (`wirelake`, not the
ephemeral context's temporary `local_site`) in a local folder, made to open offline
(`offline_docs`), that the caller then publishes.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import great_expectations as gx
from great_expectations.checkpoint import UpdateDataDocsAction
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)

from expectations import offline_docs, shared_scan

SITE = "wirelake"
LINEAGE = ["source_file", "byte_offset"]  # unexpected rows are reported by these columns
SHOWN_VALUES = 5  # unexpected values / rows quoted per failed expectation
# From this day size (landed bytes) up, the first pass quotes no values. Quoting costs a
# third of a pass whether or not there is anything to quote (Kafka suite, warm: 0.9 of
# 2.6 s on a 2,262-row day, ~5 of ~14 s on a 1 GB day), and skipping it costs a second pass
# on a day with tolerated unexpected values. On a small day either is a second or two; on
# a large day, skipping saves seconds on every clean day, which most days are.
QUOTE_FIRST_BELOW_BYTES = 64 * 2**20


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
    frame, suite: gx.ExpectationSuite, asset: str, docs_dir: str, day_bytes: int
) -> Outcome:
    """Validate the Spark DataFrame `frame` (asset name `asset`), a day of `day_bytes`
    landed bytes; Data Docs go to `docs_dir`.

    The first pass asks for counts (`BASIC`). A failed expectation sends the day to a
    second pass for the failing rows' values and lineage (`SUMMARY`). Quoting unexpected
    values costs a scan per expectation even when there is none to quote, and for the
    uniqueness check a second sort of the day; so on a large day the first pass quotes
    nothing, and only a day where an expectation met unexpected values within its `mostly`
    is validated again for its quotes. Every path ends with the result and Data Docs that
    quoting from the start gives. 1 GB Kafka day, clean: 27.6 -> 22.7 s wall (Spark jobs
    14.4 -> 9.4 s)."""
    quotes = SHOWN_VALUES if day_bytes < QUOTE_FIRST_BELOW_BYTES else 0
    outcome = _run(frame, suite, asset, docs_dir, "BASIC", quotes)
    if outcome.failures:
        detail = "SUMMARY"
    elif not quotes and _met_unexpected_values(outcome.result):
        detail = "BASIC"
    else:
        detail = None
    if detail:
        shutil.rmtree(docs_dir, ignore_errors=True)
        outcome = _run(frame, suite, asset, docs_dir, detail, SHOWN_VALUES)
    offline_docs.make_offline(docs_dir)
    return outcome


def _met_unexpected_values(result: dict) -> bool:
    return any((item.get("result") or {}).get("unexpected_count") for item in result["results"])


def _run(
    frame, suite: gx.ExpectationSuite, asset: str, docs_dir: str, detail: str, quotes: int
) -> Outcome:
    context = _context(docs_dir)
    batch = (
        shared_scan.add_datasource(context, "wirelake")
        .add_dataframe_asset(name=asset)
        .add_batch_definition_whole_dataframe(name="partition")
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
                "partial_unexpected_count": quotes,
            },
        )
    )
    run = checkpoint.run(batch_parameters={"dataframe": frame})
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

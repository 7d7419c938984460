"""A Great Expectations Spark engine that reads the day once for a suite's metrics.

Great Expectations resolves a suite's metrics in rounds of its dependency graph, and its
Spark engine runs one aggregation per round and row filter (domain), plus one query per
direct metric: table counts first, then per-column unexpected counts, quoted values
(LIMIT queries, even on a clean day), a window (a sort of the day) per uniqueness check,
a query per SQL expectation. This engine keeps GE's metric graph, its metric functions
and its expectations (so verdicts, observed values and Data Docs stay GE's own), and
changes only when and how metric values are computed:

- Every aggregate metric (row counts, unexpected counts, sums...) and every count of a
  direct metric that can be one (rows of a pair or compound domain, unexpected rows of a
  condition without a window, rows a `SELECT ... FROM {batch} WHERE condition` query
  returns) is deferred: GE receives a placeholder and goes on with its graph. When GE
  needs a deferred value, or at the end of the graph, all of them are computed in one
  Spark aggregation over the batch, each over its own domain by a predicate instead of a
  filter; Spark reads only the columns they name.
- An ordered id list's uniqueness (`ordered_ids`) is counted from the rows as written,
  without the window GE sorts the day for, when the engine knows the Parquet files the
  batch reads (`batch_files`): the driver reads their id columns while Spark runs the
  shared aggregation.
- Quotes (unexpected values, their rows, a query's rows) are deferred too, and read only
  for metrics whose count is not zero: a clean day quotes nothing.

A domain filter this engine does not know how to turn into a predicate, or a metric it
does not know, is computed by GE's own engine code, as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import reduce
from typing import ClassVar, Literal

from great_expectations.core.id_dict import IDDict
from great_expectations.datasource.fluent import SparkDatasource
from great_expectations.exceptions import MetricResolutionError
from great_expectations.execution_engine import SparkDFExecutionEngine
from great_expectations.execution_engine.execution_engine import MetricComputationConfiguration
from great_expectations.expectations.legacy_row_conditions import parse_condition_to_spark
from great_expectations.expectations.metrics.query_metrics.query_table.query_table import (
    MAX_RESULT_RECORDS,
)
from great_expectations.expectations.model_field_types import CONDITION_PARSER_SPARK
from great_expectations.expectations.row_conditions import (
    Condition,
    PassThroughCondition,
    deserialize_row_condition,
)
from pyspark.sql import Column
from pyspark.sql import functions as F

from expectations import ordered_ids

# GE metrics that list table.row_count as a dependency but read only their condition
READ_ONLY_THEIR_CONDITION = (".condition", ".aggregate_fn", ".unexpected_count")
# Direct metrics that quote rows or values: read only where their count is not zero.
QUOTES = (".unexpected_values", ".unexpected_index_list", "unexpected_rows_query.table")
ROWS_QUERY = "unexpected_rows_query"
# A query that selects rows of the batch by a condition: its row count is that
# condition's count. Anything else in the condition (a subquery, a grouping) is not.
_WHERE_QUERY = re.compile(
    r"\s*SELECT\s.+?\sFROM\s+\{batch\}\s+WHERE\s+(?P<condition>.+?)\s*", re.S | re.I
)
_NOT_A_ROW_CONDITION = re.compile(r"\b(SELECT|FROM|GROUP|HAVING|ORDER|LIMIT|JOIN|UNION)\b", re.I)
# A query that reads the batch only through its row count (the byte gate's)
ROW_COUNT_OF_BATCH = "(SELECT count(1) FROM {batch})"


class _Pending:
    """What GE holds for a metric until the shared aggregation computes it."""

    def __repr__(self) -> str:
        return "<computed in the shared aggregation>"


PENDING = _Pending()


class SharedScanEngine(SparkDFExecutionEngine):
    """GE's Spark engine, its metric values computed in one shared aggregation."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.data_asset_name: str | None = None  # what Data Docs name the batch by
        self.batch_files: list[str] | None = None  # the Parquet files the batch reads whole
        self._graph: dict = {}
        # deferred metrics: id -> (GE's computation, how this engine computes it: a plan)
        self._pending: dict[str, tuple[MetricComputationConfiguration, tuple]] = {}
        self._counts: dict[tuple, str] = {}  # (metric family, domain, values) -> count's id

    def get_batch_data_and_markers(self, batch_spec):
        """GE's, the batch named: a DataFrame's batch spec has no data asset name, so its
        Data Docs page says "Data asset: None"."""
        if self.data_asset_name:
            batch_spec["data_asset_name"] = self.data_asset_name
        return super().get_batch_data_and_markers(batch_spec)

    def resolve_metrics(self, metrics_to_resolve, metrics=None, runtime_configuration=None):
        self._graph = {} if metrics is None else metrics  # GE's resolved metrics, updated
        if not metrics_to_resolve:  # the graph is done: nothing may stay deferred
            self._flush()
        return super().resolve_metrics(metrics_to_resolve, self._graph, runtime_configuration)

    def _process_direct_and_bundled_metric_computation_configurations(
        self,
        metric_fn_direct_configurations: list[MetricComputationConfiguration],
        metric_fn_bundle_configurations: list[MetricComputationConfiguration],
    ) -> dict:
        plans = [(config, self._plan_direct(config)) for config in metric_fn_direct_configurations]
        # a bundled metric is always deferred: shared, or GE's own aggregation of its
        # domain at the flush when its filter cannot be a predicate
        plans += [
            (config, self._plan_bundled(config)) for config in metric_fn_bundle_configurations
        ]
        now = [config for config, plan in plans if plan is None]
        if any(_waits(config) for config in now):  # computed now, from a deferred value
            self._flush()
            for config in now:
                _given(config, self._graph)
        deferred = {}
        for config, plan in plans:
            metric = config.metric_configuration
            if metric.metric_name.endswith(".unexpected_count") or metric.metric_name == (
                f"{ROWS_QUERY}.row_count"
            ):
                self._counts[_family(metric)] = metric.id
            if plan is not None:
                self._pending[metric.id] = (config, plan)
                deferred[metric.id] = PENDING
        resolved = super()._process_direct_and_bundled_metric_computation_configurations(now, [])
        self._metric_cache.update(deferred)
        return {**resolved, **deferred}

    def _plan_bundled(self, config: MetricComputationConfiguration) -> tuple:
        """An aggregate metric of GE's: its column as is over an unfiltered domain, else
        counted under the domain's predicate where the metric is a count, else GE's own
        aggregation of its domain."""
        name = config.metric_configuration.metric_name
        predicate = self._predicate(config.compute_domain_kwargs or {})
        condition = _condition(config, self._graph)
        if predicate is None:
            return ("aggregate", config.metric_fn)
        if name == "table.row_count":
            return ("aggregate", F.count(F.when(predicate, 1)))
        if name.endswith(".unexpected_count") and condition is not None:
            when = F.when(predicate & condition, 1).otherwise(0)  # GE's own sum, filtered
            return ("aggregate", F.sum(when))
        return ("bundle", None)

    def _plan_direct(self, config: MetricComputationConfiguration) -> tuple | None:
        """A direct metric that is a quote, or a count the shared aggregation (or the
        ordered id check) can give; None: GE computes it now."""
        metric = config.metric_configuration
        name = metric.metric_name
        if name.endswith(QUOTES):
            return ("quote", None)
        if name == f"{ROWS_QUERY}.row_count":
            return self._plan_query_count(metric)
        condition = _condition(config, self._graph)
        if condition is None or not name.endswith((".filtered_row_count", ".unexpected_count")):
            return None
        _, compute, accessor = config.metric_provider_kwargs["metrics"]["unexpected_condition"]
        domain = {**compute, **accessor}
        predicate = self._predicate(domain)
        if name.endswith(".filtered_row_count"):
            return ("aggregate", F.count(F.lit(1) if predicate is None else F.when(predicate, 1)))
        columns = accessor.get("column_list") or []
        order = ordered_ids.order_of(columns)
        if name == "compound_columns.unique.unexpected_count" and order:
            if self.batch_files is None:
                return None
            plain = not (compute.get("row_condition") or compute.get("filter_conditions"))
            if plain and domain.get("ignore_row_if") == "all_values_are_missing":
                return ("ordered", (list(columns), order))
            return None
        if " OVER (" in str(condition):  # a window (GE's uniqueness): not an aggregate
            return None
        unexpected = condition if predicate is None else predicate & condition
        return ("aggregate", F.count(F.when(unexpected, 1)))

    def _plan_query_count(self, metric) -> tuple | None:
        if self._predicate(metric.metric_domain_kwargs) is not None:
            return None
        query = metric.metric_value_kwargs[ROWS_QUERY]
        match = _WHERE_QUERY.fullmatch(query)
        if match and not _NOT_A_ROW_CONDITION.search(match["condition"]):
            return ("aggregate", F.count(F.when(F.expr(match["condition"]), 1)))
        if ROW_COUNT_OF_BATCH in query and "{batch}" not in query.replace(ROW_COUNT_OF_BATCH, ""):
            return ("rows_query", query)
        return None

    def _predicate(self, domain: Mapping) -> Column | None:
        """The rows of `domain` as a predicate over the batch: what GE's
        get_domain_records filters (row condition, filter conditions, ignore_row_if)."""
        parts = []
        if domain.get("row_condition"):
            parts.append(self._row_condition(domain["row_condition"], domain))
        parts += [F.expr(condition.condition) for condition in domain.get("filter_conditions", [])]
        ignore = domain.get("ignore_row_if")
        if "column" not in domain and ignore:
            if "column_A" in domain and "column_B" in domain:
                columns = [domain["column_A"], domain["column_B"]]
                joined = {"both_values_are_missing": "and", "either_value_is_missing": "or"}
            elif "column_list" in domain:
                columns = domain["column_list"]
                joined = {"all_values_are_missing": "and", "any_value_is_missing": "or"}
            else:
                columns, joined = [], {}
            if ignore in joined:
                nulls = [F.col(column).isNull() for column in columns]
                either = (lambda a, b: a & b) if joined[ignore] == "and" else (lambda a, b: a | b)
                parts.append(~reduce(either, nulls))
        return reduce(lambda a, b: a & b, parts) if parts else None

    def _row_condition(self, condition, domain: Mapping) -> Column:
        if isinstance(condition, dict):
            condition = deserialize_row_condition(condition)
        if isinstance(condition, PassThroughCondition):
            return F.expr(condition.pass_through_filter)
        if isinstance(condition, Condition):
            return F.expr(self.condition_to_filter_clause(condition))
        if domain.get("condition_parser") == CONDITION_PARSER_SPARK:
            return F.expr(condition)
        return parse_condition_to_spark(condition, schema=self._batch().schema)

    def _batch(self):
        return self.get_domain_records(domain_kwargs={})

    def _flush(self) -> None:
        """Compute every deferred metric: the shared aggregation, ordered uniqueness, then
        quotes of the metrics whose count is not zero; placeholders are replaced in GE's
        resolved metrics and the engine's cache. A metric that fails is taken out of them
        and reported to GE, which records it for its expectations and may ask again."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        kinds = {kind: {} for kind in ("aggregate", "ordered", "rows_query", "quote", "bundle")}
        for metric_id, (config, (kind, payload)) in pending.items():
            kinds[kind][metric_id] = payload if kind != "bundle" else config
        with ThreadPoolExecutor(max_workers=1) as driver:  # reads ids while Spark aggregates
            suspects = {
                metric_id: driver.submit(ordered_ids.suspect_groups, self.batch_files, *ids)
                for metric_id, ids in kinds["ordered"].items()
            }
            values, rows, failed = self._aggregate(kinds["aggregate"])
            for metric_id, (columns, order) in kinds["ordered"].items():
                found = suspects[metric_id].result()
                values[metric_id] = ordered_ids.duplicate_rows(self._batch(), columns, order, found)
        for metric_id, query in kinds["rows_query"].items():
            values[metric_id] = len(self._without_batch(query, rows).collect())
        if kinds["bundle"]:
            values.update(super().resolve_metric_bundle(list(kinds["bundle"].values())))
        self._graph.update(values)
        for metric_id in kinds["quote"]:
            try:
                values[metric_id] = self._quote(pending[metric_id][0], rows)
            except Exception as exc:  # as in `_aggregate`: only this quote's metric failed
                failed[metric_id] = exc
        self._graph.update(values)
        self._metric_cache.update(values)
        if failed:
            for metric_id in failed:
                self._graph.pop(metric_id, None)
                self._metric_cache.pop(metric_id, None)
            raise MetricResolutionError(
                message=str(next(iter(failed.values()))),
                failed_metrics=[pending[metric_id][0].metric_configuration for metric_id in failed],
            )

    def _aggregate(self, aggregates: Mapping[str, Column]):
        """The deferred aggregates in one Spark aggregation, and the batch's row count; if
        that fails, each alone (as GE falls back), with the errors of those that fail."""
        ids = list(aggregates)
        columns = [aggregates[metric_id].alias(f"m{i}") for i, metric_id in enumerate(ids)]
        batch = self._batch()
        try:
            row = batch.agg(*columns, F.count(F.lit(1)).alias("rows")).first()
        except Exception:
            values, failed = {}, {}
            for metric_id, aggregate in aggregates.items():
                try:
                    values[metric_id] = batch.agg(aggregate).first()[0]
                except Exception as exc:  # GE's verdict: this metric's expectations raised
                    failed[metric_id] = exc
            return values, batch.count(), failed
        return {metric_id: row[f"m{i}"] for i, metric_id in enumerate(ids)}, row["rows"], {}

    def _without_batch(self, query: str, rows: int):
        """A query that reads the batch only through its row count, on that count."""
        return self.spark.sql(query.replace(ROW_COUNT_OF_BATCH, f"(SELECT {rows} AS `count(1)`)"))

    def _quote(self, config: MetricComputationConfiguration, rows: int | None):
        """A quote metric: nothing to quote where its count is zero, else GE's own."""
        metric = config.metric_configuration
        count = self._graph.get(self._counts.get(_family(metric)))
        if count == 0:
            return []
        query = metric.metric_value_kwargs.get(ROWS_QUERY, "")
        if rows is not None and ROW_COUNT_OF_BATCH in query:
            found = self._without_batch(query, rows).limit(MAX_RESULT_RECORDS).collect()
            return [row.asDict() for row in found]
        _given(config, self._graph)
        return super()._process_direct_and_bundled_metric_computation_configurations([config], [])[
            metric.id
        ]


def _waits(config: MetricComputationConfiguration) -> bool:
    """The metric reads a deferred value. GE's row conditions, their aggregate partials
    and unexpected counts name table.row_count among their dependencies but read only
    their condition, so they do not."""
    if config.metric_configuration.metric_name.endswith(READ_ONLY_THEIR_CONDITION):
        return False
    return any(value is PENDING for value in config.metric_provider_kwargs["metrics"].values())


def _given(config: MetricComputationConfiguration, resolved: Mapping) -> None:
    """The metric's dependencies as resolved now (deferred values computed since)."""
    given = config.metric_provider_kwargs["metrics"]
    for name, dependency in (config.metric_configuration.metric_dependencies or {}).items():
        if given.get(name) is PENDING:
            given[name] = resolved[dependency.id]


def _condition(config: MetricComputationConfiguration, resolved: Mapping) -> Column | None:
    """The unexpected-row condition a map metric is counted by, when it has one: its own
    dependency, or its aggregate partial's (a bundled count)."""
    metric = config.metric_configuration
    dependency = config.metric_provider_kwargs.get("metrics", {}).get("unexpected_condition")
    partial = (metric.metric_dependencies or {}).get("metric_partial_fn")
    if dependency is None and partial is not None:
        condition = (partial.metric_dependencies or {}).get("unexpected_condition")
        dependency = resolved.get(condition.id) if condition is not None else None
    return dependency[0] if isinstance(dependency, tuple) else None


def _family(metric) -> tuple:
    """What ties a quote to its count: the metric family (name without its last part),
    domain and values (the result format aside)."""
    values = {
        key: value
        for key, value in metric.metric_value_kwargs.items()
        if key not in ("result_format", "fetch_all")
    }
    return (
        metric.metric_name.rsplit(".", 1)[0],
        IDDict(metric.metric_domain_kwargs).to_id(),
        IDDict(values).to_id(),
    )


class SharedScanDatasource(SparkDatasource):
    """GE's Spark data source, validated by `SharedScanEngine`."""

    type: Literal["wirelake_spark"] = "wirelake_spark"
    execution_engine_override: ClassVar[type[SparkDFExecutionEngine]] = SharedScanEngine


def add_datasource(context, name: str) -> SharedScanDatasource:
    """A data source of this engine in `context` (its factory, add_wirelake_spark, exists
    once this module is imported). persist=False: the data source would otherwise cache
    the whole partition, every column, before its first metric."""
    return context.data_sources.add_wirelake_spark(name=name, persist=False)

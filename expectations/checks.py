"""What every format's suite is made of, and the checks they share.

A suite is code: a `SuiteSpec` names its parameters (with defaults) and builds Great
Expectations expectations for one run (`RunFacts`: the day and the decode manifest). Each
expectation's `meta` says whether its failure is critical (fails the run) and why it
exists. Shared here: checksum verdicts within an error budget, event times inside the
run's window, required columns, ids unique, and the row count reconciled with the manifest;
every suite also checks the day's bad-byte rate against the gate it was decoded under, and
its row count against the usual volume of the days before (the metrics table).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import great_expectations as gx
import great_expectations.expectations as gxe
from great_expectations.expectations.expectation import Expectation

from expectations.volume import VOLUME_DAYS, VOLUME_MIN_DAYS, VOLUME_TOLERANCE, volume_band
from wirecodecs.registry import overlay

# Parameters of `in_run_window` (a suite lists them among its own, with these defaults).
WINDOW = {
    "max_lateness_hours": 24.0,  # how far before day D an event may have happened
    "max_clock_skew_minutes": 10.0,  # how far after day D a producer clock may run ahead
}
# Parameters of `rows_near_usual_volume`, which every suite accepts.
VOLUME = {
    "volume_tolerance": VOLUME_TOLERANCE,  # share the rows may differ from the trailing median
    "volume_critical": 0.0,  # 1: a day outside that band fails the run (default: a warning)
}


@dataclass(frozen=True)
class RunFacts:
    """What a suite is built for: the logical date, the manifest of the decode run and the
    checked table's rows on the days before (oldest first, from the metrics table)."""

    date: dt.date
    manifest: Mapping
    trailing_rows: Sequence[int] = ()


Param = float | str  # a number, or text (a list is comma-separated text: see `names_list`)


@dataclass(frozen=True)
class SuiteSpec:
    """A named suite: its parameters (name -> default) and how to build its expectations.

    `table` names the companion table the suite checks (e.g. "packets" for <source>_packets);
    None is the source's main table.
    """

    name: str
    description: str
    defaults: Mapping[str, Param]
    expectations: Callable[[RunFacts, Mapping[str, Param]], list[Expectation]]
    table: str | None = None

    def resolve(self, given: Mapping[str, object]) -> dict[str, Param]:
        """Defaults overlaid with `given`, each value of its default's kind (number or
        text); an unknown parameter or a value of the wrong kind is a configuration error."""
        defaults = {**VOLUME, **self.defaults}
        params = overlay(defaults, given, f"parameter(s) for suite {self.name}")
        for key, value in params.items():
            if isinstance(defaults[key], str):
                params[key] = str(value)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                params[key] = float(value)
            else:
                raise ValueError(f"suite {self.name} parameter {key} must be a number: {value!r}")
        return params

    def build(self, facts: RunFacts, given: Mapping[str, object]) -> gx.ExpectationSuite:
        params = self.resolve(given)
        return gx.ExpectationSuite(
            name=self.name,
            expectations=[
                *self.expectations(facts, params),
                bad_bytes_within_gate(facts),
                rows_near_usual_volume(facts, params),
            ],
            meta={"description": self.description, "dt": facts.date.isoformat(), **params},
        )


def names_list(text: str) -> list[str]:
    """A comma-separated text parameter as its names, blanks dropped ("a, b" -> [a, b])."""
    return [name.strip() for name in text.split(",") if name.strip()]


def meta(critical: bool, why: str) -> dict:
    return {"critical": critical, "why": why}


def checksum_verdicts(column: str, budget: float, *, always_present: bool) -> Expectation:
    """The checksum verdict `column` is true, but for a share `budget` (the error budget)
    of the rows.

    `always_present`: every row carries a verdict (a false one fails); otherwise only a
    false verdict counts and null (no checksum at that level) is fine.
    """
    why = f"{column} false means bytes changed after the producer wrote them"
    if always_present:
        return gxe.ExpectColumnValuesToBeInSet(
            column=column, value_set=[True], mostly=1.0 - budget, meta=meta(True, why)
        )
    return gxe.ExpectColumnValuesToNotBeInSet(
        column=column, value_set=[False], mostly=1.0 - budget, meta=meta(True, why)
    )


def run_window(
    date: dt.date, max_lateness_hours: float, max_clock_skew_minutes: float
) -> tuple[dt.datetime, dt.datetime]:
    """[D - lateness, D + 1 day + clock skew] in UTC: when day D's events may have happened."""
    start = dt.datetime.combine(date, dt.time(), tzinfo=dt.UTC)
    return (
        start - dt.timedelta(hours=max_lateness_hours),
        start + dt.timedelta(days=1, minutes=max_clock_skew_minutes),
    )


def in_run_window(column: str, facts: RunFacts, params: Mapping[str, float]) -> Expectation:
    """Event times (nulls aside) fall inside the run's window."""
    start, end = run_window(
        facts.date, params["max_lateness_hours"], params["max_clock_skew_minutes"]
    )
    return gxe.ExpectColumnValuesToBeBetween(
        column=column,
        min_value=start,
        max_value=end,
        meta=meta(True, "events outside the window landed on the wrong day or carry a bad clock"),
    )


def required(columns: Sequence[str], *, critical: bool = True, why: str = "") -> list[Expectation]:
    """One not-null expectation per column."""
    why = why or "lineage and identity columns every row must carry"
    return [
        gxe.ExpectColumnValuesToNotBeNull(column=column, meta=meta(critical, why))
        for column in columns
    ]


def unique_ids(columns: Sequence[str]) -> Expectation:
    """The format promises these columns identify a row (duplicates mean double loading)."""
    return gxe.ExpectCompoundColumnsToBeUnique(
        column_list=list(columns),
        meta=meta(True, "duplicates mean a file was loaded twice or a log was replayed"),
    )


def row_count_matches_manifest(facts: RunFacts) -> Expectation:
    """The partition holds exactly the records the decode run counted as good."""
    return gxe.ExpectTableRowCountToEqual(
        value=facts.manifest["totals"]["records_good"],
        meta=meta(True, "rows lost or added between decoding and the table"),
    )


def bad_bytes_within_gate(facts: RunFacts) -> Expectation:
    """The day's bytes not decoded (quarantined, skipped, truncated tails) stay within the
    decode run's `max_bad_byte_rate`: one row, with the figures, when they do not."""
    totals = facts.manifest["totals"]
    bad, total = totals["bytes_total"] - totals["bytes_decoded"], totals["bytes_total"]
    limit = float(facts.manifest["max_bad_byte_rate"])
    query = (
        f"SELECT {bad} AS bad_bytes, {total} AS total_bytes, {limit!r} AS max_bad_byte_rate "
        f"FROM (SELECT count(1) FROM {{batch}}) WHERE {bad} > {limit!r} * {total}"
    )
    return gxe.UnexpectedRowsExpectation(
        unexpected_rows_query=query,
        description=f"bytes not decoded are at most {limit:.2%} of the day's bytes",
        meta=meta(True, "undecoded bytes are data lost: one bad length can hide a whole file"),
    )


def rows_near_usual_volume(facts: RunFacts, params: Mapping[str, Param]) -> Expectation:
    """The day's rows lie within `volume_tolerance` of the median of the days before, so a
    day that lost a third of its rows does not pass silently; any count passes until the
    metrics table knows enough earlier days."""
    critical = bool(params["volume_critical"])
    band = volume_band(list(facts.trailing_rows), float(params["volume_tolerance"]))
    if band is None:
        why = (
            f"only {len(facts.trailing_rows)} earlier day(s) in the metrics table (fewer than "
            f"{VOLUME_MIN_DAYS}): no usual volume yet, so any row count passes"
        )
        return gxe.ExpectTableRowCountToBeBetween(min_value=0, meta=meta(critical, why))
    median, low, high = band
    why = "a day far from its usual volume lost or duplicated data upstream"
    return gxe.ExpectTableRowCountToBeBetween(
        min_value=low,
        max_value=high,
        meta={**meta(critical, why), "trailing_median": median, "trailing_days": VOLUME_DAYS},
    )

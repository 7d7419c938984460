"""Suites by name: the validate job looks suites up here, never by importing one directly."""

from __future__ import annotations

from expectations.cernan import CERNAN_PACKETS_SUITE, CERNAN_SUITE
from expectations.checks import SuiteSpec
from expectations.heka import HEKA_SUITE
from expectations.hercules import HERCULES_KAFKA_SUITE, HERCULES_SUITE
from expectations.inlong import INLONG_KAFKA_SUITE, INLONG_SUITE
from expectations.kafka import KAFKA_SUITE

SUITES = {
    spec.name: spec
    for spec in (
        KAFKA_SUITE,
        INLONG_SUITE,
        INLONG_KAFKA_SUITE,
        CERNAN_SUITE,
        CERNAN_PACKETS_SUITE,
        HERCULES_SUITE,
        HERCULES_KAFKA_SUITE,
        HEKA_SUITE,
    )
}


def names() -> list[str]:
    return sorted(SUITES)


def get(name: str) -> SuiteSpec:
    """The suite called `name`, or an error that lists the known ones."""
    try:
        return SUITES[name]
    except KeyError:
        raise ValueError(f"unknown suite {name!r}; known suites: {', '.join(names())}") from None

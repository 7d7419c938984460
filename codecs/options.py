"""Decoder options: declared once per format, read once per run.

A format declares its options as a frozen dataclass derived from `Options`: one field per
option, its type and default, and a `check()` for what a type cannot say (ranges, choices).
A carried format (envelope + payload) declares one such class per part, under the part's
format name, so an envelope option and a payload option of the same name are both
settable: `{"kafka": {"batch_rows": 1000}, "hercules": {"batch_rows": 10}}`.

`resolve(fmt, given)` is the one place a run's options are read: the decode job (on the
driver), the inspector, the benchmarks and the tests call it, and decoders receive what it
returns, already checked. Values are taken as they come (JSON's types): no guessing from
strings, and no bool where an int is declared.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry imports this module
    from wirecodecs.registry import WireFormat


class OptionError(ValueError):
    """A decoder option that is unknown, of the wrong type or out of range; the message
    names it."""


@dataclasses.dataclass(frozen=True)
class Options:
    """Base of a format's options: every field is checked against its declared type when
    the options are built, then the format's `check()` runs."""

    FORMAT: typing.ClassVar[str] = ""  # the format's name, for messages

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for field in dataclasses.fields(self):
            value, kind = getattr(self, field.name), hints[field.name]
            if type(value) is not kind:
                raise OptionError(
                    f"{self.FORMAT} option {field.name} must be {kind.__name__} like its default "
                    f"{field.default!r}, not {value!r}"
                )
        self.check()

    @classmethod
    def names(cls) -> list[str]:
        """The option names (the fields, not class settings such as FORMAT)."""
        return [field.name for field in dataclasses.fields(cls)]

    def check(self) -> None:
        """What the types do not say (a format's class overrides it); raises OptionError."""

    def positive(self, *names: str) -> None:
        """Each of `names` is at least 1."""
        for name in names:
            value = getattr(self, name)
            if value < 1:
                raise OptionError(
                    f"{self.FORMAT} option {name} must be a positive integer, not {value!r}"
                )

    def one_of(self, name: str, choices: Collection[str]) -> None:
        """Option `name` is one of `choices`."""
        value = getattr(self, name)
        if value not in choices:
            raise OptionError(
                f"{self.FORMAT} option {name} must be one of {', '.join(choices)}, not {value!r}"
            )


Declared = type[Options] | Mapping[str, type[Options]]  # a carried format: per part
Resolved = Options | Mapping[str, Options]


def resolve(fmt: WireFormat, given: Mapping[str, object]) -> Resolved:
    """The options of a run of `fmt`: its defaults overlaid with `given`, checked (a
    carried format's: one set per part, keyed by the part's format name)."""
    return _resolve(fmt.options, given, fmt.name)


def _resolve(declared: Declared, given: object, name: str) -> Resolved:
    if not isinstance(given, Mapping):
        raise OptionError(f"options for format {name} must be a mapping, not {given!r}")
    known = declared if isinstance(declared, Mapping) else declared.names()
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise OptionError(
            f"unknown option(s) for format {name}: {', '.join(map(str, unknown))}; "
            f"known: {', '.join(sorted(known))}"
        )
    if isinstance(declared, Mapping):
        return {part: _resolve(kind, given.get(part, {}), part) for part, kind in declared.items()}
    return declared(**given)


def from_json(text: str) -> dict[str, object]:
    """Options as the command lines take them: one JSON object (as sources.yaml writes it)."""
    try:
        given = json.loads(text)
    except json.JSONDecodeError as err:
        raise OptionError(f"options are not JSON ({err}): {text!r}") from None
    if not isinstance(given, dict):
        raise OptionError(f"options must be a JSON object of option names, not {text!r}")
    return given


def to_json(options: Resolved) -> dict[str, object]:
    """Resolved options as JSON values (the run manifest's record), which `resolve` reads
    back to the same options."""
    if isinstance(options, Options):
        return dataclasses.asdict(options)
    return {part: to_json(value) for part, value in options.items()}

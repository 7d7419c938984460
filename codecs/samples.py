"""Sample landing days: realistic dumps of one logical day, for the demo and for tests.

`write_sample_day(format_name, out_dir, date, seed)` writes what a producer fleet would land
for day `date` (UTC), with a few frames damaged on purpose, then the `_SUCCESS` marker.
What was written, damage included, comes back as a `SampleDay`, so a caller can check a
decode against what went in rather than against what came out. Each format's writer lives
in its own package (`wirecodecs.<format>.samples`) and plugs in through `SAMPLE_WRITERS`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from wirecodecs.cernan import samples as cernan_samples
from wirecodecs.heka import samples as heka_samples
from wirecodecs.hercules import samples as hercules_samples
from wirecodecs.inlong import samples as inlong_samples
from wirecodecs.kafka import samples as kafka_samples
from wirecodecs.registry import UnknownFormatError
from wirecodecs.sample_day import SUCCESS_MARKER, SampleDay, SampleFile

# A format's writer: (out_dir, day, seed) -> the files it wrote there
SampleWriter = Callable[[Path, dt.date, int], list[SampleFile]]


def formats() -> list[str]:
    """The formats that have a sample writer."""
    return sorted(SAMPLE_WRITERS)


def write_sample_day(
    format_name: str, out_dir: str | Path, date: dt.date | str, seed: int = 0
) -> SampleDay:
    """Write a sample landing day for `format_name` into `out_dir`; `_SUCCESS` comes last."""
    try:
        writer = SAMPLE_WRITERS[format_name]
    except KeyError:
        raise UnknownFormatError(
            f"no sample writer for format {format_name!r}; known: {', '.join(formats())}"
        ) from None
    day = date if isinstance(date, dt.date) else dt.date.fromisoformat(date)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    marker = out / SUCCESS_MARKER
    marker.unlink(missing_ok=True)  # a rerun must not look complete before it is
    files = writer(out, day, seed)
    marker.write_bytes(b"")
    return SampleDay(format_name, day, seed, files, marker)


# Sample writers by SOURCE name (dags/sources.yaml): the demo lands each source's day.
SAMPLE_WRITERS: dict[str, SampleWriter] = {
    "kafka": kafka_samples.kafka_sample_day,
    "inlong": inlong_samples.length_prefixed_day,
    "inlong_messages": inlong_samples.message_files_day,
    "inlong_kafka": inlong_samples.kafka_day,
    "cernan": cernan_samples.cernan_sample_day,
    "hercules": hercules_samples.gate_batch_day,
    "hercules_kafka": hercules_samples.kafka_day,
    "heka": heka_samples.heka_sample_day,
}
# Files the demo writes under <data_root>/secrets/ (mode 0600) for the sample sources,
# e.g. signing keys: name -> content. Real deployments put their own there.
SAMPLE_SECRETS: dict[str, bytes] = {}
SAMPLE_SECRETS[heka_samples.SAMPLE_SECRETS_FILE] = heka_samples.secrets()

"""A source's decode settings as sources.yaml gives them: the error policies, the gates, the
retention of replaced runs and the size of work units with their defaults, and
"{data_root}" in option values.

The DAG factory checks the config against these and jobs/decode.py applies them, so they
live here once. Imported by the DAG folder: it imports nothing heavy (no pyspark, no
wirecodecs).
"""

from __future__ import annotations

ERROR_POLICIES = ("fail", "quarantine", "skip")
DEFAULT_ERROR_POLICY = "quarantine"
# Gate -> default: the share of bad frames, and of bytes not decoded (quarantined, skipped,
# truncated tails), above which a run fails.
GATES = {"max_error_rate": 0.01, "max_bad_byte_rate": 0.01}
# Hours a replaced run of a day stays readable by time travel before vacuum deletes it
# (Delta's own default; jobs/lake.py).
DEFAULT_RETENTION_HOURS = 168
# Files above this many bytes are decoded as ranges of about this size where the format can
# find frames from any offset; `partitions` (Spark partitions) has no default: the job
# takes enough to keep every core busy and each near 128 MiB.
DEFAULT_SPLIT_BYTES = 128 << 20


def with_data_root(value: object, data_root: str) -> object:
    """An option or parameter value (a carried format's options: a mapping per part) with
    "{data_root}" in its strings made the data root, so that a value can name a secrets
    file kept beside the lake, not in the repository."""
    if isinstance(value, str):
        return value.replace("{data_root}", data_root)
    if isinstance(value, dict):
        return {key: with_data_root(item, data_root) for key, item in value.items()}
    return value

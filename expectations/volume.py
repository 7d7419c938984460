"""The usual volume of a table: the band of row counts a day is expected to fall in, from
the median of the days before it (the metrics table keeps their counts).

Shared by the suites (`checks.rows_near_usual_volume`), the validate job (how many earlier
days it reads) and the daily report (the band it draws). It imports nothing heavy: the
report's DAG task imports it.
"""

from __future__ import annotations

import math
import statistics

VOLUME_DAYS = 7  # a day's rows are compared with the median of this many days before it
VOLUME_MIN_DAYS = 3  # ... once the metrics table holds at least this many of them
VOLUME_TOLERANCE = 0.3  # rows may differ from that median by this share


def volume_band(trailing: list[int], tolerance: float = VOLUME_TOLERANCE) -> tuple | None:
    """(median, lowest, highest) row count of a usual day after the days `trailing` (oldest
    first; the last VOLUME_DAYS count); None when fewer than VOLUME_MIN_DAYS are known."""
    recent = trailing[-VOLUME_DAYS:]
    if len(recent) < VOLUME_MIN_DAYS:
        return None
    median = statistics.median(recent)
    return median, math.ceil(median * (1 - tolerance)), math.floor(median * (1 + tolerance))

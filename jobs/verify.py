"""Step 3 of a decode run, on the driver: every file was decoded once and every byte of it
is accounted for (decoded, quarantined, a truncated tail or skipped garbage), the run's
totals, and the error policy and gates.

Two gates decide whether a day is good enough to replace the previous one: bad frames /
all frames (`--max-error-rate`) and bytes not decoded / all bytes (`--max-bad-byte-rate`:
quarantined, skipped and truncated tails), so one corrupt length that hides half a file
fails the run however few frames it spans.
"""

from __future__ import annotations

import collections
import json
import logging
from collections.abc import Iterable

from jobs.cli import JobFailed
from jobs.decode_args import DecodeRun
from jobs.parts import SHOWN_BAD_FRAMES
from jobs.units import ACCOUNTING_COUNTS, COUNTS, DataFile, FileReport, Totals
from wirecodecs import FileAccounting

log = logging.getLogger("wirelake.decode")


def verify(reports: list[FileReport], files: list[DataFile], job: DecodeRun) -> Totals:
    """The run's totals, once the accounting balances and the policy and gates pass; raises
    JobFailed otherwise."""
    check_accounting(reports, files)
    totals = summarise(reports, job.fmt.tables)
    log.info(
        "decoded %d file(s): %d rows, %d quarantined frame(s), error rate %.4f%%, "
        "bad-byte rate %.4f%%",
        totals.files,
        totals.rows,
        totals.quarantine_items,
        100 * totals.error_rate,
        100 * totals.bad_byte_rate,
    )
    check_policy(reports, totals, job)
    return totals


def check_accounting(reports: list[FileReport], files: list[DataFile]) -> None:
    """Every planned file was decoded once, and every byte of it is accounted for."""
    sizes = {file.uri: file.size for file in files}
    decoded = collections.Counter(report.accounting.source for report in reports)
    problems = [f"{uri}: not decoded" for uri in sorted(set(sizes) - set(decoded))]
    problems += [f"{uri}: decoded {n} times" for uri, n in sorted(decoded.items()) if n > 1]
    for report in reports:
        accounting = report.accounting
        if not accounting.balanced or accounting.bytes_total != sizes.get(accounting.source):
            counts = {key: report.count(key) for key in COUNTS if "bytes" in key}
            problems.append(
                f"{accounting.source}: listed {sizes.get(accounting.source)} bytes, "
                f"accounting {json.dumps(counts)}"
            )
    if problems:
        raise JobFailed("byte accounting does not balance:\n  " + "\n  ".join(problems))


def summarise(reports: list[FileReport], tables: Iterable[str] = ()) -> Totals:
    """Run totals over the files' reports (`tables`: the format's companion tables)."""
    accounting = FileAccounting(source="", format="")
    for key in ACCOUNTING_COUNTS:
        setattr(accounting, key, sum(getattr(report.accounting, key) for report in reports))
    bad_bytes = accounting.bytes_total - accounting.bytes_decoded
    return Totals(
        accounting,
        rows=sum(report.rows for report in reports),
        quarantine_items=sum(report.quarantine_items for report in reports),
        table_rows={table: sum(report.table_rows[table] for report in reports) for table in tables},
        files=len(reports),
        truncated_tail_files=sum(1 for report in reports if report.accounting.bytes_truncated_tail),
        error_rate=max(
            _rate(accounting.frames_bad, accounting.frames_good),
            _rate(accounting.payloads_bad, accounting.payloads_good),
        ),
        bad_bytes=bad_bytes,
        bad_byte_rate=_rate(bad_bytes, accounting.bytes_decoded),
    )


def _rate(bad: int, good: int) -> float:
    return bad / (bad + good) if bad + good else 0.0


def check_policy(reports: list[FileReport], totals: Totals, job: DecodeRun) -> None:
    """Fail the run when the error policy or a gate says so."""
    sums = totals.accounting
    payloads = sums.payloads_good + sums.payloads_bad
    carried = f"; {sums.payloads_bad} of {payloads} payloads" if payloads else ""
    if job.error_policy == "fail" and (sums.frames_bad or sums.payloads_bad):
        reason = f"error policy 'fail' and {sums.frames_bad} bad frame(s){carried}"
    elif totals.error_rate > job.max_error_rate:
        reason = (
            f"error rate {totals.error_rate:.4%} ({sums.frames_bad} of "
            f"{sums.frames_good + sums.frames_bad} frames{carried}) is above "
            f"--max-error-rate {job.max_error_rate:.4%}"
        )
    elif totals.bad_byte_rate > job.max_bad_byte_rate:
        reason = (
            f"bad-byte rate {totals.bad_byte_rate:.4%} ({totals.bad_bytes} of "
            f"{sums.bytes_total} bytes not decoded: {sums.bytes_quarantined} "
            f"quarantined, {sums.bytes_skipped} skipped, {sums.bytes_truncated_tail} "
            f"in truncated tails) is above --max-bad-byte-rate {job.max_bad_byte_rate:.4%}"
        )
    else:
        return
    accounts = [report.accounting for report in reports]
    files = [
        f"{e.source}: {e.frames_bad} bad frame(s), {e.payloads_bad} bad payload(s), "
        f"{e.bytes_total - e.bytes_decoded} of {e.bytes_total} bytes not decoded "
        f"(stop: {e.stop_reason})"
        for e in accounts
        if e.frames_bad or e.payloads_bad or e.bytes_total > e.bytes_decoded
    ]
    first = sorted(
        (bad for report in reports for bad in report.first_bad),
        key=lambda bad: (bad.source_file, bad.byte_offset),
    )[:SHOWN_BAD_FRAMES]
    frames = [str(bad) for bad in first]
    raise JobFailed(
        f"{reason}; nothing written.\n  files:\n    "
        + "\n    ".join(files)
        + ("\n  first bad frames:\n    " + "\n    ".join(frames) if frames else "")
    )

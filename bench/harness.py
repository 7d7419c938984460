"""The measurement harness shared by the bench/<fmt>_decode.py scripts.

Every measurement runs in a fresh child process (the script itself, re-run with the hidden
`--worker ARG...` option), so that each starts from the same state and its peak memory is
its own. In the child, `best_of` times --repeat runs and reads the peaks; in the parent,
`measure` starts the child and `result` turns its figures into one result row. `main` holds
the command line (--size-mb, --repeat, --json) and the printing; `print_table` prints a
row per result from column specs. A script keeps only its inputs, readers and columns.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa

from wirecodecs.accounting import FileAccounting
from wirecodecs.options import resolve
from wirecodecs.registry import TableRows, get

# (title, format spec of a cell such as ">8.2f", result key or function of the result row);
# the title is aligned to the spec's width.
Column = tuple[str, str, str | Callable[[dict], object]]

MEMORY_COLUMNS: list[Column] = [
    ("peak RSS MB", ">13.0f", "peak_rss_mb"),
    ("RSS growth MB", ">15.0f", "rss_growth_mb"),
    ("Arrow peak MB", ">15.0f", "arrow_peak_mb"),
    ("traced peak MB", ">16.0f", "traced_peak_mb"),
]


class Decoded(NamedTuple):
    rows: int  # rows of the main table
    table_rows: int  # rows of the companion tables
    accounting: FileAccounting


def decode(name: str, path: str, options: Mapping[str, object]) -> Decoded:
    """The registered decoder `name` over the open file (streamed), every Arrow batch built;
    raises if it quarantines anything or its accounting does not balance."""
    fmt = get(name)
    accounting = FileAccounting(source=path, format=fmt.name)
    rows = table_rows = 0
    with open(path, "rb") as stream:
        for item in fmt.decode(stream, path, accounting, resolve(fmt, options)):
            if isinstance(item, pa.RecordBatch):
                rows += item.num_rows
            elif isinstance(item, TableRows):
                table_rows += item.batch.num_rows
            else:
                raise RuntimeError(f"unexpected damage: {item}")
    if not accounting.balanced:
        raise RuntimeError(f"unbalanced: {accounting}")
    return Decoded(rows, table_rows, accounting)


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def best_of(run: Callable[[], int], repeat: int, *, arrow_pool: bool = True) -> dict:
    """Inside the child, after the reader's set-up: the best time of `repeat` runs of `run`
    (which returns its row count), the peak RSS and its growth over the state at this call,
    the Arrow pool's high-water mark (unless `arrow_pool` is false), then tracemalloc's peak
    (Python objects and numpy buffers) in one more, untimed run."""
    baseline = _max_rss_mb()
    best = float("inf")
    rows = 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = run()
        best = min(best, time.perf_counter() - start)
    peak = _max_rss_mb()
    got = {"rows": rows, "seconds": best, "peak_rss_mb": peak, "rss_growth_mb": peak - baseline}
    if arrow_pool:  # Arrow buffers, not retention
        got["arrow_peak_mb"] = pa.default_memory_pool().max_memory() / 2**20
    tracemalloc.start()
    run()
    got["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return got


def measure(script: str, args: Sequence[object], repeat: int, env: dict | None = None) -> dict:
    """Run `script --worker ARGS` in a fresh process and return the figures it printed."""
    child = subprocess.run(
        [sys.executable, script, "--worker", *map(str, args), "--repeat", str(repeat)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(child.stdout)


def result(
    got: dict, count: int, path: Path, *, label: str, unit: str = "records", **labels: str
) -> dict:
    """One result row: `labels`, the `count` of `unit` the input holds, its MB, the rates
    of the best time, then the child's figures; stops if the child decoded another count."""
    if got["rows"] != count:
        raise SystemExit(f"{label} decoded {got['rows']} of {count} {unit}")
    mb = path.stat().st_size / 1e6
    return {
        **labels,
        unit: count,
        "mb": mb,
        f"{unit}_per_s": count / got["seconds"],
        "mb_per_s": mb / got["seconds"],
        **got,
    }


def machine(per: str = "measurement") -> str:
    """The first words of every table's footnote."""
    return (
        f"python {sys.version.split()[0]}, one process per {per}, {os.cpu_count()} "
        "cores on the machine"
    )


def print_table(results: list[dict], columns: Sequence[Column], note: str) -> None:
    """A header of the column titles, a line per result (a None cell shown as "-"), then
    `note`."""
    widths = [re.match(r"[<>^]?\d*", spec).group() for _, spec, _ in columns]
    print("".join(f"{title:{width}}" for (title, _, _), width in zip(columns, widths, strict=True)))
    for r in results:
        cells = (value(r) if callable(value) else r[value] for _, _, value in columns)
        print(
            "".join(
                f"{'-':{width}}" if cell is None else f"{cell:{spec}}"
                for cell, (_, spec, _), width in zip(cells, columns, widths, strict=True)
            )
        )
    print(note)


def main(
    doc: str,
    size_help: str,
    worker: Callable[..., dict],
    bench: Callable[[argparse.Namespace, Path], object],
    table: Callable[[object], None],
) -> int:
    """The command line of a bench script (`doc` is its docstring). In a child, print
    `worker(*ARGS, repeat=N)` as JSON; otherwise run `bench(args, tmp)` in a temporary
    folder under $TMPDIR and print what it returns as JSON (--json) or with `table`."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=50, help=size_help)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; best kept")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--worker", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, repeat=args.repeat)))
        return 0
    name = Path(sys.argv[0]).stem.removesuffix("_decode")
    with tempfile.TemporaryDirectory(prefix=f"{name}-bench-") as tmp:
        results = bench(args, Path(tmp))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        table(results)
    return 0

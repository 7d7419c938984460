"""What the fuzzer feeds each decoder, and the contract every input must keep.

Shared by the fuzzer (`./wirelake fuzz`, tests/fuzz/fuzz_decoders.py) and the regression
tests of what it found (test_fuzz_regressions.py), so both judge an input the same way.
A target is a registered format (a carried payload included) decoded under each of its
option variants, from one whole stream and again through short reads with tiny batches;
on every decode, whatever the bytes:

* no exception escapes the decode generator, which yields only the format's row batches
  (at most `batch_rows` rows each), its companion tables' rows and quarantined items;
* the accounting is balanced over exactly the input's size, `records_good` counts the
  rows, and the quarantined items (file order, no overlap, each with its head bytes) add
  up to `bytes_quarantined`;
* neither the read sizes, nor the batch size, nor (Kafka) the v2 record walk changes
  anything: rows, companion rows, quarantine and accounting are the same;
* with `Limits`, each decode finishes within a time and a memory (tracemalloc) budget.
  The fuzzer leaves these to libFuzzer's -timeout and -rss_limit_mb instead.

A broken contract raises `ContractBroken`, whose signature (the exception and where it
was raised, or the check that failed) names the bug, so that one bug found by many inputs
is known as one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import hashlib
import io
import json
import os
import signal
import tempfile
import traceback
import tracemalloc
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from decoding import (
    ChunkedReads,
    Decoded,
    as_declared,
    check_items,
    check_quarantined,
    decode_all,
    outcome,
)

from wirecodecs import get
from wirecodecs.compiled import WALKS, choice, forced
from wirecodecs.inflate import RawSource
from wirecodecs.options import Options, resolve
from wirecodecs.registry import TableRows
from wirecodecs.samples import write_sample_day

TESTS = Path(__file__).resolve().parents[1]
DATA = TESTS / "data"
REGRESSIONS = DATA / "fuzz"  # <target>/<input>: inputs that once broke the contract
SOURCE = "fuzz-0/00000000000000000000.log"  # a Kafka partition folder names topic and partition
# Decompression bounded at 1 MiB (the defaults allow 64-256 MiB): every input runs fast,
# the memory budget can be tight, and the bound's own path is what bombs reach.
BOUNDS = {"max_decompressed_bytes": 1 << 20, "max_lz4_body_bytes": 1 << 20}
READ_SIZES = [1, 2, 3, 5, 7, 11, 64, 4093]  # the short reads of the second decode, cycling
SMALL_BATCH = 3  # batch_rows of the second decode: every batch boundary is crossed
SAMPLE_DAY = dt.date(2024, 3, 1)


class ContractBroken(AssertionError):
    """A decoder broke its contract on an input; `signature` names the bug."""

    def __init__(self, signature: str, detail: str) -> None:
        super().__init__(f"{signature}\n{detail}")
        self.signature = signature


@dataclass(frozen=True)
class Limits:
    """Budgets of one decode: wall time, and tracemalloc's peak (Python allocations)."""

    seconds: float
    base_bytes: int  # allowed whatever the input
    bytes_per_input_byte: int

    def peak_bytes(self, size: int) -> int:
        return self.base_bytes + self.bytes_per_input_byte * size


@dataclass(frozen=True)
class Target:
    """A registry format, the option sets every input is decoded with, and its seeds:
    files under tests/data (glob patterns) and sample landing days (sample source names)."""

    name: str
    variants: tuple[Mapping[str, object], ...] = ({},)
    seeds: tuple[str, ...] = ()
    samples: tuple[str, ...] = ()
    # Inputs the decoder inflates whole: its quarantined items then have offsets and
    # lengths in inflated bytes, and only the balance over the file is checked.
    inflated: Callable[[bytes], bool] = lambda data: False

    @property
    def walks(self) -> tuple[str, ...]:
        """The decoders' two walks, where they have two (the compiled one is not traced for
        coverage, the pure one is): every input goes through both, or through the one
        WIRELAKE_WALK names. "" leaves the decoders' own choice."""
        if not any(WALKS[fmt].pure_below is not None for fmt in self.name.split("+")):
            return ("",)
        return ("pure", "compiled") if choice() == "auto" else (choice(),)


def _heka_inflated(data: bytes) -> bool:
    return RawSource(io.BytesIO(data)).sniff() is not None


def _typed_datum_schema() -> str:
    """A .avsc for cernan's typed `record` column: the all-types schema of the golden
    vector v2_schemas (written under $TMPDIR, where the option can point at it)."""
    sidecar = json.loads(gzip.decompress((DATA / "cernan" / "v2_schemas.json.gz").read_bytes()))
    text = sidecar["expected"]["packets"][0]["avro"]["schema_json"].encode()
    path = Path(tempfile.gettempdir()) / f"wirelake-fuzz-{hashlib.sha1(text).hexdigest()}.avsc"
    if not path.exists():  # written whole, then renamed: a reader never sees it half done
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as part:
            part.write(text)
        os.replace(part.name, path)
    return str(path)


TARGETS = {
    target.name: target
    for target in (
        Target(
            "kafka", seeds=("kafka/*.log", "kafka/*.bin", "kafka/*/*/*.log"), samples=("kafka",)
        ),
        Target(
            "heka",
            seeds=("heka/*.heka", "heka/*.heka.gz"),
            samples=("heka",),
            inflated=_heka_inflated,
        ),
        Target(
            "hercules",
            variants=(
                {"framing": "batch"},
                {"framing": "events"},
                {"framing": "stream_read"},
                {"compression": "lz4"},
            ),
            seeds=("hercules/*.bin", "hercules/*.bin.lz4"),
            samples=("hercules",),
        ),
        Target(
            "inlong",
            variants=({"framing": "message"}, {"framing": "length_prefixed"}),
            seeds=("inlong/*.bin",),
            samples=("inlong", "inlong_messages"),
        ),
        Target(
            "cernan",
            variants=(
                {"resync": False},
                {"resync": True},
                # typed records; frames over 4 KiB passed over unbuffered
                {
                    "datum_schema_file": _typed_datum_schema(),
                    "event_time_field": "l",
                    "max_packet_bytes": 4096,
                },
            ),
            seeds=("cernan/*.bin",),
            samples=("cernan",),
        ),
        Target("kafka+hercules", samples=("hercules_kafka",)),
        Target("kafka+inlong", samples=("inlong_kafka",)),
    )
}


# ---- the contract --------------------------------------------------------------------------


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so that no decoder's `except Exception` hides it."""


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    if seconds is None:
        yield
        return

    def expire(signum, frame):
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def walk_taken(walk: str) -> Iterator[None]:
    """Every decoder set to take `walk` for the call ("pure" or "compiled"; "" leaves the
    decoders' own choice)."""
    with forced(walk) if walk else contextlib.nullcontext():
        yield


def _where(error: BaseException) -> str:
    """The innermost frame of `error`'s traceback, as path:line (function)."""
    frame = traceback.extract_tb(error.__traceback__)[-1]
    path = Path(frame.filename)
    shown = path.relative_to(TESTS.parent) if path.is_relative_to(TESTS.parent) else path.name
    return f"{shown}:{frame.lineno} ({frame.name})"


def _failed_check(error: AssertionError) -> str:
    """The failed `assert` statement itself (this module's and decoding.py's)."""
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return frame.line or _where(error)


def _decode(target: Target, data: bytes, options: dict, walk: str, chunked: bool, limits):
    """One decode, raising ContractBroken for an escaped exception or a blown budget."""
    label = f"{target.name} {options} walk={walk or '-'} {'short reads' if chunked else 'whole'}"
    stream = ChunkedReads(data, READ_SIZES) if chunked else io.BytesIO(data)
    if limits is not None:
        tracemalloc.start()
    try:
        with walk_taken(walk), _time_limit(limits and limits.seconds):
            got = decode_all(stream, SOURCE, target.name, **as_declared(target.name, options))
    except _Timeout:
        raise ContractBroken("timeout", f"{label}: over {limits.seconds} s") from None
    except Exception as error:
        detail = "".join(traceback.format_exception(error))
        raise ContractBroken(f"{type(error).__name__} at {_where(error)}", detail) from None
    finally:
        if limits is not None:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
    if limits is not None and peak > limits.peak_bytes(len(data)):
        raise ContractBroken("memory", f"{label}: peak {peak} bytes for {len(data)} input bytes")
    return label, got


def _check_decoded(target: Target, data: bytes, got: Decoded, options: dict) -> None:
    """The checks of one decode, the accounting first (the most telling when it fails)."""
    acc = got.accounting
    assert acc.balanced
    assert acc.bytes_total == len(data)
    main = Decoded(acc, [item for item in got.items if not isinstance(item, TableRows)])
    # a carried message its payload format rejects is quarantined inside a decoded entry
    carried = "+" in target.name
    framed = [q for q in main.quarantined if not (carried and q.kind.startswith("payload_"))]
    if not target.inflated(data):
        assert check_quarantined(Decoded(acc, framed), data) <= len(data)
    fmt = get(target.name)
    schema = fmt.row_schema(resolve(fmt, as_declared(target.name, options)))
    check_items(main, data, schema, options["batch_rows"])
    assert acc.records_good == sum(batch.num_rows for batch in main.batches)
    for item in got.items:
        if isinstance(item, TableRows):
            assert item.batch.schema == fmt.tables[item.table]


def _outcome(got: Decoded) -> dict[str, str]:
    """`decoding.outcome` and the companion tables' rows, as text (NaN equals NaN)."""
    rows, quarantined, accounting = outcome(got)
    tables: dict[str, list[dict]] = {}
    for item in got.items:
        if isinstance(item, TableRows):
            tables.setdefault(item.table, []).extend(item.batch.to_pylist())
    parts = {"rows": rows, "quarantined": quarantined, "accounting": accounting, **tables}
    return {name: repr(value) for name, value in parts.items()}


def _differences(now: dict[str, str], first: dict[str, str]) -> str:
    """Which parts of two outcomes differ, each shown from where they part."""
    lines = []
    for name in sorted(set(now) | set(first)):
        a, b = first.get(name, ""), now.get(name, "")
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), 0)
            start = max(0, at - 80)
            lines.append(f"{name}: ...{a[start : at + 200]}\n  now ...{b[start : at + 200]}")
    return "\n".join(lines)


def check(
    target: Target,
    data: bytes,
    limits: Limits | None = None,
    ignore: Callable[[str], bool] = lambda signature: False,
) -> None:
    """Decode `data` as `target` every way (variants, walks, whole and short reads) and
    raise ContractBroken at the first broken promise (see the module docstring). A decode
    that breaks it in a way `ignore` accepts (by signature: a bug already known) is passed
    over; the other decodes still run."""
    fmt = get(target.name)
    for variant in target.variants:
        options = {**BOUNDS, **variant}
        first = None
        for walk in target.walks:
            for chunked in (False, True):
                batch_rows = SMALL_BATCH if chunked else default_batch_rows(fmt)
                opts = {**options, "batch_rows": batch_rows}
                try:
                    first = _check_one(target, data, opts, walk, chunked, limits, first)
                except ContractBroken as broken:
                    if not ignore(broken.signature):
                        raise


def default_batch_rows(fmt) -> int:
    """The batch size of a decode with default options (a carried format's envelope cuts
    its batches)."""
    options = resolve(fmt, {})
    envelope = fmt.name.partition("+")[0]
    return (options if isinstance(options, Options) else options[envelope]).batch_rows


def _check_one(target, data, options, walk, chunked, limits, first: dict | None) -> dict:
    """One decode checked, and its outcome compared with `first`'s; returns the outcome."""
    label, got = _decode(target, data, options, walk, chunked, limits)
    try:
        _check_decoded(target, data, got, options)
    except AssertionError as error:
        check_text = _failed_check(error)
        detail = f"{label}: {check_text}\naccounting: {got.accounting.to_dict()}"
        raise ContractBroken(f"contract: {check_text}", detail) from None
    now = _outcome(got)
    if first is not None and now != first:
        detail = f"{label}, unlike the first decode:\n{_differences(now, first)}"
        raise ContractBroken(f"contract: {_cause(target, data, options, walk, chunked, first)} "
                             "changed the outcome", detail)  # fmt: skip
    return first or now


def _cause(target, data, options, walk, chunked, first: dict) -> str:
    """What made a decode differ from the first one: the walk, the batch size or the
    read sizes (told apart by one more decode: whole reads, small batches)."""
    if not chunked:
        return "the walk"
    _, whole = _decode(target, data, options, walk, False, None)
    return "batch_rows" if _outcome(whole) != first else "the read sizes"


# ---- seeds ---------------------------------------------------------------------------------


def seed_files(target: Target, out_dir: Path) -> list[Path]:
    """Copy `target`'s seeds into `out_dir`: its tests/data files, the inputs kept under
    tests/data/fuzz/<target>/ and the data files of its sample days (written fresh,
    deterministic); returns the copies."""
    out_dir.mkdir(parents=True, exist_ok=True)
    copies = []
    for pattern in [*target.seeds, f"fuzz/{target.name}/*"]:
        for path in sorted(DATA.glob(pattern)):
            copies.append(out_dir / path.relative_to(DATA).as_posix().replace("/", "__"))
            copies[-1].write_bytes(path.read_bytes())
    data_file = get(target.name.split("+")[0]).data_file
    for source in target.samples:
        with tempfile.TemporaryDirectory() as tmp:
            day = write_sample_day(source, tmp, SAMPLE_DAY)
            for item in day.files:
                relative = item.path.relative_to(tmp).as_posix()
                if data_file(relative) and item.path.stat().st_size:
                    copies.append(out_dir / f"sample-{source}__{relative.replace('/', '__')}")
                    copies[-1].write_bytes(item.path.read_bytes())
    return copies


def regression_inputs() -> list[tuple[str, Path]]:
    """(target, file) for every kept input under tests/data/fuzz/<target>/."""
    return [
        (target, path)
        for target in TARGETS
        for path in sorted((REGRESSIONS / target).glob("*"))
        if path.is_file() and not path.name.startswith(".")
    ]

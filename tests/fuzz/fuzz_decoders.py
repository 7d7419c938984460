#!/usr/bin/env python3
"""Coverage-guided fuzzing of every decoder (atheris + libFuzzer): `./wirelake fuzz`.

    ./wirelake fuzz FORMAT|all [--seconds N] [--timeout S] [--rss-limit-mb M] [--max-len B]

FORMAT is one of the targets of tests/codecs/fuzz_targets.py (kafka, heka, hercules,
inlong, cernan, kafka+hercules, kafka+inlong); `all` fuzzes each in turn, N seconds each.
Every input is held to the decoder contract (`fuzz_targets.check`); libFuzzer bounds each
input's time (-timeout) and the process's memory (-rss_limit_mb; -malloc_limit_mb is
passed too, but libFuzzer enforces it only in sanitizer builds, which atheris wheels are
not). An input that breaks the contract is minimised (libFuzzer's -minimize_crash, keeping
the same bug), kept, and fuzzing goes on past the bugs kept so far.

Work goes under .tmp/fuzz/<target>/ (git-ignored): corpus/ (what libFuzzer found
interesting; it grows from run to run), seeds/ (rewritten each run from tests/data, the
sample days and tests/data/fuzz), crashes/ (per bug: <name>.bin, the minimised input, and
<name>.txt, its signature and details), fuzz.log (libFuzzer's own output); new/ and
minimised/ are scratch. Exit status 1 when a target has kept inputs in crashes/. A kept
input becomes a regression test once copied to tests/data/fuzz/<target>/ (see the README
there): test_fuzz_regressions.py holds it to the contract, and later runs start from it.

The same file is the fuzzing process itself: `fuzz_decoders.py --target=NAME [libFuzzer
flags] DIR...` (libFuzzer ignores flags that start with "--", so it passes them on when it
runs this file again to minimise a crash; hence the file is executable).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve()
sys.path.insert(0, str(ROOT / "tests" / "codecs"))  # fuzz_targets and the shared decoding.py
WORK = ROOT / ".tmp" / "fuzz"
CRASHES_ENV = "WIRELAKE_FUZZ_CRASHES"  # the crashes/ folder: its signatures are not reported
ONLY_ENV = "WIRELAKE_FUZZ_ONLY"  # while minimising: the one signature that counts
BROKEN = "wirelake-fuzz: broken: "  # the line the fuzzing process prints before it fails
MINIMISE_SECONDS = 300  # at most, per kept input (on top of the fuzzing time)
MINIMISE_RUNS = 500  # inputs tried per minimisation step


# ---- the fuzzing process ---------------------------------------------------------------------


def known_signatures(crashes: Path) -> set[str]:
    """The signatures of the bugs kept in `crashes` (first line of each <name>.txt)."""
    return {path.read_text().splitlines()[0] for path in sorted(crashes.glob("*.txt"))}


# The modules of numba-compiled code (`wirecodecs.compiled`: each format's is named
# `<format>/compiled.py`): numba compiles a function from its bytecode, which atheris'
# coverage tracing would change into code numba cannot type. Named here, not imported from
# wirecodecs, which must be imported traced.
COMPILED_MODULES = [
    *(f"wirecodecs.{fmt}.compiled" for fmt in ("kafka", "heka", "hercules", "inlong", "cernan")),
    "wirecodecs.kernels",
]


def fuzz_process(name: str, argv: list[str]) -> None:
    """Run libFuzzer with `argv` (its flags and folders, --target=NAME among them) over
    target `name`'s decoder, instrumented for coverage; never returns."""
    import atheris

    # The codecs are traced for coverage; the numba-compiled walks cannot be.
    with atheris.instrument_imports(include=["wirecodecs"], exclude=COMPILED_MODULES):
        import fuzz_targets

        from wirecodecs.registry import get, names

        for fmt in [*names(), *fuzz_targets.TARGETS]:
            get(fmt)  # the registry imports formats when first asked: here, traced

    from wirecodecs.compiled import warm

    warm()  # numba's compiling on a cold cache is no input's time (-timeout)

    target = fuzz_targets.TARGETS[name]
    only = os.environ.get(ONLY_ENV)
    known = known_signatures(Path(os.environ[CRASHES_ENV])) if CRASHES_ENV in os.environ else set()

    def ignore(signature: str) -> bool:
        return signature != only if only else signature in known

    def one_input(data: bytes) -> None:
        try:
            fuzz_targets.check(target, data, ignore=ignore)
        except fuzz_targets.ContractBroken as broken:
            print(f"{BROKEN}{broken.signature}", file=sys.stderr, flush=True)
            raise

    atheris.Setup([str(SCRIPT), *argv], one_input)
    atheris.Fuzz()


# ---- the command -----------------------------------------------------------------------------


@dataclass
class Run:
    """What fuzzing one target did, over all its libFuzzer processes."""

    target: str
    executions: int = 0
    seconds: float = 0.0  # fuzzing, minimisation left out
    coverage: int = 0  # libFuzzer's "cov": traced code edges reached
    features: int = 0  # libFuzzer's "ft": edges with hit counts, comparisons...
    corpus: int = 0
    kept: list[str] = field(default_factory=list)  # crashes/<name> found in this run

    def line(self, crashes: Path) -> str:
        rate = self.executions / self.seconds if self.seconds else 0
        found = f"{len(self.kept)} new" if self.kept else "nothing new"
        return (
            f"{self.target}: {self.executions} inputs in {self.seconds:.0f} s ({rate:.0f}/s), "
            f"coverage {self.coverage} edges / {self.features} features, corpus "
            f"{self.corpus}; found {found}; {len(known_signatures(crashes))} kept in "
            f"{crashes.relative_to(ROOT)}/"
        )


_STATUS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/", re.M)
_DONE = re.compile(r"^(?:Done (\d+) runs|stat::number_of_executed_units: (\d+))", re.M)


def _read_stats(log: str, run: Run) -> None:
    """Add one libFuzzer process's figures (from its output) to `run`."""
    executed = [int(a or b) for a, b in _DONE.findall(log)]
    status = _STATUS.findall(log)
    if status:
        last = status[-1]
        run.coverage = max(run.coverage, int(last[1]))
        run.features = max(run.features, int(last[2]))
        run.corpus = int(last[3])
    run.executions += max(executed or [int(status[-1][0]) if status else 0])


def libfuzzer_flags(args: argparse.Namespace) -> list[str]:
    return [
        f"-timeout={args.timeout}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        f"-malloc_limit_mb={args.rss_limit_mb}",
        f"-max_len={args.max_len}",
    ]


def _process(name, flags, paths, crashes: Path, log: Path, env=None, seconds=None):
    """Run the fuzzing process (and whatever it starts: libFuzzer runs itself again to
    minimise) for at most `seconds`, its output appended to `log` as it comes; returns its
    exit status and output."""
    command = [str(SCRIPT), f"--target={name}", *flags, *map(str, paths)]
    with open(log, "ab") as out:
        start = out.tell()
        process = subprocess.Popen(
            command,
            env={**os.environ, CRASHES_ENV: str(crashes), **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # one process group, ended as one
        )
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    with open(log, "rb") as written:
        written.seek(start)
        return process.returncode, written.read().decode(errors="replace")


def _slug(signature: str, data: bytes) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", signature.lower()).strip("-")[:60].rstrip("-")
    return f"{words}-{hashlib.sha1(data).hexdigest()[:8]}"


def _breaks(name, path: Path, signature: str, crashes: Path, log: Path, contract: bool) -> bool:
    """Whether the input at `path` still breaks the contract with `signature` (or, not a
    contract check but a timeout or an out-of-memory, still makes libFuzzer fail)."""
    status, output = _process(name, [], [path], crashes, log, {ONLY_ENV: signature})
    return status != 0 and (f"{BROKEN}{signature}\n" in output or not contract)


def _keep(name, artifact: Path, output: str, args, crashes: Path) -> str:
    """Minimise a failing input to the same signature and keep the smallest that still
    fails that way in `crashes`, its signature and details beside it; returns its name."""
    found = [line[len(BROKEN) :] for line in output.splitlines() if line.startswith(BROKEN)]
    kind = artifact.name.split("-")[0]  # crash, timeout, oom, slow-unit
    signature = found[-1] if found else f"{kind} (no contract line: see fuzz.log)"
    log, steps = crashes.parent / "fuzz.log", crashes.parent / "minimised"
    shutil.rmtree(steps, ignore_errors=True)
    steps.mkdir()
    flags = [
        *libfuzzer_flags(args),
        "-minimize_crash=1",
        f"-runs={MINIMISE_RUNS}",
        f"-artifact_prefix={steps}/",  # each step's smaller input: minimized-from-<sha1>
    ]
    _process(name, flags, [artifact], crashes, log, {ONLY_ENV: signature}, MINIMISE_SECONDS)
    smaller = sorted(steps.iterdir(), key=lambda path: path.stat().st_size)
    fails = (path for path in smaller if _breaks(name, path, signature, crashes, log, bool(found)))
    best = next(fails, artifact)
    data = best.read_bytes()
    kept = crashes / _slug(signature, data)
    kept.with_suffix(".bin").write_bytes(data)
    kept.with_suffix(".txt").write_text(
        f"{signature}\n\ntarget {name}: {artifact.stat().st_size} bytes, minimised to "
        f"{len(data)}\n\n" + "\n".join(output.splitlines()[-60:]) + "\n"
    )
    return kept.name


def fuzz_target(name: str, args: argparse.Namespace) -> Run:
    """Fuzz one target for args.seconds, keeping (minimised) every new contract break."""
    from fuzz_targets import TARGETS, seed_files

    work = WORK / name
    corpus, seeds, crashes, artifacts = (work / d for d in ("corpus", "seeds", "crashes", "new"))
    shutil.rmtree(seeds, ignore_errors=True)
    for folder in (corpus, crashes):
        folder.mkdir(parents=True, exist_ok=True)
    seed_files(TARGETS[name], seeds)
    run = Run(name)
    while (left := args.seconds - run.seconds) >= 1:
        shutil.rmtree(artifacts, ignore_errors=True)
        artifacts.mkdir()
        flags = [
            *libfuzzer_flags(args),
            f"-max_total_time={int(left)}",
            f"-artifact_prefix={artifacts}/",
            "-print_final_stats=1",
        ]
        started = time.monotonic()
        status, output = _process(name, flags, [corpus, seeds], crashes, work / "fuzz.log")
        run.seconds += time.monotonic() - started
        _read_stats(output, run)
        if status == 0:
            break
        failing = sorted(artifacts.iterdir())
        if not failing:
            print(output[-3000:], file=sys.stderr)
            raise SystemExit(f"wirelake fuzz: libFuzzer failed on {name} (see above)")
        kept = _keep(name, failing[0], output, args, crashes)
        run.kept.append(kept)
        print(f"  {name}: kept {crashes.relative_to(ROOT)}/{kept}.bin", flush=True)
    return run


def main(argv: list[str]) -> int:
    from fuzz_targets import TARGETS

    parser = argparse.ArgumentParser(
        prog="./wirelake fuzz",
        description=__doc__.split("\n\nThe same file")[0],  # not how it runs itself
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("format", metavar="FORMAT", choices=[*TARGETS, "all"],
                        help=f"one of: {', '.join(TARGETS)}, or all")  # fmt: skip
    parser.add_argument(
        "--seconds",
        type=int,
        default=300,
        help="of fuzzing per target (default 300); minimising what it finds comes on top",
    )
    parser.add_argument("--timeout", type=int, default=10, help="seconds per input (default 10)")
    parser.add_argument("--rss-limit-mb", type=int, default=2048, help="default 2048")
    parser.add_argument("--max-len", type=int, default=16384, help="input bytes (default 16384)")
    args = parser.parse_args(argv)
    names = list(TARGETS) if args.format == "all" else [args.format]
    runs = []
    for name in names:
        print(f"fuzzing {name} for {args.seconds} s (log: .tmp/fuzz/{name}/fuzz.log)", flush=True)
        runs.append(fuzz_target(name, args))
        print(runs[-1].line(WORK / name / "crashes"), flush=True)
    return 1 if any(known_signatures(WORK / run.target / "crashes") for run in runs) else 0


if __name__ == "__main__":
    worker = [arg for arg in sys.argv[1:] if arg.startswith("--target=")]
    if worker:
        fuzz_process(worker[0].split("=", 1)[1], sys.argv[1:])
    sys.exit(main(sys.argv[1:]))

"""Run a command and measure its whole process tree: wall, CPU and peak memory.

A Spark job is a tree (spark-submit's JVM, the Python driver it starts, the pyspark daemon
and the workers it forks), so one process's figures say little. This process makes itself
a child subreaper (Linux prctl), so that descendants orphaned on the way (a daemon the JVM
did not wait for) are re-parented to it and reaped here: `getrusage(RUSAGE_CHILDREN)` then
holds the CPU time of every process of the tree that was waited for. Children of a process
that ignores SIGCHLD (pyspark's daemon: its workers) are reaped by the kernel and reach no
one's rusage: theirs is the last of their CPU times sampled every SAMPLE_SECONDS with
psutil. Memory is the tree's summed RSS from the same samples: its peak, and the peaks of
each kind of process (JVM, pyspark workers, Python). A service the benchmark itself runs
beside the commands (an S3 server) is named in SERVICES: neither measured nor reaped.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import resource
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

SAMPLE_SECONDS = 0.2
REAP_SECONDS = 30  # how long descendants may outlive the command before they are killed
TAIL_LINES = 15
PR_SET_CHILD_SUBREAPER = 36
SERVICES: set[int] = set()  # pids of this process's children that outlive every command
# left out of a log's tail: Spark's INFO lines, Java stack frames, blank lines
NOISE = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO |\s+at |\s+\.\.\. \d+ more|\s*$")


@dataclass
class TreeRun:
    """What one run of a command cost; `kinds` maps a kind of process to its peak RSS."""

    exit_code: int
    wall_seconds: float
    # user + sys of every process of the tree: RUSAGE_CHILDREN, plus the last sample of the
    # processes the kernel reaped (their parent ignored SIGCHLD)
    cpu_seconds: float
    sampled_cpu_seconds: float  # the sum of every process's last sample: a cross-check
    peak_rss_mb: float  # peak of the tree's summed RSS
    kinds: dict[str, float]
    timed_out: bool
    stdout: Path
    stderr: Path

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def tail(path: Path, lines: int = TAIL_LINES, width: int = 300) -> list[str]:
    """The last `lines` lines of a log, NOISE left out, each cut at `width` characters."""
    text = path.read_text(errors="replace")
    kept = [line[:width] for line in text.splitlines() if not NOISE.match(line)]
    return kept[-lines:]


def kind(process: psutil.Process) -> str:
    """jvm, python-workers (pyspark's daemon and the workers it forks), python, or the
    process's name; raises psutil.Error when it is gone."""
    cmdline = " ".join(process.cmdline())
    name = process.name()
    if name == "java" or "/java " in cmdline:
        return "jvm"
    if "pyspark.daemon" in cmdline or "pyspark.worker" in cmdline:
        return "python-workers"
    return "python" if "python" in name else name


def ignores_sigchld(pid: int) -> bool:
    """True when process `pid` ignores SIGCHLD (pyspark's daemon does): the kernel reaps
    its children, and their CPU time reaches nobody's RUSAGE_CHILDREN."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    ignored = re.search(r"^SigIgn:\s*([0-9a-f]+)$", status, re.MULTILINE)
    return bool(ignored and int(ignored.group(1), 16) >> (signal.SIGCHLD - 1) & 1)


def become_subreaper() -> bool:
    """Make orphaned descendants this process's children (Linux); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class _Sampler:
    """Summed RSS of this process's descendants, its peak and the peak per kind; the last
    CPU time seen of each of them, and which of them the kernel will reap (`unreaped`)."""

    def __init__(self) -> None:
        self.me = psutil.Process()
        self.cpu: dict[tuple[int, float], float] = {}
        self.unreaped: set[tuple[int, float]] = set()
        self.peak = 0.0
        self.peaks: dict[str, float] = {}

    def sample(self) -> list[psutil.Process]:
        total, by_kind, alive, parents = 0, {}, [], {}
        for process in self.me.children(recursive=True):
            if process.pid in SERVICES:
                continue
            try:
                key = (process.pid, process.create_time())
                rss = process.memory_info().rss
                times = process.cpu_times()
                what = kind(process)  # every time: spark-submit's shell becomes the JVM
                parent = process.ppid()
            except psutil.Error:  # gone, or a zombie waiting to be reaped
                continue
            alive.append(process)
            self.cpu[key] = times.user + times.system
            if parent not in parents:
                parents[parent] = ignores_sigchld(parent)
            (self.unreaped.add if parents[parent] else self.unreaped.discard)(key)
            total += rss
            by_kind[what] = by_kind.get(what, 0) + rss
        self.peak = max(self.peak, total / 2**20)
        for name, rss in by_kind.items():
            self.peaks[name] = max(self.peaks.get(name, 0.0), rss / 2**20)
        return alive

    def reaped(self, pid: int) -> None:
        """`pid` was reaped here after all: its CPU time is in RUSAGE_CHILDREN."""
        self.unreaped = {key for key in self.unreaped if key[0] != pid}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: Sequence[str], log: Path, *, timeout: float, cwd: Path | None = None) -> TreeRun:
    """Run `command` (stdout and stderr to `log`.out / `log`.err), sampling its tree until
    it exits or `timeout` seconds pass (then its process group is killed); then reap every
    descendant it left, killing those still alive after REAP_SECONDS."""
    sampler = _Sampler()
    cpu_before = _children_cpu()
    out, err = log.with_suffix(".out"), log.with_suffix(".err")
    with out.open("wb") as stdout, err.open("wb") as stderr:
        start = time.perf_counter()
        child = subprocess.Popen(
            command, stdout=stdout, stderr=stderr, cwd=cwd, start_new_session=True
        )
        timed_out = False
        while True:
            sampler.sample()
            try:
                child.wait(SAMPLE_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if time.perf_counter() - start > timeout:
                    timed_out = True
                    os.killpg(child.pid, signal.SIGKILL)
        wall = time.perf_counter() - start
    _reap(sampler)
    return TreeRun(
        exit_code=child.returncode,
        wall_seconds=wall,
        cpu_seconds=_children_cpu() - cpu_before + sum(sampler.cpu[k] for k in sampler.unreaped),
        sampled_cpu_seconds=sum(sampler.cpu.values()),
        peak_rss_mb=sampler.peak,
        kinds=dict(sorted(sampler.peaks.items())),
        timed_out=timed_out,
        stdout=out,
        stderr=err,
    )


def _reap(sampler: _Sampler) -> None:
    """Wait for the descendants that outlived the command (re-parented here), so that
    their CPU time reaches RUSAGE_CHILDREN; kill those left after REAP_SECONDS."""
    deadline = time.monotonic() + REAP_SECONDS
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no children left
        if pid:
            sampler.reaped(pid)
            continue
        if all(child.pid in SERVICES for child in sampler.me.children()):
            return  # only services left, none of them the command's
        alive = sampler.sample()
        if time.monotonic() > deadline:
            for process in alive:
                with contextlib.suppress(psutil.Error):
                    process.kill()
        time.sleep(SAMPLE_SECONDS)

"""Airflow commands one after another in one process (a lane), each as `airflow ARG...`
would run it: Airflow's own parser and command function, everything it prints (and the
processes it starts: spark-submit) in a log file of its own, its exit code returned.

A lane pays Airflow's start once rather than once per command: the import, the CLI's
parser, and the in-process execution API that a DAG's first task builds, together about
8 of the 12 CPU s of a small day's `airflow dags test` (docs/performance.md, "A small
day's DAG and the demo"). The demo runs each lane's `airflow db migrate` and `airflow dags
test` runs through one; so do the tests that run `airflow dags test`.

`Lane` starts the process (`python -m operations.airflow_lane`) and talks to it: one line
per command on its stdin, `LOG<TAB>ARG<TAB>ARG...`, one line back, the exit code.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path


class Lane:
    """A lane process in the environment `env` (its Airflow home and database); what it
    prints outside the commands' own logs goes to `log`."""

    def __init__(self, env: Mapping[str, str], log: Path) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-P", "-m", "operations.airflow_lane"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=out,
                text=True,
                env=dict(env),
            )

    def run(self, log: Path, *args: str, timeout: float | None = None) -> tuple[int, float]:
        """`airflow ARGS...` with its output in `log`: its exit code (the lane's, should it
        have died) and its duration. Past `timeout` seconds the lane is killed and
        subprocess.TimeoutExpired raised."""
        log.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        try:
            self.process.stdin.write("\t".join([str(log), *args]) + "\n")
            self.process.stdin.flush()
            if timeout is not None and not select.select([self.process.stdout], [], [], timeout)[0]:
                self.process.kill()
                raise subprocess.TimeoutExpired(["airflow", *args], timeout)
            answer = self.process.stdout.readline()
        except BrokenPipeError:  # the lane died before this command
            answer = ""
        code = int(answer) if answer.strip() else self.process.wait() or 1
        return code, time.monotonic() - started

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


@contextlib.contextmanager
def output_to(log: str) -> Iterator[None]:
    """File descriptors 1 and 2 on `log` (Python's streams, Airflow's log handlers and the
    processes it starts all write there), restored afterwards."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with open(log, "w") as out:
            os.dup2(out.fileno(), 1)
            os.dup2(out.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def run_command(parser, argv: list[str]) -> int:
    """`airflow ARGV...` in this process; its exit code as the command's."""
    try:
        args = parser.parse_args(argv)
        args.func(args)
    except SystemExit as exited:  # `dags test`'s "DagRun failed", argparse's usage error
        if exited.code is None or isinstance(exited.code, int):
            return exited.code or 0
        print(exited.code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    return 0


def main() -> int:
    """The lane process: a command per line of stdin, an exit code per line of stdout."""
    from airflow.cli import cli_parser
    from airflow.configuration import write_default_airflow_configuration_if_needed

    write_default_airflow_configuration_if_needed()  # as `airflow`'s own main does first
    parser = cli_parser.get_parser()
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    for line in sys.stdin:
        log, *argv = line.rstrip("\n").split("\t")
        with output_to(log):
            code = run_command(parser, argv)
        print(code, file=answers)
    return 0


if __name__ == "__main__":
    sys.exit(main())

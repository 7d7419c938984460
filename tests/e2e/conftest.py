"""A Spark standalone cluster on loopback (master + one worker), for the end-to-end run
that proves a `spark://` master works by changing only the Airflow connection."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

STARTUP_SECONDS = 90


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(log: Path, text: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise RuntimeError(f"Spark standalone did not log {text!r}; see {log}")


@contextlib.contextmanager
def standalone_cluster(workdir: Path) -> Iterator[tuple[str, int]]:
    """Start a master and a 2-core worker on 127.0.0.1; yield (host URL, port); stop both."""
    port = _free_port()
    master_log, worker_log = workdir / "master.log", workdir / "worker.log"
    deploy = "org.apache.spark.deploy"
    common = ["--host", "127.0.0.1", "--webui-port", "0"]
    processes = []
    try:
        with master_log.open("w") as out:
            master = subprocess.Popen(
                ["spark-class", f"{deploy}.master.Master", "--port", str(port), *common],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        processes.append(master)
        _wait_for(master_log, "I have been elected leader", master)
        with worker_log.open("w") as out:
            worker = subprocess.Popen(
                ["spark-class", f"{deploy}.worker.Worker", f"spark://127.0.0.1:{port}",
                 "--cores", "2", "--memory", "2g", *common],
                stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        processes.append(worker)
        _wait_for(master_log, "Registering worker", master)
        yield "spark://127.0.0.1", port
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory) -> Iterator[dict]:
    """A running standalone cluster: its connection fields and the master's log file."""
    workdir = tmp_path_factory.mktemp("spark-standalone")
    with standalone_cluster(workdir) as (host, port):
        yield {"host": host, "port": port, "log": workdir / "master.log"}

"""An S3-compatible server on loopback for the store tests: moto's standalone server
(`python -m moto.server`), a real HTTP server in its own process, started and stopped by the
tests (docs/storage.md says why moto and not SeaweedFS)."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

from pyarrow import fs as pafs

START_TIMEOUT = 30.0  # seconds; it listens after about 0.5 s


@dataclass(frozen=True)
class S3Server:
    endpoint: str  # http://127.0.0.1:<port>
    access_key: str
    secret_key: str  # a fresh random secret: the tests search every output for it
    pid: int

    def environment(self, *, with_endpoint: bool = True) -> dict[str, str]:
        """The standard AWS variables a job finds the server and its credentials by."""
        env = {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        if with_endpoint:
            env["AWS_ENDPOINT_URL"] = self.endpoint
        return env

    def filesystem(self, **options) -> pafs.S3FileSystem:
        """The test's own client: creates buckets, uploads landings, reads back outputs."""
        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            endpoint_override=self.endpoint,
            region="us-east-1",
            allow_bucket_creation=True,
            **options,
        )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_serving(endpoint: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(endpoint, timeout=1).close()  # moto: ListBuckets
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"moto server exited with {process.returncode}") from None
            if time.monotonic() > deadline:
                raise TimeoutError(f"no moto server on {endpoint} after {timeout} s") from None
            time.sleep(0.05)


@contextlib.contextmanager
def moto_server(log_path: str) -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port, its requests logged to `log_path`."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            wait_until_serving(endpoint, process, START_TIMEOUT)
            yield S3Server(endpoint, "wirelake-test", secrets.token_hex(20), process.pid)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

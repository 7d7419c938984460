"""A PostgreSQL server for the tests that need Airflow's metadata on a real database: Debian's
`postgresql` package (installed by .ci/run where it is missing), a fresh cluster in a
temporary folder, on a free loopback port, with a password, stopped at the end.

PostgreSQL refuses to run as root: as root the cluster belongs to the package's `postgres`
user. `metadata_database()` says which database the scheduler tests use: PostgreSQL where
its server is installed, else SQLite, or it fails when $WIRELAKE_TEST_DB=postgresql asks
for PostgreSQL (CI) and none is there.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

USER = "airflow"


def server_bin() -> Path | None:
    """The folder of pg_ctl and initdb (Debian keeps them out of PATH), newest version."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_version)
    return Path(found[-1]).parent if found else None


def _version(path: str) -> float:
    return float(Path(path).parent.parent.name)


def wanted() -> bool:
    """Run the scheduler tests on PostgreSQL: asked for, or installed."""
    required = os.environ.get("WIRELAKE_TEST_DB", "") == "postgresql"
    if required and server_bin() is None:
        raise RuntimeError("WIRELAKE_TEST_DB=postgresql but no /usr/lib/postgresql/*/bin/pg_ctl")
    return required or (os.environ.get("WIRELAKE_TEST_DB") != "sqlite" and bool(server_bin()))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yield the SQLAlchemy URL of its database `airflow`; stop it."""
    binaries = server_bin()
    assert binaries, "PostgreSQL server not installed (.ci/run installs Debian's postgresql)"
    run_as = "postgres" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="wirelake-pg-"))
    if run_as:
        shutil.chown(folder, run_as)
    password, port = secrets.token_hex(12), free_port()
    (folder / "password").write_text(password)
    if run_as:
        shutil.chown(folder / "password", run_as)

    def run(*command: str) -> None:
        done = subprocess.run(command, user=run_as, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{command[0]}: {done.stdout}{done.stderr}"

    data = folder / "data"
    run(
        str(binaries / "initdb"),
        "-D", str(data), "-U", USER, "--auth=scram-sha-256",
        f"--pwfile={folder / 'password'}", "-E", "UTF8", "--no-sync",
    )  # fmt: skip
    options = f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c max_connections=200"
    pg_ctl = str(binaries / "pg_ctl")
    run(pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "server.log"), "-w", "start")
    try:
        url = f"postgresql://{USER}:{password}@127.0.0.1:{port}"
        created = subprocess.run(
            [str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", USER, USER],
            env={**os.environ, "PGPASSWORD": password},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert created.returncode == 0, created.stderr
        yield f"{url}/{USER}"
    finally:
        run(pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)

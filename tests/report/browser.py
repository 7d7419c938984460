"""A page rendered by headless Chromium (Debian's package: `apt-get install chromium`, which
.ci/run installs): the DOM it built, a screenshot, and every URL the page asked for.

Name resolution is mapped to nothing (`--host-resolver-rules`), so no request leaves the
machine whatever a page names; the URLs a page asked for are read from Chromium's net log
(requests made for a file:// page), apart from the browser's own background requests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRED = os.environ.get("WIRELAKE_TEST_BROWSER") == "chromium"  # .ci/run: fail, not skip
FLAGS = [
    "--headless",
    "--no-sandbox",  # root in CI and on the project's machines
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
]
TIMEOUT = 120


def chromium() -> str:
    """Chromium's command, or the test is skipped (failed under $WIRELAKE_TEST_BROWSER)."""
    found = shutil.which("chromium")
    if found is None:
        message = "no chromium on PATH (Debian: apt-get install chromium)"
        if REQUIRED:
            pytest.fail(f"WIRELAKE_TEST_BROWSER=chromium but {message}")
        pytest.skip(message)
    return found


@dataclass
class Rendered:
    dom: str  # the document Chromium built, serialized
    requests: list[str]  # URLs the page asked for (file:// loads are no requests)
    screenshot: Path


def _run(args: list[str], home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home)}  # a fresh profile, none of the user's
    done = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={home / 'profile'}", *args],
        capture_output=True, text=True, timeout=TIMEOUT, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def page_requests(net_log: Path) -> list[str]:
    """URLs of the requests a file:// page made (its network isolation key is file://),
    from a Chromium net log."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start
        and event.get("params", {}).get("network_isolation_key", "").startswith("file://")
    ]


def render(
    page: Path, folder: Path, width: int = 1200, height: int = 3000, screenshot: bool = True
) -> Rendered:
    """`page` as Chromium shows it in a `width` x `height` window."""
    folder.mkdir(parents=True, exist_ok=True)
    url = page.resolve().as_uri()
    net_log = folder / "net.json"
    dom = _run([f"--log-net-log={net_log}", "--dump-dom", url], folder).stdout
    shot = folder / "screenshot.png"
    if screenshot:
        _run([f"--window-size={width},{height}", f"--screenshot={shot}", url], folder)
    return Rendered(dom, page_requests(net_log), shot)

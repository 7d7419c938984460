"""`./wirelake` runs the project's own packages whatever folder it is called from: a
folder that holds packages of the same names (another checkout's `operations/`, say)
does not shadow them, as `python -m` would by putting the current folder first."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_folder_with_packages_of_the_same_names_does_not_shadow_the_projects(tmp_path):
    for package in ("operations", "jobs"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(f'raise SystemExit("decoy {package}")')
    done = subprocess.run(
        [str(ROOT / "wirelake"), "demo", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("usage: ./wirelake demo")

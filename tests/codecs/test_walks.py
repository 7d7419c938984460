"""The one switch between the two walks (`wirecodecs.compiled`): what WIRELAKE_WALK and
the older WIRELAKE_PURE_PYTHON choose, `forced` over them, a compiled walk kept once taken,
and `warm` loading every specialization a decode can take (checked in a fresh process:
nothing numba has not loaded by then is compiled while every fuzz seed is decoded every
way the fuzzer decodes it)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from wirecodecs import compiled
from wirecodecs.compiled import WALKS, choice, forced


@pytest.mark.parametrize(
    ("env", "walk"),
    [
        ({}, "auto"),
        ({"WIRELAKE_WALK": "pure"}, "pure"),
        ({"WIRELAKE_WALK": "compiled"}, "compiled"),
        ({"WIRELAKE_PURE_PYTHON": "1"}, "pure"),
        ({"WIRELAKE_PURE_PYTHON": "1", "WIRELAKE_WALK": "auto"}, "auto"),
    ],
)
def test_the_environment_chooses_the_walk(monkeypatch, env, walk):
    monkeypatch.delenv("WIRELAKE_WALK", raising=False)
    monkeypatch.delenv("WIRELAKE_PURE_PYTHON", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert choice() == walk
    with forced("compiled" if walk == "pure" else "pure"):
        assert choice() != walk
    assert choice() == walk


def test_an_unknown_walk_is_an_error(monkeypatch):
    monkeypatch.setenv("WIRELAKE_WALK", "fast")
    with pytest.raises(ValueError, match="auto, pure, compiled"):
        choice()
    with pytest.raises(ValueError, match="auto, pure, compiled"), forced("fast"):
        pass


def test_small_inputs_take_the_compiled_walk_once_it_is_taken(auto_walk):
    pytest.importorskip("numba")
    walk = WALKS["kafka"]
    assert not walk.takes_compiled(100)
    assert walk.compiled(walk.pure_below) is not None  # a large file
    assert walk.taken and walk.takes_compiled(100)
    with forced("pure"):
        assert walk.compiled(walk.pure_below) is None


def test_hercules_has_only_its_compiled_walk():
    with forced("pure"):
        assert WALKS["hercules"].takes_compiled()


def _signatures() -> dict[str, set[str]]:
    """Every compiled function's loaded specializations, by module and name."""
    from numba.core.registry import CPUDispatcher

    found = {}
    for walk in WALKS.values():
        for name, value in vars(importlib.import_module(walk.module_name)).items():
            if isinstance(value, CPUDispatcher):
                found[f"{walk.module_name}.{name}"] = {str(sig) for sig in value.signatures}
    return found


def test_warm_loads_what_every_decode_takes():
    pytest.importorskip("numba")
    done = subprocess.run(
        [sys.executable, __file__], capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {}


def main() -> None:
    """In a fresh process: `warm`, then decode every fuzz seed of every target as the
    fuzzer does (both walks, every variant, short reads); print the specializations that
    were compiled after `warm` (none, when it loads all of them)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import fuzz_targets

    compiled.warm()
    warmed = _signatures()
    with tempfile.TemporaryDirectory() as tmp:
        for name, target in fuzz_targets.TARGETS.items():
            for path in fuzz_targets.seed_files(target, Path(tmp) / name):
                fuzz_targets.check(target, path.read_bytes())
    later = {name: sorted(sigs - warmed[name]) for name, sigs in _signatures().items()}
    print(json.dumps({name: sigs for name, sigs in later.items() if sigs}))


if __name__ == "__main__":
    main()

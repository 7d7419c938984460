"""The one switch between the decoders' two walks: the numba-compiled one and the
pure-Python twin that every host can run (docs/walks.md).

Every format's compiled walk is the module `wirecodecs.<format>.compiled` (its numba
kernels and the buffers they fill); `WALKS` declares, one line per format, when its
decoder takes it. A module of compiled walks is imported only when a decoder first takes
it, since importing numba and loading the cached machine code costs a fresh process about
half a second per format: under `pure_below`, a process keeps to the pure walk until it
has read that many bytes of the format (counting an input's known size from its start) or
has taken the compiled walk once. The first time a process takes a format's compiled walk,
every specialization of it is loaded (`Walk.loaded`), so that numba never compiles in the
middle of an input; `warm` does it for every format before the first input (the fuzzer, a
worker). `WIRELAKE_WALK=pure|compiled|auto` forces one walk for a run
(`WIRELAKE_PURE_PYTHON=1`, the older switch, is `pure`); `forced` does it for a block of
code (the tests).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import BinaryIO

WALK_ENV = "WIRELAKE_WALK"
PURE_ENV = "WIRELAKE_PURE_PYTHON"  # set (non-empty): WIRELAKE_WALK=pure
CHOICES = ("auto", "pure", "compiled")


@dataclass
class Walk:
    """How one format's decoder chooses its walk. `pure_below`: bytes of the format a
    process reads on the pure walk before the compiled one pays for its start (None: the
    format has no pure walk)."""

    format: str
    pure_below: int | None
    read: int = 0  # bytes of the format this process has read (inputs decoded to the end)
    taken: bool = False  # the compiled walk was taken (or warmed) in this process

    @property
    def module_name(self) -> str:
        return f"wirecodecs.{self.format}.compiled"

    def module(self) -> ModuleType | None:
        """The compiled walk's module, imported now; None when numba is missing."""
        if self.pure_below is None:  # no pure walk to fall back on: numba is required
            return importlib.import_module(self.module_name)
        return compiled_module(self.module_name)

    def takes_compiled(self, seen: int | Callable[[], int] = 0) -> bool:
        """Whether the next input, of which `seen` bytes are known so far (or its whole
        size; a function giving them is called only when the choice depends on them),
        takes the compiled walk (where numba is there)."""
        if self.pure_below is None:
            return True
        walk = choice()
        if walk != "auto" or self.taken:
            return walk != "pure"
        return self.read + (seen() if callable(seen) else seen) >= self.pure_below

    def compiled(self, seen: int | Callable[[], int] = 0) -> ModuleType | None:
        """The compiled walk's module, every specialization loaded, when the next input
        takes it (`takes_compiled`); None for the pure walk."""
        return self.loaded() if self.takes_compiled(seen) else None

    def loaded(self) -> ModuleType | None:
        """The compiled walk's module with every specialization a decode can call loaded
        (compiled first on a cold cache), once per process, so that no input stops in
        the middle for numba; None without numba."""
        module = self.module()
        if module is not None and not self.taken:
            module.warm()
            self.taken = True
        return module

    def count(self, size: int) -> None:
        """Count `size` bytes of the format as read by this process."""
        self.read += size


WALKS = {
    walk.format: walk
    for walk in (
        Walk("kafka", pure_below=8 << 20),  # docs/kafka.md §3.4
        Walk("heka", pure_below=1 << 20),  # docs/heka.md, "Compiled walk"
        Walk("hercules", pure_below=None),  # docs/hercules.md, "Compiled walk"
        Walk("inlong", pure_below=8 << 20),  # docs/inlong.md, "Compiled walk"
        Walk("cernan", pure_below=4 << 20),  # docs/cernan.md §8
    )
}

_forced: str | None = None  # `forced`: beats the environment


def choice() -> str:
    """The walk this run takes: "pure", "compiled", or "auto" (each decoder's choice)."""
    if _forced is not None:
        return _forced
    walk = os.environ.get(WALK_ENV) or ("pure" if os.environ.get(PURE_ENV) else "auto")
    if walk not in CHOICES:
        raise ValueError(f"{WALK_ENV}={walk!r}: expected one of {', '.join(CHOICES)}")
    return walk


@contextlib.contextmanager
def forced(walk: str) -> Iterator[None]:
    """Every decoder takes `walk` (one of CHOICES) inside the block, whatever the
    environment says; the compiled walk falls back to the pure one without numba."""
    global _forced
    if walk not in CHOICES:
        raise ValueError(f"walk {walk!r}: expected one of {', '.join(CHOICES)}")
    before, _forced = _forced, walk
    try:
        yield
    finally:
        _forced = before


def warm(formats: Iterable[str] = tuple(WALKS)) -> None:
    """Load every specialization of the compiled walks of `formats` that this run can
    take (not those WIRELAKE_WALK=pure rules out), before the first input: a cold numba
    cache compiles them here (docs/walks.md). From then on small inputs take them too."""
    for name in formats:
        walk = WALKS[name]
        if choice() == "pure" and walk.pure_below is not None:
            continue
        with contextlib.suppress(ImportError):  # no numba: hercules fails at its decode
            walk.loaded()


@functools.cache
def compiled_module(name: str) -> ModuleType | None:
    """The module `name` of compiled walks, imported now; None when numba is missing."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def file_size(stream: BinaryIO) -> int:
    """The size of the file under `stream`, 0 when it is not a file (a pipe, BytesIO)."""
    try:
        return os.fstat(stream.fileno()).st_size
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return 0

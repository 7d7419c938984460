"""What the decoders share to choose between their two walks: the numba-compiled one and
the pure-Python twin that every host can run.

A module of compiled walks is imported only when a decoder first wants it, since importing
numba and loading the cached machine code costs a fresh process about half a second;
`file_size` lets a decoder see from the start that a file is large enough to pay for it.
"""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType
from typing import BinaryIO

PURE_ENV = "WIRELAKE_PURE_PYTHON"  # set (non-empty): every decoder takes its pure walk


@functools.cache
def compiled_module(name: str) -> ModuleType | None:
    """The module `name` of compiled walks, imported now; None when numba is missing or
    the environment sets WIRELAKE_PURE_PYTHON, and the caller takes its pure walk."""
    if os.environ.get(PURE_ENV):
        return None
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

"""numpy's BLAS thread count, read and set at run time through the library's own C API.

numpy's wheels bundle OpenBLAS (``scipy-openblas``: ``numpy.libs/libscipy_openblas64_-*.so``
beside the package on Linux, ``numpy/.dylibs`` on macOS) whose exported
``scipy_openblas_set_num_threads64_`` / ``..._get_num_threads64_`` change its pool at run time;
a numpy built against a system OpenBLAS exports ``openblas_set_num_threads``. Found with
ctypes, as threadpoolctl does (no dependency): the library files beside numpy, then the other
OpenBLAS libraries this process has loaded; a file is used only if it is loaded already
(numpy's own), never loaded a second time. Nothing here runs at import; the first call looks.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .errors import BackendUnavailableError, message

__all__ = ["blas_threads", "set_blas_threads"]

_PREFIXES = ("scipy_", "")
_SUFFIXES = ("64_", "_64", "")
SYMBOLS = tuple(
    f"{prefix}openblas_{{}}_num_threads{suffix}"
    for prefix, suffix in itertools.product(_PREFIXES, _SUFFIXES)
)
"""The exported names tried, ``{}`` being ``get`` or ``set`` (OpenBLAS's affixes)."""


class _Blas:
    """One OpenBLAS's thread-count functions."""

    def __init__(self, path: str, get: Callable[[], int], set_: Callable[[int], None]) -> None:
        self.path = path
        self.get = get
        self.set = set_


def library_files() -> list[str]:
    """Candidate OpenBLAS files: those bundled beside numpy, then the loaded ones (Linux)."""
    root = Path(np.__file__).resolve().parent
    found: list[str] = []
    for folder in (root.parent / "numpy.libs", root / ".libs", root / ".dylibs"):
        if folder.is_dir():
            found += sorted(str(p) for p in folder.iterdir() if "openblas" in p.name.lower())
    maps = Path("/proc/self/maps")
    if maps.exists():
        for line in maps.read_text().splitlines():
            path = line.rpartition(" ")[2]
            if "openblas" in Path(path).name.lower() and path not in found:
                found.append(path)
    return found


def _open(path: str) -> _Blas | None:
    try:  # only a library this process has loaded (RTLD_NOLOAD): never a second copy of one
        lib = ctypes.CDLL(path, mode=ctypes.DEFAULT_MODE | getattr(os, "RTLD_NOLOAD", 0))
    except OSError:
        return None
    for pattern in SYMBOLS:
        get = getattr(lib, pattern.format("get"), None)
        set_ = getattr(lib, pattern.format("set"), None)
        if get is not None and set_ is not None:
            get.restype, get.argtypes = ctypes.c_int, []
            set_.restype, set_.argtypes = None, [ctypes.c_int]
            return _Blas(path, get, set_)
    return None


@functools.cache
def _blas() -> _Blas | None:
    for path in library_files():
        blas = _open(path)
        if blas is not None:
            return blas
    return None


def find_blas() -> _Blas:
    """numpy's OpenBLAS thread control, or a :class:`BackendUnavailableError` saying what was
    looked for (numpy built with another BLAS: MKL, Accelerate, a reference BLAS)."""
    blas = _blas()
    if blas is not None:
        return blas
    files = library_files()
    raise BackendUnavailableError(
        message(
            "cannot control numpy's BLAS threads: no OpenBLAS with a thread-count API found",
            [
                ("numpy", f"{np.__version__} at {Path(np.__file__).parent}"),
                ("looked in", "numpy.libs/, numpy/.libs/, numpy/.dylibs/, loaded libraries"),
                ("files", ", ".join(files) if files else "no *openblas* library"),
                ("symbols", ", ".join(p.format("set") for p in SYMBOLS)),
            ],
            hint="set OPENBLAS_NUM_THREADS / OMP_NUM_THREADS (or MKL_NUM_THREADS) before "
            "Python starts, or install numpy's wheel (it bundles scipy-openblas)",
        )
    )


def blas_threads() -> int | None:
    """The BLAS's current thread count, or None where it cannot be read."""
    blas = _blas()
    return None if blas is None else int(blas.get())


def set_blas_threads(n: int) -> None:
    """Make numpy's OpenBLAS use ``n`` threads (raises where it cannot be controlled)."""
    find_blas().set(n)


def env_threads() -> int | None:
    """The thread count the environment asks numpy's BLAS for (OpenBLAS's order)."""
    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None

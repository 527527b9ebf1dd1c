"""Optional anchors: torch and numba when installed (benchmarks skip them otherwise)."""

from __future__ import annotations

import importlib
from types import ModuleType


def optional(name: str) -> ModuleType | None:
    """The module, or None (with a note) when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        print(f"  ({name} is not installed: skipped)")
        return None

"""Helpers that give policy errors their common anatomy (STYLE.md rule 9)."""

from __future__ import annotations

import os
import sys
import types

__all__ = ["built_at"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def built_at() -> str | None:
    """``file:line`` of the first caller outside ``typed_nn/policies``; None if there is none.

    Only called on the error path, so walking the stack costs nothing on the happy path.
    """
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if os.path.dirname(os.path.abspath(filename)) != _HERE:
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None

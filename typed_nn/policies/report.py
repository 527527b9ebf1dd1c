"""Helpers that give policy errors their common anatomy (STYLE.md rule 9)."""

from __future__ import annotations

import os
import sys
import types

__all__ = ["built_at"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def built_at() -> str | None:
    """``file:line`` of the first caller outside the typed_nn package (the user's line, also
    when the container is built by ``make_train_layer`` or a filler); None if there is none.

    Only called on the error path, so walking the stack costs nothing on the happy path.
    """
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE):
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None

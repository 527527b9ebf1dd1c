"""pytest plugin (``-p tests.emulated_device``): the ``[device]`` cases of the GPU tests run on
the cupy emulator, as they would on a real GPU: one cupy for the whole session, no registry
or backend state restored between tests (the ``[emulated]`` cases get both). A rehearsal of
a GPU machine's run on any machine (``scripts/gpu_check.py --emulate``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # where cupy_emulator is
import cupy_emulator

sys.modules["cupy"] = cupy_emulator.install()


def pytest_collection_finish(session: pytest.Session) -> None:
    import conftest  # tests/conftest.py, loaded by now

    conftest.gpu_unavailable_reason = lambda: None

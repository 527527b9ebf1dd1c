"""Every ```python block of README.md and docs/*.md runs: each file's blocks in order, in one
namespace per file (so a later block may use names from an earlier one)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = BLOCK.findall(path.read_text())
    if path.name == "README.md":
        assert blocks, "README.md has no python examples"
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    # A real module, so that dataclasses and pickling-free introspection find it.
    module = types.ModuleType(f"docs_{path.stem.replace('-', '_')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for i, code in enumerate(blocks, start=1):
        exec(compile(code, f"{path.name} block {i}", "exec"), module.__dict__)

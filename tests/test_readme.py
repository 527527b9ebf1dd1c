"""Every ```python block of README.md runs, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def test_readme_examples_run() -> None:
    blocks = BLOCK.findall(README.read_text())
    assert blocks, "README.md has no python examples"
    namespace: dict[str, object] = {"__name__": "readme"}
    for i, code in enumerate(blocks, start=1):
        exec(compile(code, f"README.md block {i}", "exec"), namespace)

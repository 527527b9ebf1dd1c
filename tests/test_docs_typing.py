"""The docs' code type-checks: every ```python block of README.md and docs/*.md, one file per
doc (its blocks concatenated, as they share one namespace at run time), checked by mypy (the
project's mypy.ini, plugin included) and pyright. An error is either fixed in the doc or listed
in ``tests/docs_typing_allowlist.json`` with a reason; the list may only shrink: an entry that
no longer occurs fails too (remove it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from mypy import api as mypy_api

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ALLOWLIST = ROOT / "tests" / "docs_typing_allowlist.json"
MYPY_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<msg>.*)$")

# (checker, doc, message): line numbers are left out so that editing a doc keeps its entries.
Found = Counter[tuple[str, str, str]]


def write_docs(into: Path) -> dict[str, str]:
    """One module per doc with python blocks; module file name -> doc name."""
    names = {}
    for doc in DOCS:
        blocks = BLOCK.findall(doc.read_text())
        if blocks:
            module = into / f"doc_{doc.stem.replace('-', '_')}.py"
            module.write_text("\n".join(blocks))
            names[module.name] = doc.name
    return names


def mypy_errors(files: list[Path], names: dict[str, str]) -> Found:
    args = ["--config-file", str(ROOT / "mypy.ini"), "--no-error-summary", "--no-incremental"]
    stdout, stderr, _ = mypy_api.run([*args, *map(str, files)])
    assert not stderr, stderr
    found: Found = Counter()
    for line in stdout.splitlines():
        match = MYPY_LINE.match(line)
        if match:
            found["mypy", names[Path(match["path"]).name], match["msg"]] += 1
    return found


def pyright_errors(files: list[Path], names: dict[str, str]) -> Found:
    exe = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if exe is None:
        pytest.fail("pyright is not installed: pip install -e '.[dev]'")
    proc = subprocess.run(
        [exe, "--outputjson", "--pythonpath", sys.executable, *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    found: Found = Counter()
    for diag in json.loads(proc.stdout)["generalDiagnostics"]:
        if diag["severity"] == "error":
            message = diag["message"].splitlines()[0]
            found["pyright", names[Path(diag["file"]).name], message] += 1
    return found


def allowed() -> Found:
    entries = json.loads(ALLOWLIST.read_text())
    for entry in entries:
        assert entry.get("reason"), f"allowlist entry without a reason: {entry}"
    return Counter((e["checker"], e["doc"], e["message"]) for e in entries)


def test_docs_type_check(tmp_path: Path) -> None:
    names = write_docs(tmp_path)
    files = sorted(tmp_path.glob("doc_*.py"))
    found = mypy_errors(files, names) + pyright_errors(files, names)
    listed = allowed()
    new = found - listed
    stale = listed - found
    problems = [f"new error: {k}" for k in sorted(new)]
    problems += [f"fixed, remove from {ALLOWLIST.name}: {k}" for k in sorted(stale)]
    assert not problems, "\n".join(problems)

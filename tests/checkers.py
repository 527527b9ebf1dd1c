"""mypy and pyright over a list of files, their errors by (file name, line): what the static
typing cases (test_static_typing.py) and the docs' code (test_docs_typing.py) check."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from mypy import api as mypy_api

ROOT = Path(__file__).resolve().parent.parent
MYPY_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<msg>.*)$")
Errors = dict[tuple[str, int], list[str]]


def mypy_errors(files: list[str], *options: str) -> Errors:
    """mypy with the project's mypy.ini (the typed_nn plugin on) and ``options``."""
    args = ["--config-file", str(ROOT / "mypy.ini"), "--no-error-summary", *options]
    stdout, stderr, _ = mypy_api.run([*args, *files])
    assert not stderr, stderr
    errors: Errors = defaultdict(list)
    for line in stdout.splitlines():
        match = MYPY_LINE.match(line)
        if match:
            errors[(Path(match["path"]).name, int(match["line"]))].append(match["msg"])
    return errors


def pyright_errors(files: list[Path]) -> Errors:
    """pyright with this interpreter's environment (where the extras are installed)."""
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
    errors: Errors = defaultdict(list)
    for diag in json.loads(proc.stdout)["generalDiagnostics"]:
        if diag["severity"] == "error":
            key = (Path(diag["file"]).name, diag["range"]["start"]["line"] + 1)
            errors[key].append(diag["message"])
    return errors

"""mypy, pyright, pyrefly and ty over a list of files, their errors by (file name, line): what
the static typing cases (test_static_typing.py) and the docs' code (test_docs_typing.py) check.
pyrefly and ty read their configuration from pyproject.toml (pyrefly's "default" preset, the
deprecated overloads as errors in both)."""

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


def run_checker(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The checker ``name`` installed beside this interpreter (or on the path), run from the
    repository root so that it reads pyproject.toml."""
    exe = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if exe is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'")
    return subprocess.run([exe, *args], cwd=ROOT, capture_output=True, text=True, check=False)


def pyright_errors(files: list[Path]) -> Errors:
    """pyright with this interpreter's environment (where the extras are installed)."""
    proc = run_checker("pyright", "--outputjson", "--pythonpath", sys.executable, *map(str, files))
    errors: Errors = defaultdict(list)
    for diag in json.loads(proc.stdout)["generalDiagnostics"]:
        if diag["severity"] == "error":
            key = (Path(diag["file"]).name, diag["range"]["start"]["line"] + 1)
            errors[key].append(diag["message"])
    return errors


def pyrefly_errors(files: list[Path]) -> Errors:
    """pyrefly with pyproject.toml's [tool.pyrefly] (given explicitly: ``files`` may lie outside
    the repository) and this interpreter's environment."""
    proc = run_checker(
        "pyrefly",
        "check",
        "--config",
        str(ROOT / "pyproject.toml"),
        "--python-interpreter-path",
        sys.executable,
        "--output-format",
        "json",
        *map(str, files),
    )
    errors: Errors = defaultdict(list)
    for error in json.loads(proc.stdout)["errors"]:
        if error["severity"] == "error":
            errors[(Path(error["path"]).name, error["line"])].append(error["description"])
    return errors


TY_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):\d+: error\[(?P<rule>[^\]]+)\] (?P<msg>.*)$")


def ty_errors(files: list[Path]) -> Errors:
    """ty with pyproject.toml's [tool.ty] and this interpreter's environment."""
    proc = run_checker(
        "ty", "check", "--python", sys.executable, "--output-format", "concise", *map(str, files)
    )
    assert "panicked" not in proc.stderr, proc.stderr
    errors: Errors = defaultdict(list)
    for line in proc.stdout.splitlines():
        match = TY_LINE.match(line)
        if match:
            key = (Path(match["path"]).name, int(match["line"]))
            errors[key].append(f"{match['msg']} [{match['rule']}]")
    return errors

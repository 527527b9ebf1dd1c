"""Installed means checked: after the README's install command, mypy and pyright see typed_nn's
types from a user's file outside the repository.

The test creates a fresh virtual environment, runs the install command parsed from README.md
(so the two cannot drift apart), writes a valid file and a file with a planted element mismatch
(``Tensor[Float32, ...] + Tensor[Float64, ...]``) into a temporary directory, and checks both
with mypy --strict and pyright: the mismatch must be the only error, the valid file clean.

This works because pyproject.toml's ``[tool.setuptools.package-dir]`` makes the editable install
a plain path in a ``.pth`` file; setuptools' default for this layout is an import-hook finder
that type checkers do not run ("Cannot find implementation or library stub for module named
typed_nn", every type ``Any``).

The checkers are the ones of the environment running the tests, pointed at the fresh venv's
interpreter (mypy ``--python-executable``, pyright ``--pythonpath``). Both then search exactly
that interpreter's ``sys.path``, ``.pth`` entries included, as they do when installed into it,
and the test downloads no checker (pyright's node would come from outside PyPI).

Slow (pip, network): marked ``install``. CI runs it once, in the normal pass of
scripts/check.sh; deselect it locally with ``-m 'not install'``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PIP_TIMEOUT_S = 600

BAD = """\
import typed_nn as tn
from typed_nn import CPU, Float32, Float64

a = tn.zeros((2, 3), Float32, CPU)
b = tn.zeros((2, 3), Float64, CPU)
c = a + b  # planted: Float32 + Float64
"""
BAD_LINE = 1 + BAD.splitlines().index("c = a + b  # planted: Float32 + Float64")

OK = """\
# pyright: strict
import typed_nn as tn
from typed_nn import CPU, Float32, Matrix, Tensor


def double(x: Matrix[Float32, CPU]) -> Matrix[Float32, CPU]:
    return x + x


a = tn.zeros((2, 3), Float32, CPU)
y: Tensor[Float32, CPU, tn.Dim2] = tn.evaluate(double(a + a))
"""


def readme_install_command() -> str:
    """The README's install command: its first shell line with ``pip install -e``, up to and
    including that step (the training run after it is not installation)."""
    lines = [line for line in README.read_text().splitlines() if "pip install -e" in line]
    assert lines, "README.md has no 'pip install -e' command"
    steps = [step.strip() for step in lines[0].split("&&")]
    install = next(i for i, step in enumerate(steps) if "pip install -e" in step)
    command = " && ".join(steps[: install + 1])
    assert command.startswith("python3 -m venv .venv && .venv/bin/pip install -e "), command
    return command


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "TYPED_NN_DEBUG"):
        env.pop(name, None)
    return env


def run(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def install(venv: Path) -> Path:
    """Run the README's install command with its ``.venv`` replaced by ``venv``; return the new
    venv's python."""
    venv_arg = shlex.quote(str(venv))
    command = re.sub(r"(?<![\w./])\.venv(?=/|\s|$)", venv_arg, readme_install_command())
    proc = run(["bash", "-c", command], cwd=ROOT, timeout=PIP_TIMEOUT_S)
    if proc.returncode != 0:
        pytest.fail(
            f"{command!r} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}"
        )
    python = venv / "bin" / "python"
    assert python.exists(), f"{command!r} made no {python}"
    return python


def editable_layout(python: Path) -> str:
    """What the install put into site-packages for typed_nn, for failure messages: a ``.pth``
    of plain paths (what the checkers follow), or an import-hook finder (what they cannot)."""
    proc = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], ROOT
    )
    site = Path(proc.stdout.strip())
    lines = [f"in {site}:"]
    for path in sorted(site.glob("__editable__*typed_nn*")):
        lines.append(f"  {path.name}")
        if path.suffix == ".pth":
            lines += [f"    {line}" for line in path.read_text().splitlines()]
    if any("finder" in line for line in lines):
        lines.append(
            "an import-hook finder: mypy and pyright cannot see it; pyproject.toml's "
            "[tool.setuptools.package-dir] should make the editable install a .pth path"
        )
    return "\n".join(lines)


def run_mypy(python: Path, user: Path) -> tuple[dict[tuple[str, int], list[str]], str]:
    proc = run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--show-error-codes",
            "--no-error-summary",
            "--python-executable",
            str(python),
            "bad.py",
            "ok.py",
        ],
        cwd=user,
    )
    errors: dict[tuple[str, int], list[str]] = {}
    for line in proc.stdout.splitlines():
        match = re.match(r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<msg>.*)$", line)
        if match:
            key = (Path(match["file"]).name, int(match["line"]))
            errors.setdefault(key, []).append(match["msg"])
    return errors, proc.stdout + proc.stderr


def run_pyright(python: Path, user: Path) -> tuple[dict[tuple[str, int], list[str]], str]:
    exe = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if exe is None:
        pytest.fail("pyright is not installed: pip install -e '.[dev]'")
    proc = run([exe, "--outputjson", "--pythonpath", str(python), "bad.py", "ok.py"], cwd=user)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"pyright gave no JSON report:\n{proc.stdout}\n{proc.stderr}")
    errors: dict[tuple[str, int], list[str]] = {}
    for diag in report["generalDiagnostics"]:
        if diag["severity"] == "error":
            key = (Path(diag["file"]).name, diag["range"]["start"]["line"] + 1)
            errors.setdefault(key, []).append(diag["message"])
    return errors, proc.stdout


def test_readme_install_is_seen_by_mypy_and_pyright(tmp_path: Path) -> None:
    python = install(tmp_path / "venv")
    layout = editable_layout(python)

    user = tmp_path / "user"
    user.mkdir()
    assert not user.resolve().is_relative_to(ROOT)
    (user / "bad.py").write_text(BAD)
    (user / "ok.py").write_text(OK)

    # At run time the user's file gets this checkout's typed_nn.
    imported = run([str(python), "-c", "import typed_nn; print(typed_nn.__file__)"], user)
    assert imported.returncode == 0, f"{imported.stderr}\n{layout}"
    assert Path(imported.stdout.strip()).resolve().is_relative_to(ROOT), imported.stdout

    # Statically, the planted mismatch is the one error, for both checkers.
    planted = ("bad.py", BAD_LINE)
    mypy_errors, mypy_out = run_mypy(python, user)
    assert list(mypy_errors) == [planted], f"mypy:\n{mypy_out}\n{layout}"
    assert "Unsupported operand types for +" in mypy_errors[planted][0], mypy_out
    assert "Float64" in mypy_errors[planted][0], mypy_out

    pyright_errors, pyright_out = run_pyright(python, user)
    assert list(pyright_errors) == [planted], f"pyright:\n{pyright_out}\n{layout}"
    assert 'Operator "+" not supported' in pyright_errors[planted][0], pyright_out

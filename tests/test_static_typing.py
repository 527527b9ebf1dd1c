"""The static typing cases: ``tests/static/ok_*.py`` must type-check cleanly, and every line of
``tests/static/bad_*.py`` marked ``# E: <substring>`` must be an error whose message contains
the substring (and no other line may be an error).

mypy runs once over all files (with the project's mypy.ini, so the typed_nn plugin is on);
pyright runs once over the same files except ``bad_plugin_*.py`` and ``ok_plugin_*.py``
(what only the plugin checks or infers), and must flag every marked line of the bad files and
nothing in the ok files.
"""

from __future__ import annotations

import re
from pathlib import Path

from checkers import Errors, mypy_errors, pyright_errors

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "tests" / "static"
MARKER = re.compile(r"#\s*E:\s*(.+?)\s*$")


def cases(prefix: str) -> list[Path]:
    return sorted(STATIC.glob(f"{prefix}*.py"))


def expected(path: Path) -> dict[int, str]:
    marks = {}
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        match = MARKER.search(text)
        if match:
            marks[number] = match.group(1)
    return marks


def run_mypy() -> Errors:
    files = [str(p.relative_to(ROOT)) for p in cases("ok_") + cases("bad_")]
    return mypy_errors(files, "--show-error-codes")


def run_pyright(files: list[Path]) -> Errors:
    return pyright_errors(files)


# Files whose markers are substrings of pyright's messages too (their first errors are checked
# in both checkers); elsewhere pyright need only flag the marked lines.
BOTH_MATCH = {"bad_first_errors.py"}


def compare(errors: Errors, files: list[Path], match_text: bool) -> list[str]:
    problems = []
    for path in files:
        marks = expected(path) if path.name.startswith("bad_") else {}
        for line, text in marks.items():
            found = errors.get((path.name, line), [])
            if not found:
                problems.append(
                    f"{path.name}:{line}: expected an error containing {text!r}, got none"
                )
            elif (match_text or path.name in BOTH_MATCH) and not any(text in msg for msg in found):
                problems.append(f"{path.name}:{line}: expected {text!r}, got {found}")
        for (name, line), msgs in sorted(errors.items()):
            if name == path.name and line not in marks:
                problems.append(f"{name}:{line}: unexpected error {msgs}")
    return problems


def test_bad_cases_are_marked() -> None:
    for path in cases("bad_"):
        assert expected(path), f"{path.name} has no '# E:' marker"


def test_mypy_verdicts() -> None:
    files = cases("ok_") + cases("bad_")
    assert files, "no static cases found"
    problems = compare(run_mypy(), files, match_text=True)
    assert not problems, "\n".join(problems)


def test_pyright_verdicts() -> None:
    files = [p for p in cases("ok_") + cases("bad_") if "_plugin_" not in p.name]
    problems = compare(run_pyright(files), files, match_text=False)
    assert not problems, "\n".join(problems)

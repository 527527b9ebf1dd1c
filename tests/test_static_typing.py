"""The static typing cases: ``tests/static/ok_*.py`` must type-check cleanly, and every line of
``tests/static/bad_*.py`` marked ``# E: <substring>`` must be an error whose message contains
the substring (and no other line may be an error).

mypy runs once over all files (with the project's mypy.ini, so the typed_nn plugin is on);
pyright, pyrefly and ty run once each over the same files except ``bad_plugin_*.py`` and
``ok_plugin_*.py`` (what only the plugin checks or infers), and must flag every marked line of
the bad files and nothing in the ok files, except where tests/checker_differences.toml lists
the line for that checker with its reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from checkers import Errors, mypy_errors, pyrefly_errors, pyright_errors, ty_errors
from differences import Difference, differences, stale

pytestmark = pytest.mark.static  # the checkers read source: debug mode changes none of it

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


# Files whose markers are substrings of every checker's messages, quotes aside (mypy and
# pyright quote types with ", pyrefly and ty with `): their first errors are checked in all of
# them; elsewhere the other checkers need only flag the marked lines.
BOTH_MATCH = {"bad_first_errors.py"}


def unquoted(text: str) -> str:
    return text.replace('"', "").replace("`", "")


def has_text(text: str, messages: list[str], exact: bool) -> bool:
    if exact:
        return any(text in msg for msg in messages)
    return any(unquoted(text) in unquoted(msg) for msg in messages)


def compare(
    errors: Errors, files: list[Path], match_text: bool, known: set[Difference] | None = None
) -> list[str]:
    """What differs from the marks, less the ``known`` differences (those met are removed from
    it, so that what remains in it is stale)."""
    known = set() if known is None else known
    problems = []
    for path in files:
        marks = expected(path) if path.name.startswith("bad_") else {}
        lines = path.read_text().splitlines()
        for line, text in marks.items():
            found = errors.get((path.name, line), [])
            exact = match_text or path.name in BOTH_MATCH
            if found and (not exact or has_text(text, found, match_text)):
                continue
            kind = "other message" if found else "miss"
            entry = (path.name, MARKER.sub("", lines[line - 1]).strip(), kind)
            if entry in known:
                known.discard(entry)
            elif found:
                problems.append(f"{path.name}:{line}: expected {text!r}, got {found}")
            else:
                problems.append(
                    f"{path.name}:{line}: expected an error containing {text!r}, got none"
                )
        for (name, line), msgs in sorted(errors.items()):
            if name != path.name or line in marks:
                continue
            entry = (path.name, lines[line - 1].strip(), "false positive")
            if entry in known:
                known.discard(entry)
            else:
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


RUNNERS: dict[str, Callable[[list[Path]], Errors]] = {
    "pyright": pyright_errors,
    "pyrefly": pyrefly_errors,
    "ty": ty_errors,
}


@pytest.mark.parametrize("checker", sorted(RUNNERS))
def test_other_checkers_verdicts(checker: str) -> None:
    files = [p for p in cases("ok_") + cases("bad_") if "_plugin_" not in p.name]
    known = differences(checker, "tests/static")
    problems = compare(RUNNERS[checker](files), files, match_text=False, known=known)
    problems += stale(checker, known)
    assert not problems, "\n".join(problems)


def test_a_listed_difference_must_still_occur(tmp_path: Path) -> None:
    case = tmp_path / "bad_demo.py"
    case.write_text("a = 1  # E: int\nb = 2  # E: int\nc = 3\n")
    known = {("bad_demo.py", "a = 1", "miss"), ("bad_demo.py", "c = 3", "miss")}
    errors: Errors = {("bad_demo.py", 2): ["int"], ("bad_demo.py", 3): ["oops"]}
    problems = compare(errors, [case], match_text=False, known=known)
    assert problems == ["bad_demo.py:3: unexpected error ['oops']"]
    assert known == {("bad_demo.py", "c = 3", "miss")}
    assert stale("ty", known) == [
        "ty: listed in checker_differences.toml but no longer occurs (remove it): "
        "bad_demo.py: 'c = 3' (miss)"
    ]

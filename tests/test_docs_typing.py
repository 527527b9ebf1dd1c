"""The docs' code type-checks: every ```python block of README.md and docs/*.md, one file per
doc (its blocks concatenated, as they share one namespace at run time), checked by mypy (the
project's mypy.ini, plugin included), pyright, pyrefly and ty.

A line that shows a mistake on purpose ends with ``# type error: <substring>``: every checker
must flag it and mypy's message must contain the substring (the others' wording differs: they
need only flag the line, as in tests/static); ``# type error (mypy): <substring>`` marks what only
the mypy plugin checks (the others must stay silent there). Any other error is either fixed in
the doc or listed, for that checker, in tests/checker_differences.toml with its reason (``where
= "docs"``); an entry that no longer occurs fails too (remove it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import checkers
import pytest
from differences import Difference, differences, stale

pytestmark = pytest.mark.static  # the checkers read source: debug mode changes none of it

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"#\s*type error(?P<only_mypy>\s*\(mypy\))?:\s*(?P<text>.+?)\s*$")
OTHERS: dict[str, Callable[[list[Path]], checkers.Errors]] = {
    "pyright": checkers.pyright_errors,
    "pyrefly": checkers.pyrefly_errors,
    "ty": checkers.ty_errors,
}

# (checker, module file name, line) -> the messages on that line.
ByLine = dict[tuple[str, str, int], list[str]]


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


def all_errors(files: list[Path]) -> ByLine:
    found = {
        ("mypy", name, line): msgs
        for (name, line), msgs in checkers.mypy_errors(
            [str(f) for f in files], "--no-incremental"
        ).items()
    }
    for checker, run in OTHERS.items():
        found |= {
            (checker, name, line): [m.splitlines()[0] for m in msgs]
            for (name, line), msgs in run(files).items()
        }
    return found


Known = dict[str, set[Difference]]


def listed_differences() -> Known:
    return {checker: differences(checker, "docs") for checker in ["mypy", *OTHERS]}


def check_marked(
    files: list[Path],
    errors: ByLine,
    names: dict[str, str] | None = None,
    known: Known | None = None,
) -> list[str]:
    """Check the marked lines and take their errors out of ``errors`` (and the misses met out
    of ``known``)."""
    names = names or {}
    known = known or {}
    problems = []
    for path in files:
        for number, text in enumerate(path.read_text().splitlines(), start=1):
            match = MARKER.search(text)
            if not match:
                continue
            where = f"{path.name}:{number} ({text.strip()})"
            mypy = errors.pop(("mypy", path.name, number), [])
            if not any(match["text"] in msg for msg in mypy):
                problems.append(f"{where}: mypy reports {mypy}, none with {match['text']!r}")
            miss = (names.get(path.name, path.name), MARKER.sub("", text).strip(), "miss")
            for checker in OTHERS:
                found = errors.pop((checker, path.name, number), [])
                if not found and not match["only_mypy"] and miss in known.get(checker, set()):
                    known[checker].discard(miss)
                elif bool(found) == bool(match["only_mypy"]):
                    wanted = "no error" if match["only_mypy"] else "an error"
                    problems.append(f"{where}: {checker} should report {wanted}, reports {found}")
    return problems


def unlisted(files: list[Path], names: dict[str, str], errors: ByLine, known: Known) -> list[str]:
    """The errors left that tests/checker_differences.toml does not list, and its entries that
    no longer occur."""
    lines = {path.name: path.read_text().splitlines() for path in files}
    problems = []
    for (checker, module, line), messages in sorted(errors.items()):
        entry: Difference = (names[module], lines[module][line - 1].strip(), "false positive")
        if entry in known[checker]:
            known[checker].discard(entry)
        else:
            problems.append(f"{checker}: {entry[0]}: {entry[1]!r}: {messages}")
    for checker, left in known.items():
        problems += stale(checker, left)
    return problems


def test_docs_type_check(tmp_path: Path) -> None:
    names = write_docs(tmp_path)
    files = sorted(tmp_path.glob("doc_*.py"))
    errors = all_errors(files)
    known = listed_differences()
    problems = check_marked(files, errors, names, known)
    problems += unlisted(files, names, errors, known)
    assert not problems, "\n".join(problems)


def test_marked_lines_must_fail_as_marked(tmp_path: Path) -> None:
    doc = tmp_path / "doc_demo.py"
    doc.write_text(
        "f(1)  # type error: expected str\n"
        "g(2)  # type error (mypy): Policy conflict\n"
        "h(3)  # type error: expected str\n"
    )
    errors: ByLine = {
        ("mypy", doc.name, 1): ['Argument 1 has type "int"; expected str'],
        ("pyright", doc.name, 1): ["Argument of type int cannot be assigned"],
        ("pyrefly", doc.name, 1): ["`int` is not assignable to `str`"],
        ("ty", doc.name, 1): ["Expected `str`, found `Literal[1]`"],
        ("mypy", doc.name, 2): ["Policy conflict: GradPolicy.is_update"],
        ("pyright", doc.name, 2): ["an error pyright should not see"],
        ("mypy", doc.name, 3): ["some other error"],
        ("pyright", doc.name, 3): ["flagged"],
        ("pyrefly", doc.name, 3): ["flagged"],
        ("mypy", doc.name, 4): ["an unmarked error"],
    }
    problems = check_marked([doc], errors)
    assert len(problems) == 3, problems
    assert problems[0].startswith("doc_demo.py:2 ")
    assert "pyright should report no error" in problems[0]
    assert problems[1].startswith("doc_demo.py:3 ")
    assert "none with 'expected str'" in problems[1]
    assert problems[2].startswith("doc_demo.py:3 ")
    assert "ty should report an error" in problems[2]
    assert errors == {("mypy", doc.name, 4): ["an unmarked error"]}  # only unmarked errors left


def test_unlisted_errors_and_stale_entries_fail(tmp_path: Path) -> None:
    doc = tmp_path / "doc_programs.py"
    doc.write_text("features = (images / 16.0).astype(np.float32)\nx: int = 's'\n")
    errors: ByLine = {("ty", doc.name, 2): ["Expected `int`"]}
    problems = unlisted([doc], {doc.name: "programs.md"}, errors, listed_differences())
    assert problems[0] == "ty: programs.md: \"x: int = 's'\": ['Expected `int`']"
    # Every docs entry of tests/checker_differences.toml is stale here (none of its errors
    # occurred).
    listed = sum(len(entries) for entries in listed_differences().values())
    assert len(problems) == 1 + listed, problems
    assert all("no longer occurs" in p for p in problems[1:]), problems

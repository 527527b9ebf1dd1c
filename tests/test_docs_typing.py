"""The docs' code type-checks: every ```python block of README.md and docs/*.md, one file per
doc (its blocks concatenated, as they share one namespace at run time), checked by mypy (the
project's mypy.ini, plugin included) and pyright.

A line that shows a mistake on purpose ends with ``# type error: <substring>``: both checkers
must flag it and mypy's message must contain the substring (pyright's wording differs: it need
only flag the line, as in tests/static); ``# type error (mypy): <substring>`` marks what only
the mypy plugin checks (pyright must stay silent there). Any other error is either fixed in the
doc or listed in ``tests/docs_typing_allowlist.json`` with a reason; the list may only shrink:
an entry that no longer occurs fails too (remove it)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import checkers

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ALLOWLIST = ROOT / "tests" / "docs_typing_allowlist.json"
MARKER = re.compile(r"#\s*type error(?P<only_mypy>\s*\(mypy\))?:\s*(?P<text>.+?)\s*$")

# (checker, doc, message): line numbers are left out so that editing a doc keeps its entries.
Found = Counter[tuple[str, str, str]]
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


def mypy_errors(files: list[Path]) -> ByLine:
    found = checkers.mypy_errors([str(f) for f in files], "--no-incremental")
    return {("mypy", name, line): msgs for (name, line), msgs in found.items()}


def pyright_errors(files: list[Path]) -> ByLine:
    found = checkers.pyright_errors(files)
    return {
        ("pyright", name, line): [m.splitlines()[0] for m in msgs]
        for (name, line), msgs in found.items()
    }


def check_marked(files: list[Path], errors: ByLine) -> list[str]:
    """Check the marked lines and take their errors out of ``errors``."""
    problems = []
    for path in files:
        for number, text in enumerate(path.read_text().splitlines(), start=1):
            match = MARKER.search(text)
            if not match:
                continue
            where = f"{path.name}:{number} ({text.strip()})"
            mypy = errors.pop(("mypy", path.name, number), [])
            pyright = errors.pop(("pyright", path.name, number), [])
            if not any(match["text"] in msg for msg in mypy):
                problems.append(f"{where}: mypy reports {mypy}, none with {match['text']!r}")
            if bool(pyright) == bool(match["only_mypy"]):
                wanted = "no error" if match["only_mypy"] else "an error"
                problems.append(f"{where}: pyright should report {wanted}, reports {pyright}")
    return problems


def allowed() -> Found:
    entries = json.loads(ALLOWLIST.read_text())
    for entry in entries:
        assert entry.get("reason"), f"allowlist entry without a reason: {entry}"
    return Counter((e["checker"], e["doc"], e["message"]) for e in entries)


def test_docs_type_check(tmp_path: Path) -> None:
    names = write_docs(tmp_path)
    files = sorted(tmp_path.glob("doc_*.py"))
    errors = mypy_errors(files) | pyright_errors(files)
    problems = check_marked(files, errors)
    found: Found = Counter()
    for (checker, module, _), messages in errors.items():
        for message in messages:
            found[checker, names[module], message] += 1
    listed = allowed()
    new = found - listed
    stale = listed - found
    problems += [f"new error: {k}" for k in sorted(new)]
    problems += [f"fixed, remove from {ALLOWLIST.name}: {k}" for k in sorted(stale)]
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
        ("mypy", doc.name, 2): ["Policy conflict: GradPolicy.is_update"],
        ("pyright", doc.name, 2): ["an error pyright should not see"],
        ("mypy", doc.name, 3): ["some other error"],
        ("mypy", doc.name, 4): ["an unmarked error"],
    }
    problems = check_marked([doc], errors)
    assert len(problems) == 3, problems
    assert problems[0].startswith("doc_demo.py:2 ")
    assert "pyright should report no error" in problems[0]
    assert problems[1].startswith("doc_demo.py:3 ")
    assert "none with 'expected str'" in problems[1]
    assert problems[2].startswith("doc_demo.py:3 ")
    assert "pyright should report an error" in problems[2]
    assert errors == {("mypy", doc.name, 4): ["an unmarked error"]}  # only unmarked errors left

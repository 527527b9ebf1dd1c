"""tests/checker_differences.toml: where a checker's verdict on the static typing cases or the
docs' code differs from the marks, each with its reason, in one place."""

from __future__ import annotations

import tomllib
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "checker_differences.toml"
KINDS = {"miss", "false positive", "other message"}
# (file name, the line's code without its marker, kind)
Difference = tuple[str, str, str]


def differences(checker: str, where: str) -> set[Difference]:
    """The listed differences of ``checker`` in the files under ``where`` ("tests/static" or
    "docs", README.md included)."""
    found = set()
    for entry in tomllib.loads(TABLE.read_text())["difference"]:
        assert entry.get("reason"), f"{TABLE.name}: an entry without a reason: {entry}"
        assert entry["kind"] in KINDS, f"{TABLE.name}: kind not in {sorted(KINDS)}: {entry}"
        if entry["checker"] == checker and entry["where"] == where:
            found.add((entry["file"], entry["code"], entry["kind"]))
    return found


def stale(checker: str, left: set[Difference]) -> list[str]:
    return [
        f"{checker}: listed in {TABLE.name} but no longer occurs (remove it): "
        f"{file}: {code!r} ({kind})"
        for file, code, kind in sorted(left)
    ]

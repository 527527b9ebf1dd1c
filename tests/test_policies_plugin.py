"""The mypy plugin: entry point, and its verdicts on the static policy cases.

The integrator's static harness checks every ``tests/static`` file; this test pins the
plugin-only file so a plugin regression names the plugin.
"""

import re
from pathlib import Path

from mypy import api

from typed_nn.mypy_plugin import POLICY_CONFLICT, POLICY_MINOR, PolicyPlugin, plugin

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "tests" / "static"


def test_entry_point_returns_the_plugin_class() -> None:
    assert plugin("2.4.1") is PolicyPlugin
    assert (POLICY_CONFLICT.code, POLICY_MINOR.code) == ("policy-conflict", "policy-minor")


def _markers(path: Path) -> dict[int, str]:
    lines = path.read_text().splitlines()
    return {n: line.split("# E: ", 1)[1] for n, line in enumerate(lines, 1) if "# E: " in line}


def test_plugin_flags_exactly_the_marked_lines() -> None:
    files = [STATIC / "bad_plugin_policies.py", STATIC / "ok_policies.py"]
    stdout, _, _ = api.run(["--config-file", str(ROOT / "mypy.ini"), *map(str, files)])
    for path in files:
        name = re.escape(f"tests/static/{path.name}")
        found: dict[int, list[str]] = {}
        for m in re.finditer(rf"^{name}:(\d+): error: (.*)$", stdout, re.MULTILINE):
            found.setdefault(int(m[1]), []).append(m[2])
        expected = _markers(path)
        assert set(found) == set(expected), stdout
        for line, marker in expected.items():
            assert any(marker in message for message in found[line]), (line, found[line])

"""The mypy plugin: entry point, and its verdicts on the static policy cases.

The integrator's static harness checks every ``tests/static`` file; this test pins the
plugin-only files so a plugin regression names the plugin. It also pins the other side: every
misuse the plugin reports fails at run time too, the valid calls run, and the callables the
plugin hooks still exist, take their policies where it looks, and are not overloaded (mypy
discards errors raised while it picks an overload, so a hook there would go silent).
"""

import ast
import importlib
import inspect
import re
import sys
import types
import typing
from pathlib import Path

import pytest
from mypy import api

from typed_nn import mypy_plugin
from typed_nn.errors import ParamError, PolicyConflictError, PolicyError
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
    files = [
        STATIC / "bad_plugin_policies.py",
        STATIC / "bad_plugin_policy_calls.py",
        STATIC / "ok_policies.py",
        STATIC / "ok_policy_calls.py",
    ]
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


def _run(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[int, BaseException | None]:
    """Run ``path`` statement by statement; what each marked statement raised (None: nothing)."""
    marks = _markers(path)
    module = types.ModuleType(f"static_{path.stem}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    outcome: dict[int, BaseException | None] = {}
    for node in ast.parse(path.read_text()).body:
        code = compile(ast.Module([node], []), str(path), "exec")
        lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        line = next((n for n in lines if n in marks), None)
        if line is None:
            exec(code, module.__dict__)
            continue
        try:
            exec(code, module.__dict__)
        except (PolicyError, ParamError) as err:
            outcome[line] = err
        else:
            outcome[line] = None
    return outcome


def _run_time_error(marker: str) -> type[Exception]:
    if "XavierFiller adds itself" in marker or "VarScaleFillerPolicy()" in marker:
        return ParamError  # the fillers check their own policies
    if "is set by" in marker or "Policy conflict" in marker:
        return PolicyConflictError
    return PolicyError


@pytest.mark.parametrize("name", ["bad_plugin_policies.py", "bad_plugin_policy_calls.py"])
def test_every_reported_misuse_fails_at_run_time(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = STATIC / name
    outcome = _run(path, monkeypatch)
    for line, marker in _markers(path).items():
        if "incompatible type" in marker:  # a plain mypy error, not the plugin's
            continue
        assert isinstance(outcome[line], _run_time_error(marker)), (line, outcome[line])


def test_the_valid_calls_run(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(STATIC / "ok_policy_calls.py", monkeypatch) == {}


def _resolve(fullname: str) -> object:
    """The object a dotted name (``pkg.module.Class.method``) names."""
    parts = fullname.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            target = getattr(target, attr)
        return target
    raise AssertionError(f"cannot resolve {fullname}")


HOOKED = [
    *mypy_plugin._MAKERS,
    mypy_plugin._MLP_BUILD,
    mypy_plugin._VAR_SCALE,
    mypy_plugin._XAVIER,
    mypy_plugin._CONTAINER,
    mypy_plugin._SUB,
]


@pytest.mark.parametrize("fullname", HOOKED)
def test_hooked_calls_take_policies_and_are_not_overloaded(fullname: str) -> None:
    target = _resolve(fullname)
    func = getattr(target, "__init__", None) if isinstance(target, type) else target
    func = getattr(func, "__func__", func)
    assert callable(func)
    assert not typing.get_overloads(func), f"{fullname} is overloaded"
    params = inspect.signature(func).parameters
    star = [p.name for p in params.values() if p.kind is inspect.Parameter.VAR_POSITIONAL]
    assert star, f"{fullname} takes no *policies"
    assert star[0] in mypy_plugin._PARAMS, (fullname, list(params))


@pytest.mark.parametrize("fullname", [mypy_plugin._OBJECT, *mypy_plugin._TEMPLATES])
def test_hooked_policy_makers_are_not_overloaded(fullname: str) -> None:
    target = _resolve(fullname)
    assert isinstance(target, type)
    for method in ("__init__", "__call__"):
        func = target.__dict__.get(method)
        assert func is None or not typing.get_overloads(func), f"{fullname}.{method}"

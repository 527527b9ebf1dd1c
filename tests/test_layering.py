"""The house rules (docs/architecture.md): imports flow one way, no modules import each
other, counting every import statement (at module level, inside functions and under
``TYPE_CHECKING``), and no function is over 60 lines. Read from the source with ``ast``:
nothing is imported to check it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "typed_nn"

LAYERS: tuple[tuple[str, ...], ...] = (
    # lowest first; a module may import its own layer's modules (without a cycle) and lower ones
    ("tags", "errors", "shape", "devices", "fp_errors", "tracing", "inference_mode", "policies"),
    ("blas", "threads"),  # numpy's BLAS thread count and the pool that splits element-wise passes
    ("data",),
    ("ops.declare", "ops.node"),
    ("ops",),
    ("autodiff",),
    ("evaluate",),
    ("backends",),
    ("layers", "model", "debug", "nn", "optim"),
    ("onnx", "train", "distributed", "cli"),
    ("__init__", "mypy_plugin"),
)
"""Each entry names modules or packages below ``typed_nn`` (the longest match wins)."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"] = path
    return found


MODULES = _modules()


def _package_of(name: str) -> str:
    return (
        name
        if (PACKAGE / name.replace(".", "/") / "__init__.py").exists()
        else name.rpartition(".")[0]
    )


def _imported(name: str, tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module below typed_nn) for every import of the package in ``tree``: ``from p
    import m`` imports the module ``p.m`` where there is one, else ``p`` itself."""
    here = "" if name == "__init__" else _package_of(name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.startswith("typed_nn")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".") if here else []
                base = base[: len(base) - (node.level - 1)]
                module = "typed_nn." + ".".join([*base, node.module] if node.module else base)
            elif (node.module or "").startswith("typed_nn"):
                module = node.module or ""
            else:
                continue
            targets = [f"{module}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            t = target.removeprefix("typed_nn").strip(".") or "__init__"
            while t not in MODULES and "." in t:
                t = t.rpartition(".")[0]
            if t in MODULES and t != name:
                yield node.lineno, t


def _edges() -> dict[str, dict[str, int]]:
    edges: dict[str, dict[str, int]] = {}
    for name, path in MODULES.items():
        out = edges.setdefault(name, {})
        for line, target in _imported(name, ast.parse(path.read_text())):
            out.setdefault(target, line)
    return edges


def _layer(name: str) -> int:
    best, rank = -1, -1
    for i, entries in enumerate(LAYERS):
        for entry in entries:
            if (name == entry or name.startswith(entry + ".")) and len(entry) > best:
                best, rank = len(entry), i
    assert rank >= 0, f"typed_nn.{name} is in no layer of tests/test_layering.py"
    return rank


def _cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        _layer(name)


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{MODULES[name].relative_to(PACKAGE.parent)}:{line} imports typed_nn.{target}"
        for name, targets in sorted(_edges().items())
        for target, line in sorted(targets.items())
        if _layer(target) > _layer(name)
    ]
    assert upward == []


def test_no_import_cycles() -> None:
    assert _cycles(_edges()) == []


def test_the_scan_sees_imports_inside_functions_and_type_checking_blocks() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..evaluate.plan import evaluate\n"
        "def f():\n    from ..backends import install\n"
    )
    assert sorted(t for _, t in _imported("data.tensor", tree)) == ["backends", "evaluate.plan"]
    assert _cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [
        ["a", "b", "c"]
    ]


def test_no_function_is_over_60_lines() -> None:
    """Counted from ``def`` to the last line, docstring included."""
    long = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({length} lines)"
        for path in MODULES.values()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > 60
    ]
    assert long == []

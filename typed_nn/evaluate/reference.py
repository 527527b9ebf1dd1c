"""The reference evaluator: the analysed schedule computed node by node.

Debug mode uses it (a check runs after every node, so nothing may be fused away), and the
optimised executor falls back to it when a compiled step fails before writing any target,
so errors name the exact node and the line that built it. It runs the *same* schedule as
the optimised evaluator — the graph collected the same way (shared sub-expressions once,
valid cached results as leaves) and rewritten by the same rules (``softmax_grad(
nll_loss_grad(...))`` is one kernel, ``x * 1`` is ``x``) — each node with its plain
implementation, so it gives normal mode's numbers; only fusion and batching, which change
how values are computed but not what, are left out. Results are cached on every node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import devices
from ..data.tensor import AnyTensor, Tensor
from ..errors import EvaluationError, TypedNNError, message
from ..ops.declare import implementation
from ..ops.rules import describe
from . import hooks
from .cache import epoch, result_tensor, store
from .collect import collect
from .graph import INode, build_graph, is_number, number_operand
from .options import options
from .rewrite import rewrite
from .widen import widen_accumulations

__all__ = ["execute"]

AnyResult = Tensor[Any, Any, Any]


def execute(
    roots: Sequence[AnyTensor], targets: dict[int, AnyResult] | None = None
) -> list[AnyResult]:
    """Evaluate ``roots`` node by node; returns their principal tensors in order (the caller
    copies into ``targets``)."""
    col = collect(roots, options.cse, epoch())
    g = build_graph(col)
    widen_accumulations(g)
    if options.rewrite:
        rewrite(g)
    alive = g.live()
    values: list[Any] = list(col.env) + [None] * (len(g.nodes) - len(col.env))
    results: dict[int, AnyResult] = {}
    checks = hooks.node_checks
    with np.errstate(all="ignore"):
        for s in g.order:
            n = g.nodes[s]
            if not alive[s] or n.op == "leaf":
                continue
            if n.op == "alias":  # a rewrite found the value elsewhere: x * 1 is x
                values[s] = values[n.args[0]]
                continue
            args = [number_operand(n, a[1]) if is_number(a) else values[a] for a in n.args]
            result = _compute(n, args)
            if n.obj is not None:
                for check in checks:
                    check(n.obj, result)
                store(n.obj, result)
            values[s] = result.array
            results[s] = result
    for s, obj in col.merged:
        if s in results:
            store(obj, results[s])
    return [_root(g.nodes[s], values[s], results.get(s), col.objs[s]) for s in col.roots]


def _compute(n: INode, args: list[Any]) -> AnyResult:
    """One node with its device's plain implementation, its result checked."""
    node = n.obj
    shown = node.describe() if node is not None else n.op
    built_at = node.built_at if node is not None else None
    try:
        array = implementation(n.op, n.device)(*args, *n.params)
    except TypedNNError:
        raise
    except Exception as exc:
        raise EvaluationError(
            message(
                f"evaluating {n.op} failed: {type(exc).__name__}: {exc}",
                [("node", shown)]
                + [(f"operand {i + 1}", text) for i, text in enumerate(_operands(n, args))],
                built_at=built_at,
                hint="check the operands' values; the line above built the failing node.",
            )
        ) from exc
    where = devices.device_of_result(array)
    if array.shape != n.shape or array.dtype != n.dtype or where is not n.device:
        received = f"{array.dtype}{tuple(array.shape)} on {where.name if where else type(array)}"
        raise EvaluationError(
            message(
                f"the {n.device.name} implementation of {n.op} returned the wrong result.",
                [("declared", shown), ("received", received)],
                built_at=built_at,
                hint="this is a typed_nn bug; please report it with the expression.",
            )
        )
    return result_tensor(array, node.elem if node is not None else None, n.device)


def _operands(n: INode, args: list[Any]) -> list[str]:
    """The operands as messages show them: the node's own data where the schedule computes
    the op as built, else (a rewritten node) the arrays it was given."""
    node = n.obj
    if node is not None and node.op.name == n.op and len(node.operands) == len(args):
        return [describe(o) for o in node.operands]
    return [
        f"{type(a).__name__} {a!r}" if isinstance(a, int | float) else f"{a.dtype}{a.shape}"
        for a in args
    ]


def _root(n: INode, value: Any, result: AnyResult | None, obj: Any) -> AnyResult:
    """A root's principal tensor: a computed one (a copy where the op may return a view of
    an operand: a result never shares an input's memory), a leaf as it is (a principal
    tensor, or a node's valid cached result), or a copy of the value a rewrite aliased."""
    if result is not None and n.decl is not None and n.decl.kind == "view":
        return result_tensor(value.copy(), n.obj.elem, n.device)
    if result is not None:
        return result
    if n.op == "leaf":
        leaf: AnyResult = obj
        return leaf
    return result_tensor(value.copy(), n.obj.elem, n.device)

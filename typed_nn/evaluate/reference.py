"""The reference evaluator: every node computed on its own by its plain implementation.

Debug mode uses it (a check runs after every node, so nothing may be fused away), and the
optimised executor falls back to it when a compiled step fails, so errors name the exact
node and the user line that built it. Results are cached on every computed node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import backends
from ..data.tensor import Tensor
from ..data.tensor_like import AnyTensor
from ..errors import EvaluationError, TypedNNError, message
from ..ops.declare import implementation
from ..ops.node import Operation
from ..ops.rules import describe
from . import hooks
from .cache import cached, result_tensor, store

__all__ = ["Run", "execute", "run_node"]

AnyOp = Operation[Any, Any, Any]
AnyResult = Tensor[Any, Any, Any]


class Run:
    """One evaluation: lowers data kinds once, then orders the nodes to compute."""

    def __init__(self) -> None:
        self._lowered: dict[int, tuple[AnyTensor, AnyTensor]] = {}

    def lower(self, x: AnyTensor) -> AnyTensor:
        """``x`` itself for tensors and nodes; otherwise its ``lower()``, computed once."""
        if isinstance(x, Tensor | Operation):
            return x
        entry = self._lowered.get(id(x))
        if entry is None:
            entry = (x, self.lower(x.lower()))  # keep x alive so its id stays unique
            self._lowered[id(x)] = entry
        return entry[1]

    def schedule(self, roots: Sequence[AnyTensor]) -> list[AnyOp]:
        """The nodes to compute, operands before users, each once (iterative DFS)."""
        order: list[AnyOp] = []
        visited: set[int] = set()
        for root in roots:
            stack: list[tuple[Any, bool]] = [(self.lower(root), False)]
            while stack:
                x, expanded = stack.pop()
                if expanded:
                    order.append(x)
                    continue
                if type(x) is Tensor or id(x) in visited:
                    continue
                visited.add(id(x))
                if cached(x) is not None:
                    continue
                stack.append((x, True))
                for operand in reversed(x.operands):
                    if not isinstance(operand, int | float):
                        stack.append((self.lower(operand), False))
        return order

    def value(self, x: Any) -> Any:
        """The backend array of an evaluated operand (numbers pass through)."""
        if isinstance(x, int | float):
            return x
        x = self.lower(x)
        if type(x) is Tensor:
            return x.array
        result = cached(x)
        assert result is not None, f"operand {x!r} was not computed"
        return result.array

    def result(self, x: AnyTensor) -> AnyResult:
        """The principal tensor of an evaluated root."""
        x = self.lower(x)
        result = x if type(x) is Tensor else cached(x)  # type: ignore[arg-type]
        assert isinstance(result, Tensor)
        return result


def run_node(run: Run, node: AnyOp) -> AnyResult:
    """Compute one node with its device's implementation."""
    decl = node.op
    impl = implementation(decl.name, node.device)
    try:
        array = impl(*[run.value(o) for o in node.operands], *node.params)
    except TypedNNError:
        raise
    except Exception as exc:
        raise EvaluationError(
            message(
                f"evaluating {decl.name} failed: {type(exc).__name__}: {exc}",
                [("node", node.describe())]
                + [(f"operand {i + 1}", describe(o)) for i, o in enumerate(node.operands)],
                built_at=node.built_at,
                hint="check the operands' values; the line above built the failing node.",
            )
        ) from exc
    where = backends.device_of_result(array)
    if array.shape != node.shape or array.dtype != node.elem.dtype or where is not node.device:
        received = f"{array.dtype}{tuple(array.shape)} on {where.name if where else type(array)}"
        raise EvaluationError(
            message(
                f"the {node.device.name} implementation of {decl.name} returned the wrong result.",
                [("declared", node.describe()), ("received", received)],
                built_at=node.built_at,
                hint="this is a typed_nn bug; please report it with the expression.",
            )
        )
    return result_tensor(array, node.elem, node.device)


def execute(
    roots: Sequence[AnyTensor], targets: dict[int, AnyResult] | None = None
) -> list[AnyResult]:
    """Evaluate ``roots`` node by node; returns their principal tensors in order (the caller
    copies into ``targets``)."""
    run = Run()
    checks = hooks.node_checks
    with np.errstate(all="ignore"):
        for node in run.schedule(roots):
            result = run_node(run, node)
            for check in checks:
                check(node, result)
            store(node, result)
    return [run.result(root) for root in roots]

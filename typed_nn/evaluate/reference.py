"""The checks of a by-node program (debug mode, and the re-run of a program that failed).

A by-node program is the plan's own program generated neither fused, batched nor specialised
(``executor.by_node``): every node is one step (a plain kernel call, or an element-wise
node as a region of one), so after each one its value is checked
(shape, dtype, device, then debug mode's ``hooks.node_checks``) and an error names the exact
node and the line that built it.
"""

from __future__ import annotations

from typing import Any

from .. import devices
from ..errors import EvaluationError, IndexRangeError, message
from ..ops.rules import describe
from . import hooks
from .cache import result_tensor
from .graph import Graph, INode, is_number, number_operand
from .sanitize import about

__all__ = ["NodeChecks", "wrong_result"]


class NodeChecks:
    """Bound as ``CHK`` in a by-node program: ``before``/``after`` each step (as the sanitizer).
    It keeps the graph's structure; ``objs``, the nodes of the evaluation running it."""

    def __init__(self, g: Graph) -> None:
        self.g = g.structure()
        self.step = -1
        self.objs: list[Any] = []
        self.values: dict[int, Any] = {}

    def node(self, s: int) -> Any:
        """Slot ``s``'s node in this evaluation (None: a node a rewrite made)."""
        return self.objs[s] if self.g.nodes[s].obj and s < len(self.objs) else None

    def before(self, s: int, *operands: Any) -> None:
        self.step = s

    def after(self, s: int, value: Any) -> None:
        self.values[s] = value
        n = self.g.nodes[s]
        if n.op in ("leaf", "alias"):
            return
        obj = self.node(s)
        received = wrong_result(value, n.shape, n.dtype, n.device)
        if received is not None:
            raise EvaluationError(
                message(
                    f"the {n.device.name} implementation of {n.op} returned the wrong result.",
                    [("declared", about(obj, n.op)[0]), ("received", received)],
                    built_at=about(obj, n.op)[1],
                    hint="this is a typed_nn bug; please report it with the expression.",
                )
            )
        if obj is not None and hooks.node_checks:
            result = result_tensor(value, obj.elem, n.device)
            for check in hooks.node_checks:
                check(obj, result)

    def located(self, exc: IndexRangeError) -> IndexRangeError:
        """A kernel's error about its operands' values, with the node that raised it and
        the line that built it (a kernel knows neither)."""
        n, obj = self.g.nodes[self.step], self.node(self.step)
        shown, built_at = about(obj, n.op)
        text, _, hint = str(exc).partition("\nhint: ")
        headline, *lines = text.split("\n")
        items = [line.split(" : ", 1) for line in lines]
        laid_out = zip(items, lines, strict=True)
        if not all(len(item) == 2 and line.startswith("  ") for item, line in laid_out):
            # a kernel's own layout: kept as it is, the node and its line below it
            more = message("", [("node", shown)], built_at=built_at).lstrip("\n")
            return IndexRangeError(f"{exc}\n{more}")
        fields = [(k.strip(), v) for k, v in items] + [("node", shown)]
        return IndexRangeError(message(headline, fields, built_at=built_at, hint=hint or None))

    def failed(self, exc: Exception) -> EvaluationError:
        """The error of the step that raised ``exc``, naming its node and operands."""
        n, obj = self.g.nodes[self.step], self.node(self.step)
        args = [number_operand(n, a[1]) if is_number(a) else self.values[a] for a in n.args]
        shown, built_at = about(obj, n.op)
        return EvaluationError(
            message(
                f"evaluating {n.op} failed: {type(exc).__name__}: {exc}",
                [("node", shown)]
                + [(f"operand {i + 1}", text) for i, text in enumerate(_operands(n, obj, args))],
                built_at=built_at,
                hint="check the operands' values; the line above built the failing node.",
            )
        )


def wrong_result(value: Any, shape: tuple[int, ...], dtype: Any, device: Any) -> str | None:
    """What a kernel returned (``dtype(shape) on device``) where it is not the node's value."""
    where = devices.device_of_result(value)
    found = (getattr(value, "shape", None), getattr(value, "dtype", None))
    if found == (shape, dtype) and where is device:
        return None
    return f"{found[1]}{found[0]} on {where.name if where else type(value).__name__}"


def _operands(n: INode, node: Any, args: list[Any]) -> list[str]:
    """The operands as messages show them: the node's own data where the schedule computes
    the op as built, else (a rewritten node) the arrays it was given."""
    if node is not None and node.op.name == n.op and len(node.operands) == len(args):
        return [describe(o) for o in node.operands]
    return [
        f"{type(a).__name__} {a!r}" if isinstance(a, int | float) else f"{a.dtype}{a.shape}"
        for a in args
    ]

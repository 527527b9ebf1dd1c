"""Reverse-mode accumulation over a lazy graph: the engine behind ``tn.grad`` and ``tn.vjp``.

One walk orders the graph (operands before users) and marks the nodes that lead to a
requested input; a reverse pass then asks each marked node's op for its vjp (declared on its
``OpDecl``) and hands every operand its share, summed back to the operand's shape where the
op broadcast it. Fan-out contributions are summed. Everything built is lazy: the gradients
are graphs like any other, evaluated (fused, shared, cached) only when asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from .. import tracing
from ..data.tensor import AnyTensor, Tensor
from ..errors import NoImplementationError, message
from ..ops.declare import NotDifferentiable
from ..ops.join import CONCAT, zero_block
from ..ops.node import AnyOp, Operation, build
from ..ops.reduce import sum_to
from ..ops.rows import slice as slice_node
from ..ops.special import ZeroTensor
from ..tags import FloatTag

__all__ = ["backpropagate"]


class _Lowering:
    """Data as the evaluator sees it: tensors and nodes as they are, other data kinds through
    their ``lower()``, called once per object (the originals are kept so ids stay unique).
    A row view of a tensor (``x[i]`` of a principal tensor, computed at once) becomes the
    slice node of its tensor, so that gradients reach the tensor through it. Inside a
    ``tn.compile`` trace an argument's stand-in is the tensor passed (one leaf, as eagerly: a
    tensor passed twice, or also read closed over, sums its paths)."""

    def __init__(self) -> None:
        self._done: dict[int, tuple[AnyTensor, AnyTensor]] = {}
        trace = tracing.state.trace
        self._stands_for: dict[int, AnyTensor] = {}
        self._seen: dict[int, AnyTensor] = {}
        self._values: dict[int, tuple[AnyTensor, AnyTensor, AnyTensor]] = {}
        if trace is not None:  # its program hangs on which arguments are one object
            trace.differentiated = True
            self._stands_for, self._seen = trace.stands_for, trace.differentiated_through
            self._values = trace.values

    def __call__(self, x: AnyTensor) -> AnyTensor:
        if isinstance(x, Operation):
            value = self._values.get(id(x))
            # a tensor assigned earlier in the trace, read after: the tensor, as eagerly
            return x if value is None else self(value[1])
        if isinstance(x, Tensor) and x._view_of is None:
            passed = self._stands_for.get(id(x))
            if passed is not None:
                return passed
            self._seen[id(x)] = x  # reached as itself (closed over, or a grad's wrt)
            return x
        entry = self._done.get(id(x))
        if entry is None:
            if isinstance(x, Tensor) and x._view_of is not None:
                parent, index = x._view_of
                # over the traced tensor itself (its operand lowers to the tensor passed)
                base = parent if parent._view_of is None else self(parent)
                entry = self._done[id(x)] = (x, slice_node(base, index))
            else:
                entry = self._done[id(x)] = (x, self(x.lower()))
        return entry[1]


def _order(
    outputs: Sequence[AnyTensor], targets: set[int], low: _Lowering
) -> tuple[list[AnyTensor], set[int]]:
    """Every node the outputs reach, operands first, and the ids of those that lead to a
    target (only they need cotangents)."""
    order: list[AnyTensor] = []
    leads: set[int] = set()
    seen: set[int] = set()
    for out in outputs:
        stack: list[tuple[AnyTensor, bool]] = [(out, False)]
        while stack:
            x, expanded = stack.pop()
            if expanded:
                order.append(x)
                if id(x) in targets or (
                    isinstance(x, Operation) and any(id(o) in leads for o in _data_operands(x, low))
                ):
                    leads.add(id(x))
                continue
            if id(x) in seen:
                continue
            seen.add(id(x))
            stack.append((x, True))
            if isinstance(x, Operation):
                stack.extend((o, False) for o in _data_operands(x, low) if id(o) not in seen)
    return order, leads


def _data_operands(node: AnyOp, low: _Lowering) -> list[AnyTensor]:
    return [low(o) for o in node.operands if not isinstance(o, int | float)]


def backpropagate(
    outputs: Sequence[AnyTensor], seeds: Sequence[AnyTensor], wrt: Sequence[AnyTensor]
) -> list[AnyTensor | None]:
    """The cotangents of ``wrt`` given ``seeds`` for ``outputs`` (None where none reaches);
    ``seeds[i]`` has ``outputs[i]``'s shape."""
    low = _Lowering()
    outputs, wrt = [low(y) for y in outputs], [low(w) for w in wrt]
    order, leads = _order(outputs, {id(w) for w in wrt}, low)
    pending: dict[int, list[AnyTensor]] = {}
    for out, seed in zip(outputs, seeds, strict=True):
        if id(out) in leads:
            pending.setdefault(id(out), []).append(seed)
    done: dict[int, AnyTensor] = {}
    for x in reversed(order):
        parts = pending.pop(id(x), None)
        if parts is None:
            continue
        g = done[id(x)] = _total(parts)
        if isinstance(x, Operation):
            _propagate(x, g, leads, pending, low)
    return [done.get(id(w)) for w in wrt]


def _propagate(
    node: AnyOp,
    g: AnyTensor,
    leads: set[int],
    pending: dict[int, list[AnyTensor]],
    low: _Lowering,
) -> None:
    """Give each operand of ``node`` that leads to a target its share of ``g``."""
    rule = node.op.vjp
    if isinstance(rule, NotDifferentiable):
        return  # its paths contribute zero (documented in docs/autodiff.md)
    if rule is None:
        raise NoImplementationError(
            message(
                f"op '{node.op.name}' declares no vector-Jacobian product.",
                [("node", node.describe())],
                built_at=node.built_at,
                hint="declare vjp= on the op's OpDecl (or vjp=NOT_DIFFERENTIABLE).",
            )
        )
    shares = rule(node, g)
    for operand, share in zip(node.operands, shares, strict=True):
        if share is None or isinstance(operand, int | float):
            continue
        x = low(operand)
        if id(x) not in leads or not issubclass(x.elem, FloatTag):
            continue
        pending.setdefault(id(x), []).append(sum_to(share, x.shape))


def _total(parts: list[AnyTensor]) -> AnyTensor:
    if len(parts) > 1:
        parts = _merge_blocks(parts)
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _blocks(part: AnyTensor) -> tuple[int, list[tuple[int, AnyTensor]]] | None:
    """A ``concat`` of zero blocks and data (what ``narrow``'s vjp builds): its axis and the
    (start, data) of each data item; None for anything else."""
    if not (isinstance(part, Operation) and part.op is CONCAT):
        return None
    (axis,) = part.params
    found: list[tuple[int, AnyTensor]] = []
    start = 0
    for item in part.operands:
        if not isinstance(item, ZeroTensor):
            found.append((start, item))
        start += item.shape[axis]
    return axis, found


def _merge_blocks(parts: list[AnyTensor]) -> list[AnyTensor]:
    """Cotangents that are zero-padded blocks of one tensor along one axis, with disjoint
    data blocks (the gates of a fused projection, each taken back by ``narrow``'s vjp),
    summed as one concat of their blocks: one kernel instead of a concat and an add each."""
    groups: dict[tuple[int, tuple[int, ...]], list[AnyTensor]] = {}
    blocks: dict[tuple[int, tuple[int, ...]], list[tuple[int, AnyTensor]]] = {}
    rest: list[AnyTensor] = []
    for part in parts:
        found = _blocks(part)
        if found is None:
            rest.append(part)
            continue
        axis, items = found
        groups.setdefault((axis, part.shape), []).append(part)
        blocks.setdefault((axis, part.shape), []).extend(items)
    for (axis, shape), members in groups.items():
        items = sorted(blocks[(axis, shape)], key=lambda entry: entry[0])
        spans = [(start, start + item.shape[axis]) for start, item in items]
        if len(members) == 1 or not items or any(a[1] > b[0] for a, b in pairwise(spans)):
            rest.extend(members)  # nothing to merge, or overlapping blocks: summed as given
        else:
            rest.append(_pad(axis, shape, items))
    return rest


def _pad(axis: int, shape: tuple[int, ...], items: list[tuple[int, AnyTensor]]) -> AnyTensor:
    """The tensor of ``shape`` holding each (start, data) block along ``axis``, zeros elsewhere."""
    pieces: list[AnyTensor] = []
    at = 0
    for start, item in items:
        if start > at:
            pieces.append(zero_block(item, axis, start - at))
        pieces.append(item)
        at = start + item.shape[axis]
    if at < shape[axis]:
        pieces.append(zero_block(items[-1][1], axis, shape[axis] - at))
    return pieces[0] if len(pieces) == 1 else build(CONCAT, tuple(pieces), (axis,))

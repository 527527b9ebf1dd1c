"""How each typed_nn op is written in ONNX: :func:`rule_for` — the one operator an op's
declaration names (``OpDecl.onnx``), else its rule in :data:`RULES` (op name -> rule).

A rule ``rule(g, node, inputs) -> name`` appends the ONNX nodes that compute ``node`` to the
:class:`~typed_nn.onnx.graph.GraphBuilder` ``g`` and returns the name of the value holding
its result. ``inputs`` are the names of the node's operands in order (a Python number operand
is already a constant of the node's element type). A rule reads only the node (its params,
its operands' shapes, its element type) and ``g``, so each entry can move onto its op's
``OpDecl`` unchanged. Ops with no entry (the backward ops ``*_grad``, ``max_pool2d_select``,
``tile_grad``, ``label_pick_grad``, ``dropout_mask``, a training-time random mask, and
``random``, a draw) have no ONNX counterpart: exporting one is an ``ExportError``.

Every rule keeps typed_nn's exact semantics; where ONNX's differ, the rule says how.
Shapes are static: the exported graph has the example's shapes (see ``export``).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ops.declare import OpDecl
from ..ops.layout import mute_shape
from ..ops.node import AnyOp

if TYPE_CHECKING:
    from .graph import GraphBuilder

__all__ = ["RULES", "OnnxRule", "rule_for"]

OnnxRule = Callable[["GraphBuilder", AnyOp, list[str]], str]


def _plain(op_type: str) -> OnnxRule:
    """An op that is one ONNX op on the same inputs (ONNX broadcasting is numpy's, a
    superset of MetaNN's, which the op's declaration has already checked)."""

    def rule(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
        return g.add(op_type, xs)

    rule.__name__ = f"onnx_{op_type}"
    return rule


def _dtype(node: AnyOp) -> np.dtype[Any]:
    dtype: np.dtype[Any] = np.dtype(node.elem.dtype)
    return dtype


def _square(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    return g.add("Mul", [xs[0], xs[0]])


def _softmax(op_type: str) -> OnnxRule:
    """Over the last ``k`` dims together: ONNX normalises one axis, so ``k > 1`` flattens the
    group into one axis and back."""

    def rule(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
        (k,) = node.params
        shape = node.shape
        if k == 1:
            return g.add(op_type, xs, axis=-1)
        grouped = (*shape[: len(shape) - k], prod(shape[len(shape) - k :]))
        flat = g.add("Reshape", [xs[0], g.int64s(grouped)])
        return g.add("Reshape", [g.add(op_type, [flat], axis=-1), g.int64s(shape)])

    rule.__name__ = f"onnx_{op_type}"
    return rule


def _reduce(op_type: str) -> OnnxRule:
    """``dims`` (sorted, non-negative) and ``keep_dim``. ReduceSum takes its axes as an input
    since opset 13, ReduceMean and ReduceMax since opset 18 (an attribute before)."""

    def rule(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
        dims, keep_dim = node.params
        if not dims:  # nothing reduced (an empty axes list would mean "all" in ONNX)
            return g.add("Identity", xs)
        if op_type == "ReduceSum" or g.opset >= 18:
            return g.add(op_type, [xs[0], g.int64s(dims)], keepdims=int(keep_dim))
        return g.add(op_type, xs, axes=list(dims), keepdims=int(keep_dim))

    rule.__name__ = f"onnx_{op_type}"
    return rule


def _argmax(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    # select_last_index=0: the first maximum, as numpy's argmax.
    return g.add("ArgMax", xs, axis=node.params[0], keepdims=0)


def _dot(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """``dot(a, b, k)`` contracts the last ``k`` dims of ``a`` with the first ``k`` of ``b``
    (numpy's ``tensordot``). ONNX's MatMul is numpy's ``matmul``: the same for ``k = 1`` when
    ``b`` has rank 1 or 2 (a leading batch of ``a`` rows); otherwise both sides are
    flattened to matrices (outer dims x contracted dims), multiplied and reshaped back."""
    a, b = node.operands
    (k,) = node.params
    if k == 1 and b.rank <= 2:
        return g.add("MatMul", xs)
    outer_a, inner, outer_b = a.shape[: a.rank - k], a.shape[a.rank - k :], b.shape[k:]
    lhs = g.add("Reshape", [xs[0], g.int64s((prod(outer_a), prod(inner)))])
    rhs = g.add("Reshape", [xs[1], g.int64s((prod(inner), prod(outer_b)))])
    return g.add("Reshape", [g.add("MatMul", [lhs, rhs]), g.int64s(node.shape)])


def _reshape(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    return g.add("Reshape", [xs[0], g.int64s(node.shape)])


def _permute(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    return g.add("Transpose", xs, perm=list(node.params[0]))


def _slice(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """``x[i]``: a scalar index gathers along axis 0 and drops it."""
    return g.add("Gather", [xs[0], g.constant(node.params[0], np.dtype(np.int64))], axis=0)


def _narrow(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    axis, start, length = node.params
    starts, ends, axes = g.int64s([start]), g.int64s([start + length]), g.int64s([axis])
    return g.add("Slice", [xs[0], starts, ends, axes])


def _concat(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    return g.add("Concat", xs, axis=node.params[0])


def _stack(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """A new axis on every item, then one concatenation along it."""
    axes = g.int64s([node.params[0]])
    return g.add("Concat", [g.add("Unsqueeze", [x, axes]) for x in xs], axis=node.params[0])


def _tile(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """A 1 inserted at each of ``new_dims`` (MetaNN's muteShape), then ONNX's Tile."""
    shape, new_dims = node.params
    mute = mute_shape(node.operands[0].shape, len(shape), new_dims)
    repeats = [out // src if src else 1 for out, src in zip(shape, mute, strict=True)]
    return g.add("Tile", [g.add("Reshape", [xs[0], g.int64s(mute)]), g.int64s(repeats)])


def _conv2d(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """NCHW input, OIHW weight, cross-correlation without dilation or groups: ONNX's Conv."""
    (sh, sw), (ph, pw) = node.params
    kernel = list(node.operands[1].shape[2:])
    return g.add("Conv", xs, kernel_shape=kernel, strides=[sh, sw], pads=[ph, pw, ph, pw])


def _max_pool2d(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """No padding, windows that do not fit dropped (ONNX's default ``ceil_mode=0``)."""
    size, stride = node.params
    return g.add("MaxPool", xs, kernel_shape=list(size), strides=list(stride))


def _avg_pool2d(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """No padding (so ``count_include_pad`` does not matter), windows that do not fit
    dropped: ONNX's AveragePool."""
    size, stride = node.params
    return g.add("AveragePool", xs, kernel_shape=list(size), strides=list(stride))


def _embedding(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """Rows of the (num, dim) table picked by the indices: ONNX's Gather along axis 0."""
    return g.add("Gather", xs, axis=0)


def _label_pick(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """``x[..., labels]``: ONNX's GatherElements along the last axis, on the labels with a
    size-1 last axis (and that axis dropped after). An out-of-range label is the runtime's
    error, as typed_nn's."""
    x, labels = xs
    last = g.int64s([-1])
    picked = g.add("GatherElements", [x, g.add("Unsqueeze", [labels, last])], axis=-1)
    return g.add("Squeeze", [picked, last])


def _where(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """typed_nn's condition is any nonzero value (NaN included): a cast to bool is the same."""
    cond, a, b = xs
    return g.add("Where", [g.cast(cond, np.dtype(bool)), a, b])


def _astype(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    return g.cast(xs[0], _dtype(node))


def _interpolate(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """MetaNN's ``a * lam + b * (1 - lam)``, in that order (``lam = 1`` gives exactly ``a``)."""
    a, b, lam = xs
    rest = g.add("Sub", [g.constant(1, _dtype(node)), lam])
    return g.add("Add", [g.add("Mul", [a, lam]), g.add("Mul", [b, rest])])


def _one_hot(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """A vector of ``length`` zeros with the scalar at ``pos``: the scalar padded with zeros
    (exact, where multiplying a one-hot vector by an infinite value would give NaNs)."""
    length, pos = node.params
    vector = g.add("Reshape", [xs[0], g.int64s([1])])
    return g.add("Pad", [vector, g.int64s([pos, length - pos - 1])])


def _fill(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    return g.add("Expand", [xs[0], g.int64s(node.shape)])


def _zeros(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    return g.constant(np.zeros(node.shape, _dtype(node)), _dtype(node))


def _to_device(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """An ONNX graph has no devices: the runtime places the values."""
    return g.add("Identity", xs)


def _nll_loss(g: GraphBuilder, node: AnyOp, xs: list[str]) -> str:
    """``-sum(truth * log(pred)) / sum(truth)``, a term 0 wherever truth is 0 (even where
    pred is 0, whose log is -inf)."""
    truth, pred = xs
    zero = g.constant(0, _dtype(node))
    log_pred = g.add("Where", [g.add("Equal", [truth, zero]), zero, g.add("Log", [pred])])
    total = g.add("ReduceSum", [g.add("Mul", [truth, log_pred])], keepdims=0)
    return g.add("Neg", [g.add("Div", [total, g.add("ReduceSum", [truth], keepdims=0)])])


RULES: dict[str, OnnxRule] = {
    # element-wise (those that are one ONNX operator say so in their declaration: OpDecl.onnx)
    "square": _square,
    "where": _where,
    "interpolate": _interpolate,
    # normalisation, reductions, losses
    "softmax": _softmax("Softmax"),
    "log_softmax": _softmax("LogSoftmax"),
    "reduce_sum": _reduce("ReduceSum"),
    "reduce_mean": _reduce("ReduceMean"),
    "reduce_max": _reduce("ReduceMax"),
    "argmax": _argmax,
    "nll_loss": _nll_loss,
    # contraction, convolution, pooling
    "dot": _dot,
    "conv2d": _conv2d,
    "max_pool2d": _max_pool2d,
    "avg_pool2d": _avg_pool2d,
    "embedding": _embedding,
    "label_pick": _label_pick,
    # layout and structure
    "reshape": _reshape,
    "permute": _permute,
    "slice": _slice,
    "narrow": _narrow,
    "concat": _concat,
    "stack": _stack,
    "tile": _tile,
    # sources and conversions
    "fill": _fill,
    "one_hot": _one_hot,
    "zeros": _zeros,
    "astype": _astype,
    "to_device": _to_device,
}


def rule_for(decl: OpDecl) -> OnnxRule | None:
    """How ``decl`` is written in ONNX: its rule here, else the one operator its declaration
    names (``OpDecl.onnx``), else None (not exportable)."""
    rule = RULES.get(decl.name)
    if rule is None and decl.onnx is not None:
        rule = _plain(decl.onnx)
    return rule

"""Classification losses on logits: ``cross_entropy`` on integer labels and
``binary_cross_entropy_with_logits``, PyTorch's meanings, composed of existing ops.

``cross_entropy(logits, labels)`` is ``-log_softmax(logits)[..., label]``: the log-softmax is
stable for large logits, the label's value is picked (``label_pick``) with no one-hot
matrix, and ``tn.grad`` gives the well-known ``softmax(logits) - onehot`` (scaled by the
reduction) through the parts' vjps, again without a one-hot input.

**Layout.** The class dim is the *last* one: ``(N, C)`` logits take ``(N,)`` labels and
``(N, T, C)`` logits (a sequence model's output) take ``(N, T)`` labels. PyTorch puts the
classes second for rank 3 (``(N, C, T)``); pass ``ops.permute(x, (0, 2, 1))`` of such logits.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar, overload

from ..data.factories import scalar
from ..data.tensor import AnyTensor, TensorLike
from ..errors import ElemTypeError, ParamError, ShapeError, message
from ..shape import format_shape
from ..tags import (
    FE,
    FLOAT_NAMES,
    HALF_TAGS,
    D,
    Dim0,
    Dim1,
    Dim2,
    Dim3,
    Dv,
    Float32,
    FloatTag,
    IntTag,
)
from .activation import softplus
from .convert import astype
from .node import build
from .pick import LABEL_PICK, check_labels
from .reduce import REDUCE_MEAN, REDUCE_SUM
from .rules import number_operand, python_int, require_data, site
from .select import WHERE
from .softmax import LOG_SOFTMAX

__all__ = ["binary_cross_entropy_with_logits", "cross_entropy"]

IE = TypeVar("IE", bound=IntTag)
"""The labels' element: Int64 or Int32."""

Reduced = Literal["mean", "sum"]


# fmt: off
@overload
def cross_entropy(logits: TensorLike[FE, Dv, Dim2], labels: TensorLike[IE, Dv, Dim1], *, reduction: Reduced = "mean", label_smoothing: float = 0.0, ignore_index: int | None = None) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def cross_entropy(logits: TensorLike[FE, Dv, Dim3], labels: TensorLike[IE, Dv, Dim2], *, reduction: Reduced = "mean", label_smoothing: float = 0.0, ignore_index: int | None = None) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def cross_entropy(logits: TensorLike[FE, Dv, Dim2], labels: TensorLike[IE, Dv, Dim1], *, reduction: Literal["none"], label_smoothing: float = 0.0, ignore_index: int | None = None) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def cross_entropy(logits: TensorLike[FE, Dv, Dim3], labels: TensorLike[IE, Dv, Dim2], *, reduction: Literal["none"], label_smoothing: float = 0.0, ignore_index: int | None = None) -> TensorLike[FE, Dv, Dim2]: ...
# fmt: on
def cross_entropy(
    logits: AnyTensor,
    labels: AnyTensor,
    *,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
    ignore_index: int | None = None,
) -> AnyTensor:
    """Cross-entropy of ``logits`` (class scores, last dim) against integer ``labels``.

    Per position ``-log_softmax(logits)[..., label]``; with ``label_smoothing`` = e,
    ``(1 - e)`` times that plus ``e`` times the mean over classes of ``-log_softmax(logits)``
    (PyTorch's definition). Positions whose label is ``ignore_index`` contribute 0 and are
    left out of the mean's denominator (all ignored: the mean is NaN, as in PyTorch).

    Args:
        logits: float ``(N, C)`` or ``(N, T, C)`` (classes last; see the module).
        labels: Int64 or Int32 class numbers in ``0 .. C - 1``, shaped like the logits
            without their last dim. Out of range: ``IndexRangeError`` on evaluation (on
            the GPU, checked without waiting for the device: the loss is NaN).
        reduction: ``"mean"`` (a Scalar), ``"sum"`` (a Scalar) or ``"none"`` (the labels'
            shape).

    >>> logits = tn.tensor([[2.0, 0.5, -1.0]], tn.Float64, tn.CPU, tn.Dim2)
    >>> ops.cross_entropy(logits, tn.tensor([0], tn.Int64, tn.CPU, tn.Dim1)).numpy()
    array(0.24131232)
    """
    ignore_index = python_int(ignore_index)  # numpy's too
    _check_options("cross_entropy", reduction, label_smoothing, ignore_index)
    label_smoothing = float(label_smoothing)  # numpy's too
    _check_logits(logits, labels)
    logp = build(LOG_SOFTMAX, (logits,), (1,))
    keep = None
    if ignore_index is not None:
        keep = labels - ignore_index  # non-zero where the label counts
        labels = build(WHERE, (keep, labels, scalar(0, labels.elem, labels.device)))
    terms = -build(LABEL_PICK, (logp, labels), ())
    if label_smoothing:
        spread = build(REDUCE_MEAN, (logp,), ((logp.rank - 1,), False))
        terms = terms * (1.0 - label_smoothing) - spread * label_smoothing
    if keep is None:
        return _reduce(terms, reduction)
    zero = scalar(0.0, logits.elem, logits.device)
    terms = build(WHERE, (keep, terms, zero))
    if reduction != "mean":
        return _reduce(terms, reduction)
    counted = build(WHERE, (keep, scalar(1.0, logits.elem, logits.device), zero))
    if logits.elem not in HALF_TAGS:
        return _reduce(terms, "sum") / _reduce(counted, "sum")
    # 16-bit: the sum and the count divided in Float32 (the sum alone may pass 65504)
    terms, counted = astype(terms, Float32), astype(counted, Float32)
    return astype(_reduce(terms, "sum") / _reduce(counted, "sum"), logits.elem)


# fmt: off
@overload
def binary_cross_entropy_with_logits(logits: TensorLike[FE, Dv, D], targets: TensorLike[FE, Dv, D], *, reduction: Reduced = "mean", pos_weight: TensorLike[FE, Dv, Any] | None = None) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def binary_cross_entropy_with_logits(logits: TensorLike[FE, Dv, D], targets: TensorLike[FE, Dv, D], *, reduction: Literal["none"], pos_weight: TensorLike[FE, Dv, Any] | None = None) -> TensorLike[FE, Dv, D]: ...
# fmt: on
def binary_cross_entropy_with_logits(
    logits: AnyTensor,
    targets: AnyTensor,
    *,
    reduction: str = "mean",
    pos_weight: AnyTensor | None = None,
) -> AnyTensor:
    """Binary cross-entropy of ``sigmoid(logits)`` against ``targets`` in [0, 1], computed
    from the logits without a sigmoid: ``max(x, 0) - x y + log(1 + e^-|x|)``, which is
    ``softplus(x) - x y`` (stable for any ``x``).

    ``pos_weight`` (PyTorch's): weights the positive term, ``(1 - y) x + (1 + (w - 1) y)
    softplus(-x)``; it broadcasts against the logits (one weight per class: shape ``(C,)``).
    ``reduction``: ``"mean"``, ``"sum"`` (Scalars) or ``"none"`` (the logits' shape).

    >>> x = tn.tensor([0.0, 3.0], tn.Float64, tn.CPU, tn.Dim1)
    >>> y = tn.tensor([1.0, 0.0], tn.Float64, tn.CPU, tn.Dim1)
    >>> ops.binary_cross_entropy_with_logits(x, y, reduction="none").numpy()
    array([0.69314718, 3.04858735])
    """
    name = "binary_cross_entropy_with_logits"
    _check_options(name, reduction, 0.0, None)
    _check_targets(logits, targets)
    if pos_weight is not None:
        require_data(name, "pos_weight", pos_weight)
    if pos_weight is None:
        terms = softplus(logits) - logits * targets
    else:
        weight = (pos_weight - 1.0) * targets + 1.0
        terms = (1.0 - targets) * logits + weight * softplus(-logits)
    return _reduce(terms, reduction)


def _reduce(terms: AnyTensor, reduction: str) -> AnyTensor:
    if reduction == "none":
        return terms
    if reduction == "mean" and 0 in terms.shape:
        raise ShapeError(
            message(
                "cannot take the mean loss of an empty batch (no positions to average).",
                [("positions", format_shape(terms.shape))],
                built_at=site(),
                hint="skip empty batches, or use reduction='sum' (0 for no positions).",
            )
        )
    every = (tuple(range(terms.rank)), False)
    return build(REDUCE_MEAN if reduction == "mean" else REDUCE_SUM, (terms,), every)


def _check_options(name: str, reduction: object, smoothing: object, ignore: object) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ParamError(
            message(
                f"{name}: reduction must be 'mean', 'sum' or 'none'.",
                [("received", repr(reduction)[:80])],
                hint=f"use {name}(..., reduction='mean') for the mean over positions.",
            )
        )
    if not number_operand(smoothing) or not 0.0 <= smoothing <= 1.0:  # type: ignore[operator]
        raise ParamError(
            message(
                f"{name}: label_smoothing must be a number in [0, 1].",
                [("received", repr(smoothing)[:80])],
                hint="use e.g. label_smoothing=0.1 (0 is no smoothing).",
            )
        )
    if ignore is not None and (not isinstance(ignore, int) or isinstance(ignore, bool)):
        raise ParamError(
            message(
                f"{name}: ignore_index must be an int or None.",
                [("received", repr(ignore)[:80])],
                hint="use e.g. ignore_index=-100 (PyTorch's padding label).",
            )
        )


def _check_logits(logits: object, labels: object) -> None:
    x = require_data("cross_entropy", "logits", logits)
    _check_float("cross_entropy", "logits", x)
    check_labels("cross_entropy", x, require_data("cross_entropy", "labels", labels), "logits")


def _check_targets(logits: object, targets: object) -> None:
    name = "binary_cross_entropy_with_logits"
    x = require_data(name, "logits", logits)
    y = require_data(name, "targets", targets)
    _check_float(name, "logits", x)
    _check_float(name, "targets", y)
    if x.shape != y.shape:
        raise ShapeError(
            message(
                f"cannot build {name}: logits and targets differ in shape.",
                [("logits", x.describe()), ("targets", y.describe())],
                built_at=site(),
                hint="give one target probability per logit (PyTorch requires the same).",
            )
        )


def _check_float(name: str, what: str, x: AnyTensor) -> None:
    if not issubclass(x.elem, FloatTag):
        raise ElemTypeError(
            message(
                f"cannot build {name}: the {what} are not a float tensor.",
                [(what, x.describe()), ("accepted", FLOAT_NAMES)],
                built_at=site(),
                hint=f"convert with ops.astype({what}, tn.Float32).",
            )
        )

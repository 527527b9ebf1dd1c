"""Losses: negative log-likelihood and its gradient (METANN.md §2.2, MetaNN master's form),
and the regression losses MSE, L1 and Huber.

``nll_loss(truth, pred) = -sum(truth * ln(pred)) / sum(truth)``: a Scalar. ``truth`` holds
the target weights (one-hot rows, or any non-negative weights) and ``pred`` probabilities of
the same shape (usually a softmax output). Dividing by ``sum(truth)`` makes the loss of a
batch of one-hot rows the mean per-sample loss. Terms whose truth is 0 count as 0 even where
``pred`` is 0 (the limit of t ln p), so an underflowed probability of a wrong class is no NaN.
"""

from __future__ import annotations

from math import inf
from typing import Literal, TypeAlias

from ..data.factories import scalar
from ..data.tensor import AnyTensor, TensorLike
from ..errors import ParamError, ShapeError, message
from ..tags import FE, D, DeviceTag, Dim0, Dv, ElemTag
from . import batching
from .activation import relu
from .arithmetic import abs as abs_
from .declare import OpDecl, Operand, Params
from .math import log, square
from .node import AnyOp, Cotangents, build
from .reduce import REDUCE_SUM, reduce_mean, reduce_sum
from .rules import (
    common_device,
    common_elem,
    number_operand,
    require_float,
    require_rank,
    site,
    tensor_operands,
)
from .select import WHERE
from .special import ZeroTensor

__all__ = [
    "NLL_LOSS",
    "NLL_LOSS_GRAD",
    "Reduction",
    "huber_loss",
    "l1_loss",
    "mse_loss",
    "nll_loss",
    "nll_loss_grad",
]

Reduction: TypeAlias = Literal["mean", "sum"]
"""How a regression loss combines its element-wise terms: their mean or their sum."""

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


def _check_pair(decl: OpDecl, operands: tuple[Operand, ...]) -> Inferred:
    tensors = tensor_operands(decl, operands)
    device = common_device(decl, tensors)
    elem = common_elem(decl, tensors)
    truth, pred = tensors[-2:]
    require_float(decl, pred)
    if truth.shape != pred.shape:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: truth and prediction differ in shape.",
                [("truth", truth.describe()), ("pred", pred.describe())],
                built_at=site(),
                hint="give one truth weight per predicted probability (e.g. one-hot rows).",
            )
        )
    return pred.shape, elem, device


def _infer_loss(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    _, elem, device = _check_pair(decl, operands)
    return (), elem, device


def _infer_grad(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    shape, elem, device = _check_pair(decl, operands)
    require_rank(decl, operands[0], at_most=0, what="grad")
    return shape, elem, device


# vjps, with L = -sum(t ln p) / S and S = sum(t). nll_loss_grad(g, t, p) = -g t / (S p) is
# linear in g; where t and p are both 0 it is 0 (as the loss counts 0 ln 0 as 0), and so are
# the second-order terms there.
def _nll_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    truth, pred = n.operands
    to_truth = g * (-log(pred) - n) / build(REDUCE_SUM, (truth,), (_all(truth), False))
    return to_truth, build(NLL_LOSS_GRAD, (g, truth, pred), ())


def _nll_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    g, truth, pred = n.operands
    total = build(REDUCE_SUM, (truth,), (_all(truth), False))
    per_g = build(NLL_LOSS_GRAD, (scalar(1.0, g.elem, g.device), truth, pred), ())  # -t / (S p)
    to_g = build(REDUCE_SUM, (c * per_g,), (_all(c), False))
    to_truth = (-g * c / pred - build(REDUCE_SUM, (c * n,), (_all(c), False))) / total
    to_pred = build(WHERE, (truth, -c * n / pred, ZeroTensor((), c.elem, c.device)))
    return to_g, to_truth, to_pred


def _all(x: AnyTensor) -> tuple[int, ...]:
    return tuple(range(x.rank))


NLL_LOSS = OpDecl(
    "nll_loss",
    2,
    _infer_loss,
    kind="reduction",
    vjp=_nll_vjp,
    batching=batching.by(batching.NLL_LOSS, "bb"),
    accumulates=True,
)
NLL_LOSS_GRAD = OpDecl("nll_loss_grad", 3, _infer_grad, vjp=_nll_grad_vjp, accumulates=True)


def nll_loss(truth: TensorLike[FE, Dv, D], pred: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, Dim0]:
    """-sum(truth * ln(pred)) / sum(truth), a Scalar; ``truth`` and ``pred`` share a shape.

    ``nll_loss(one_hot(batch, classes), softmax(logits))`` is the mean cross-entropy.
    """
    return build(NLL_LOSS, (truth, pred))


def nll_loss_grad(
    g: TensorLike[FE, Dv, Dim0], truth: TensorLike[FE, Dv, D], pred: TensorLike[FE, Dv, D]
) -> TensorLike[FE, Dv, D]:
    """Backward of nll_loss with respect to ``pred``: (-g / sum(truth)) * truth / pred.

    ``g`` is the Scalar gradient of the loss; the result is shaped like ``pred`` (0 where
    truth is 0).
    """
    return build(NLL_LOSS_GRAD, (g, truth, pred))


# The regression losses are composites of existing ops: lazy, differentiable by tn.grad, and
# fused by the evaluator into one element-wise pass and one reduction.


def _regression_terms(
    fn: str, truth: TensorLike[FE, Dv, D], pred: TensorLike[FE, Dv, D]
) -> TensorLike[FE, Dv, D]:
    """``pred - truth``, once the shapes are checked equal: broadcasting a (n,) truth
    against a (n, 1) prediction would silently compare every sample with every other."""
    given: tuple[object, object] = (truth, pred)  # checked at run time: callers may pass anything
    if not all(isinstance(x, TensorLike) for x in given) or truth.shape != pred.shape:
        shown = [x.describe() if isinstance(x, TensorLike) else type(x).__name__ for x in given]
        raise ShapeError(
            message(
                f"cannot build {fn}: truth and prediction differ in shape.",
                [("truth", shown[0]), ("pred", shown[1])],
                built_at=site(),
                hint="give one target per prediction, e.g. reshape (n,) targets to (n, 1).",
            )
        )
    return pred - truth


def _reduced(fn: str, terms: TensorLike[FE, Dv, D], reduction: object) -> TensorLike[FE, Dv, Dim0]:
    if reduction == "mean":
        return reduce_mean(terms)
    if reduction == "sum":
        return reduce_sum(terms)
    raise ParamError(
        message(
            f"{fn}: reduction must be 'mean' or 'sum'.",
            [("received", repr(reduction)[:80])],
            hint=f"use {fn}(truth, pred, reduction='mean').",
        )
    )


def mse_loss(
    truth: TensorLike[FE, Dv, D], pred: TensorLike[FE, Dv, D], *, reduction: Reduction = "mean"
) -> TensorLike[FE, Dv, Dim0]:
    """Mean (or sum) squared error ``(pred - truth)**2``, a Scalar; shapes must be equal."""
    return _reduced("mse_loss", square(_regression_terms("mse_loss", truth, pred)), reduction)


def l1_loss(
    truth: TensorLike[FE, Dv, D], pred: TensorLike[FE, Dv, D], *, reduction: Reduction = "mean"
) -> TensorLike[FE, Dv, Dim0]:
    """Mean (or sum) absolute error ``|pred - truth|``, a Scalar; shapes must be equal."""
    return _reduced("l1_loss", abs_(_regression_terms("l1_loss", truth, pred)), reduction)


def huber_loss(
    truth: TensorLike[FE, Dv, D],
    pred: TensorLike[FE, Dv, D],
    *,
    delta: float = 1.0,
    reduction: Reduction = "mean",
) -> TensorLike[FE, Dv, Dim0]:
    """Huber loss (PyTorch's ``HuberLoss``): per element ``d**2 / 2`` where ``|d| <= delta``,
    ``delta * (|d| - delta / 2)`` beyond, for ``d = pred - truth``; a Scalar.

    Written with ``q = min(|d|, delta) = |d| - relu(|d| - delta)`` as
    ``q**2 / 2 + delta * relu(|d| - delta)``: both pieces at once, no branch.
    """
    number: object = delta
    if not (number_operand(number) and 0 < number < inf):  # type: ignore[operator]
        raise ParamError(
            message(
                "huber_loss: delta must be a finite number > 0.",
                [("received", repr(delta)[:80])],
                hint="use e.g. huber_loss(truth, pred, delta=1.0).",
            )
        )
    size = abs_(_regression_terms("huber_loss", truth, pred))
    beyond = relu(size - delta)
    q = size - beyond
    return _reduced("huber_loss", square(q) * 0.5 + beyond * delta, reduction)

"""Softmax and log-softmax over the last ``k`` dims, and their gradient ops (METANN.md §2.2).

Each group of the last ``k`` dims is normalised independently: ``softmax(x, k=1)`` of a
(batch, classes) Matrix normalises every row; ``k=2`` of a Tensor3 normalises every matrix.
Both subtract the group maximum first, so large inputs never overflow.

``k`` is MetaNN's COUNT of trailing dims, not PyTorch's ``dim``: ``softmax(x, 2)`` of a Tensor3
normalises over its last two dims together, where ``torch.softmax(x, 2)`` normalises over the
last one. ``trailing_dims=`` is the same count under a name that says so.
"""

from __future__ import annotations

from ..data.tensor import AnyTensor, TensorLike
from ..errors import ParamError, RankError, ShapeError, message
from ..tags import FE, D, DeviceTag, Dv, ElemTag
from . import batching
from .declare import OpDecl, Operand, Params
from .math import exp
from .node import AnyOp, Cotangents, build
from .reduce import group_sums
from .rules import common_device, common_elem, python_int, require_float, site, tensor_operands

__all__ = [
    "LOG_SOFTMAX",
    "LOG_SOFTMAX_GRAD",
    "SOFTMAX",
    "SOFTMAX_GRAD",
    "log_softmax",
    "log_softmax_grad",
    "softmax",
    "softmax_grad",
]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


def check_group(decl: OpDecl, x: AnyTensor, k: object) -> None:
    """``k`` must be an int with 1 <= k <= rank of ``x``."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= x.rank:
        raise RankError(
            message(
                f"cannot build {decl.name}: k={k!r} is not a number of trailing dims of the operand.",
                [("operand", x.describe()), ("accepted", f"k from 1 to {x.rank} (the rank)")],
                built_at=site(),
                hint="k (trailing_dims=) counts the trailing dims normalised together, it is not "
                "PyTorch's dim: k=1 normalises the last dim.",
            )
        )


def _infer_unary(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = tensor_operands(decl, operands)
    require_float(decl, x)
    check_group(decl, x, params[0])
    return x.shape, x.elem, x.device


def _infer_grad(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    g, y = tensor_operands(decl, operands)
    device = common_device(decl, (g, y))
    elem = common_elem(decl, (g, y))
    require_float(decl, y)
    if g.shape != y.shape:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: the gradient and the forward output differ in shape.",
                [("grad", g.describe()), ("output", y.describe())],
                built_at=site(),
                hint="pass the gradient of exactly the value the forward op returned.",
            )
        )
    check_group(decl, y, params[0])
    return y.shape, elem, device


# vjps: both forwards differentiate through their output (the node). softmax_grad is
# y * (g - S(g y)) and log_softmax_grad is g - e^y S(g), with S the group sum spread back.
def _softmax_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (build(SOFTMAX_GRAD, (g, n), n.params),)


def _log_softmax_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (build(LOG_SOFTMAX_GRAD, (g, n), n.params),)


def _softmax_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    (g, y), (k,) = n.operands, n.params
    # the Jacobian diag(y) - y y^T is symmetric: the vjp for g is softmax_grad itself
    to_y = c * (g - group_sums(g * y, k)) - g * group_sums(c * y, k)
    return build(SOFTMAX_GRAD, (c, y), n.params), to_y


def _log_softmax_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    (g, y), (k,) = n.operands, n.params
    ce = c * exp(y)
    return c - group_sums(ce, k), -ce * group_sums(g, k)


# Over the last ``k`` dims: a group of stacked operands runs unchanged (one call).
SOFTMAX = OpDecl(
    "softmax",
    1,
    _infer_unary,
    params=("k",),
    vjp=_softmax_vjp,
    batching=batching.last_k,
    accumulates=True,
)
LOG_SOFTMAX = OpDecl(
    "log_softmax",
    1,
    _infer_unary,
    params=("k",),
    vjp=_log_softmax_vjp,
    batching=batching.last_k,
    accumulates=True,
)
SOFTMAX_GRAD = OpDecl(
    "softmax_grad",
    2,
    _infer_grad,
    params=("k",),
    vjp=_softmax_grad_vjp,
    batching=batching.last_k,
    accumulates=True,
)
LOG_SOFTMAX_GRAD = OpDecl(
    "log_softmax_grad",
    2,
    _infer_grad,
    params=("k",),
    vjp=_log_softmax_grad_vjp,
    accumulates=True,
    batching=batching.last_k,
)


def _count(op: str, k: int, trailing_dims: int | None) -> int:
    """The one count of trailing dims, given as ``k`` or as ``trailing_dims`` (numpy's ints
    as Python's)."""
    k, trailing_dims = python_int(k), python_int(trailing_dims)
    if trailing_dims is None:
        return k
    if k != 1 and k != trailing_dims:
        raise ParamError(
            message(
                f"{op}: k and trailing_dims are one parameter, given two values.",
                [("k", repr(k)), ("trailing_dims", repr(trailing_dims))],
                built_at=site(),
                hint=f"give the count of trailing dims once, e.g. {op}(x, trailing_dims=1).",
            )
        )
    return trailing_dims


def softmax(
    x: TensorLike[FE, Dv, D], k: int = 1, *, trailing_dims: int | None = None
) -> TensorLike[FE, Dv, D]:
    """e^x / sum(e^x) over each group of the last ``k`` dims together; same shape as ``x``.

    ``k`` (or ``trailing_dims=``, the same count by a clearer name) is MetaNN's NUMBER of
    trailing dims, not PyTorch's ``dim``: ``softmax(x, 2)`` of a Tensor3 normalises each
    (d1, d2) matrix as one group, not the last dim. The default, 1, is PyTorch's ``dim=-1``;
    for another single dim, move it last with ``ops.permute``.

    ``softmax(Matrix(batch, classes))`` gives one probability row per sample.
    Raises RankError unless 1 <= k <= rank.
    """
    return build(SOFTMAX, (x,), (_count("softmax", k, trailing_dims),))


def softmax_grad(
    g: TensorLike[FE, Dv, D], y: TensorLike[FE, Dv, D], k: int = 1
) -> TensorLike[FE, Dv, D]:
    """Backward of softmax from its OUTPUT ``y``: y * (g - sum(g * y)) per group.

    ``g`` (the gradient of the output) and ``y`` have the same shape, which is the result's.
    """
    return build(SOFTMAX_GRAD, (g, y), (k,))


def log_softmax(
    x: TensorLike[FE, Dv, D], k: int = 1, *, trailing_dims: int | None = None
) -> TensorLike[FE, Dv, D]:
    """x - log(sum(e^x)) over each group of the last ``k`` dims together; same shape as ``x``.

    ``k`` / ``trailing_dims=`` is a count of trailing dims, as ``softmax``'s (not PyTorch's
    ``dim``). Stabler than ``log(softmax(x))``: no log of an underflowed 0.
    """
    return build(LOG_SOFTMAX, (x,), (_count("log_softmax", k, trailing_dims),))


def log_softmax_grad(
    g: TensorLike[FE, Dv, D], y: TensorLike[FE, Dv, D], k: int = 1
) -> TensorLike[FE, Dv, D]:
    """Backward of log_softmax from its OUTPUT ``y``: g - e^y * sum(g) per group.

    ``e^y`` is the softmax of the forward input, so no forward value is recomputed.
    """
    return build(LOG_SOFTMAX_GRAD, (g, y), (k,))

"""Row lookup and its gradient: ``embedding(w, indices)`` and ``embedding_grad``.

* ``embedding(w, indices)``: ``w`` (num, dim) float, ``indices`` integer data of any rank
  up to 5 -> ``indices.shape + (dim,)``, row ``w[i]`` for each index ``i`` (``numpy.take``).
  An index outside ``0 .. num - 1`` is an ``IndexRangeError`` when the indices are read
  (evaluation; negative indices are not Python's from-the-end ones).
* ``embedding_grad(g, indices, num)``: the gradient with respect to ``w``: ``g``'s rows added
  at their indices into a (num, dim) zero matrix, so a repeated index accumulates.

Indices get no gradient (they are integers).
"""

from __future__ import annotations

from typing import Any

from ..data.tensor import AnyTensor, TensorLike
from ..errors import ElemTypeError, ShapeError, message
from ..tags import FE, DeviceTag, Dim2, Dv, ElemTag, FloatTag, IntTag
from .declare import OpDecl, Operand, Params
from .node import AnyOp, Cotangents, build
from .rules import common_device, python_int, require_float, require_rank, site, tensor_operands

__all__ = ["EMBEDDING", "EMBEDDING_GRAD", "embedding", "embedding_grad"]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


def _indices(decl: OpDecl, idx: AnyTensor) -> None:
    if not issubclass(idx.elem, IntTag):
        raise ElemTypeError(
            message(
                f"cannot build {decl.name}: the indices are not an integer tensor.",
                [("indices", idx.describe()), ("accepted", "Int64 (or Int32) elements")],
                built_at=site(),
                hint="pass row numbers as integers: tn.tensor(ids, tn.Int64, tn.CPU, dim).",
            )
        )
    require_rank(decl, idx, at_most=5, what="indices")


def _infer_embedding(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    w, idx = tensor_operands(decl, operands)
    device = common_device(decl, (w, idx))
    if issubclass(w.elem, IntTag) and issubclass(idx.elem, FloatTag):
        raise ElemTypeError(
            message(
                f"cannot build {decl.name}: the weight is integer data and the indices float.",
                [("weight", w.describe()), ("indices", idx.describe())],
                built_at=site(),
                hint="the arguments are swapped: embedding(weight, indices), the weight first.",
            )
        )
    require_float(decl, w)
    require_rank(decl, w, at_least=2, at_most=2, what="weight")
    _indices(decl, idx)
    return (*idx.shape, w.shape[1]), w.elem, device


def _infer_embedding_grad(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    g, idx = tensor_operands(decl, operands)
    device = common_device(decl, (g, idx))
    require_float(decl, g)
    _indices(decl, idx)
    (num,) = params
    if g.shape[:-1] != idx.shape or g.rank != idx.rank + 1:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: the gradient is not shaped indices.shape + (dim,).",
                [("grad", g.describe()), ("indices", idx.describe())],
                built_at=site(),
                hint="pass the gradient of embedding(w, indices)'s output.",
            )
        )
    if not isinstance(num, int) or isinstance(num, bool) or num < 1:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: num must be an int >= 1, got {num!r}.",
                built_at=site(),
                hint="pass the number of rows of the embedding weight.",
            )
        )
    return (num, g.shape[-1]), g.elem, device


def _embedding_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    w, idx = n.operands
    return build(EMBEDDING_GRAD, (g, idx), (w.shape[0],)), None


def _embedding_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    return build(EMBEDDING, (c, n.operands[1]), ()), None


EMBEDDING = OpDecl("embedding", 2, _infer_embedding, vjp=_embedding_vjp)
EMBEDDING_GRAD = OpDecl(
    "embedding_grad",
    2,
    _infer_embedding_grad,
    params=("num",),
    vjp=_embedding_grad_vjp,
    accumulates=True,  # rows of repeated indices are summed
)


def embedding(w: TensorLike[FE, Dv, Dim2], indices: TensorLike[Any, Dv, Any]) -> AnyTensor:
    """Rows of ``w`` (num, dim) picked by integer ``indices``: ``indices.shape + (dim,)``.

    >>> w = tensor(np.eye(3), Float32, CPU, Dim2)
    >>> embedding(w, tensor([2, 0, 2], Int64, CPU, Dim1)).shape
    (3, 3)
    """
    return build(EMBEDDING, (w, indices), ())


def embedding_grad(
    g: TensorLike[FE, Dv, Any], indices: TensorLike[Any, Dv, Any], num: int
) -> TensorLike[FE, Dv, Dim2]:
    """The gradient with respect to ``embedding``'s weight: (num, dim), ``g``'s rows added at
    their indices (repeated indices accumulate)."""
    return build(EMBEDDING_GRAD, (g, indices), (python_int(num),))

"""Structural ops: ``@`` / matmul, dot, slicing (``x[i]``).

``a @ b`` (``matmul``) follows numpy / PEP 465: the last two dims are matrices, the leading
dims are a batch and broadcast (numpy's rule), a 1-D operand is promoted to a matrix (a row
on the left, a column on the right) and its promoted dim removed from the result.
``dot(a, b, k)`` is MetaNN's contraction: the last ``k`` dims of ``a`` with the first ``k``
dims of ``b`` (result rank = rank a + rank b - 2k). The two agree whenever ``b`` has rank 1
or 2, and ``matmul`` builds a ``dot`` node there (one kernel, one set of evaluator rules);
with a batched ``b`` (rank >= 3) it builds a ``matmul`` node.
"""

from __future__ import annotations

import math
from typing import Literal, NoReturn, overload

from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..errors import RankError, ShapeError, TypedNNError, message
from ..shape import broadcast_shapes, format_shape
from ..tags import MAX_RANK, DeviceTag, Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6, Dv, E, ElemTag
from . import batching, layout
from .declare import OpDecl, Operand, Params
from .node import AnyOp, Cotangents, Operation, build
from .reduce import sum_to
from .rules import common_device, common_elem, python_int, site, tensor_operands

__all__ = [
    "DOT",
    "MATMUL",
    "build_matmul",
    "dot",
    "matmul",
]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]
_PLAIN = (Tensor, Operation)
"""The data kinds whose shape, element and device ``_infer_dot`` reads directly."""


def _infer_dot(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    a, b = operands
    (k,) = params
    # The common case first, by exact type (no ABC checks): tensors or nodes of one element
    # type and device whose contracted dims agree; anything else raises its detailed error
    # below. A forward builds its products at every call.
    if type(a) in _PLAIN and type(b) in _PLAIN and type(k) is int and k >= 1:
        sa, sb = a.shape, b.shape
        ra = len(sa)
        if ra >= k and sa[ra - k :] == sb[:k] and a.elem is b.elem and a.device is b.device:
            shape = sa[: ra - k] + sb[k:]
            if len(shape) <= MAX_RANK:
                return shape, a.elem, a.device
    return _infer_dot_checked(decl, operands, params)


def _infer_dot_checked(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    tensors = tensor_operands(decl, operands)
    device = common_device(decl, tensors)
    elem = common_elem(decl, tensors)
    a, b = tensors
    (k,) = params
    if not isinstance(k, int) or isinstance(k, bool) or k < 1 or a.rank < k or b.rank < k:
        raise RankError(
            message(
                f"cannot build dot: cannot contract {k!r} dim(s).",
                [("lhs", a.describe()), ("rhs", b.describe()), ("k", repr(k))],
                built_at=site(),
                hint="both operands need at least k >= 1 dims; use * for scalars.",
            )
        )
    left, right = a.shape[a.rank - k :], b.shape[:k]
    if left != right:
        raise ShapeError(
            message(
                "cannot build dot: contracted dims differ.",
                [
                    ("lhs", a.describe()),
                    (
                        "rhs",
                        f"{b.describe()}   <- contracted dims: lhs has {format_shape(left)}, "
                        f"rhs has {format_shape(right)}",
                    ),
                ],
                built_at=site(),
                hint=f"the first {k} dim(s) of rhs must equal the last {k} of lhs "
                f"{format_shape(left)}; transpose or reshape one side.",
            )
        )
    shape = a.shape[: a.rank - k] + b.shape[k:]
    if len(shape) > MAX_RANK:
        raise RankError(
            message(
                f"cannot build dot: the result would have rank {len(shape)}.",
                [("lhs", a.describe()), ("rhs", b.describe())],
                built_at=site(),
                hint=f"typed_nn data has at most {MAX_RANK} dims; reshape first.",
            )
        )
    return shape, elem, device


def _dot_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    # a is (A..., K...), b is (K..., B...), g is (A..., B...): contract g with b over B for a,
    # with a over A for b; with no B (or no A) dims the contraction is an outer product.
    a, b = n.operands
    (k,) = n.params
    rest_a, rest_b = a.rank - k, b.rank - k
    if rest_b:
        b_last = layout.permute(b, (*range(k, b.rank), *range(k)))  # (B..., K...)
        to_a = build(DOT, (g, b_last), (rest_b,))
    elif g.rank:
        to_a = _outer(g, b, a.shape)
    else:  # a scalar times b
        to_a = layout.expand(g, a.shape, tuple(range(rest_a, a.rank))) * b
    if rest_a:
        a_first = layout.permute(a, (*range(rest_a, a.rank), *range(rest_a)))  # (K..., A...)
        to_b = build(DOT, (a_first, g), (rest_a,))
    elif g.rank:
        to_b = _outer(a, g, b.shape)
    else:
        to_b = layout.expand(a, b.shape, tuple(range(k, b.rank))) * g
    return to_a, to_b


def _outer(u: AnyTensor, v: AnyTensor, shape: tuple[int, ...]) -> AnyTensor:
    """The outer product of ``u`` and ``v`` as ``shape`` (u's dims, then v's): a column times
    a row, one GEMM with no tiled copy of either side; per-sample outer products (a vector
    times a matrix, differentiated) then batch into one contraction."""
    column = layout.reshape_to(u, (math.prod(u.shape), 1))
    row = layout.reshape_to(v, (1, math.prod(v.shape)))
    return layout.reshape_to(build(DOT, (column, row), (1,)), shape)


DOT = OpDecl(
    "dot",
    2,
    _infer_dot,
    params=("k",),
    kind="contraction",
    vjp=_dot_vjp,
    batching=batching.dot,
    int_overflow=True,
    accumulates=True,
)


def _promoted(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The operand shapes as matrices (stacks of): a vector ``a`` is a row, a vector ``b``
    a column (PEP 465)."""
    return (a if len(a) > 1 else (1, *a)), (b if len(b) > 1 else (*b, 1))


def _infer_matmul(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    tensors = tensor_operands(decl, operands)
    device = common_device(decl, tensors)
    elem = common_elem(decl, tensors)
    a, b = tensors

    def fail(error: type[TypedNNError], text: str, hint: str) -> NoReturn:
        """Every matmul error lists both operands."""
        operands = [("lhs", a.describe()), ("rhs", b.describe())]
        raise error(message(text, operands, built_at=site(), hint=hint))

    if a.rank == 0 or b.rank == 0:
        fail(
            RankError,
            "cannot build matmul: an operand is a scalar.",
            "multiply by a scalar with *; @ needs operands of rank >= 1.",
        )
    pa, pb = _promoted(a.shape, b.shape)
    if pa[-1] != pb[-2]:
        fail(
            ShapeError,
            f"cannot build matmul: shapes {format_shape(a.shape)} and "
            f"{format_shape(b.shape)} are not aligned: {pa[-1]} (dim {a.rank - 1} of lhs) "
            f"!= {pb[-2]} (dim {max(b.rank - 2, 0)} of rhs).",
            "the last dim of lhs must equal the second-to-last of rhs (its only dim "
            "for a vector); for MetaNN's contraction over the first dims use ops.dot.",
        )
    batch = broadcast_shapes(pa[:-2], pb[:-2])
    if batch is None:
        fail(
            ShapeError,
            f"cannot build matmul: batch dims {format_shape(pa[:-2])} and "
            f"{format_shape(pb[:-2])} of shapes {format_shape(a.shape)} and "
            f"{format_shape(b.shape)} do not broadcast.",
            "leading dims are aligned from the right; each pair must be equal or 1.",
        )
    rows = (pa[-2],) if a.rank > 1 else ()
    cols = (pb[-1],) if b.rank > 1 else ()
    return (*batch, *rows, *cols), elem, device


def _swap_last(x: AnyTensor) -> AnyTensor:
    return layout.permute_any(x, (*range(x.rank - 2), x.rank - 1, x.rank - 2))


def _matmul_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    # With both sides as (stacks of) matrices: dA = g @ B^T, dB = A^T @ g, each summed over
    # the batch dims its operand was broadcast along and reshaped back from its promotion.
    a, b = n.operands
    pa, pb = _promoted(a.shape, b.shape)
    a2, b2 = layout.reshape_to(a, pa), layout.reshape_to(b, pb)
    batch = g.shape[: g.rank - (a.rank > 1) - (b.rank > 1)]
    g2 = layout.reshape_to(g, (*batch, pa[-2], pb[-1]))
    to_a = layout.reshape_to(sum_to(build_matmul(g2, _swap_last(b2)), pa), a.shape)
    to_b = layout.reshape_to(sum_to(build_matmul(_swap_last(a2), g2), pb), b.shape)
    return to_a, to_b


MATMUL = OpDecl(
    "matmul",
    2,
    _infer_matmul,
    kind="contraction",
    vjp=_matmul_vjp,
    batching=batching.matmul,
    int_overflow=True,
    accumulates=True,
    onnx="MatMul",  # numpy's matmul, as ONNX's: batched, vectors promoted
)


def build_matmul(a: object, b: object) -> AnyTensor:
    """The node of ``a @ b``: a ``dot`` where numpy's matmul and MetaNN's contraction agree
    (``b`` of rank 1 or 2, ``a`` of rank >= 1), else a ``matmul``."""
    if (
        isinstance(a, TensorLike)
        and isinstance(b, TensorLike)
        and 1 <= b.rank <= 2
        and a.rank >= 1
        and a.shape[-1] == b.shape[0]
        and a.elem is b.elem
        and a.device is b.device
    ):
        return build(DOT, (a, b), (1,))
    return build(MATMUL, (a, b), ())  # its checks name the problem in matmul's terms


# fmt: off
# --- BEGIN GENERATED DOT (scripts/gen_operators.py) ---
@overload
def dot(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim1], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim0]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim2], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim1]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim3], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim4], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim5], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim6], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim1], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim1]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim2], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim3], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim4], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim5], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim6], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim6]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim1], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim2], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim3], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim4], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim5], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim6]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim1], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim2], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim3], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim4], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim6]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim1], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim2], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim3], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim6]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim1], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim2], k: Literal[1] = 1) -> TensorLike[E, Dv, Dim6]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim2], k: Literal[2]) -> TensorLike[E, Dv, Dim0]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim3], k: Literal[2]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim4], k: Literal[2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim5], k: Literal[2]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim6], k: Literal[2]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim2], k: Literal[2]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim3], k: Literal[2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim4], k: Literal[2]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim5], k: Literal[2]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim6], k: Literal[2]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim2], k: Literal[2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim3], k: Literal[2]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim4], k: Literal[2]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim5], k: Literal[2]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim6], k: Literal[2]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim2], k: Literal[2]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim3], k: Literal[2]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim4], k: Literal[2]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim5], k: Literal[2]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim2], k: Literal[2]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim3], k: Literal[2]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim4], k: Literal[2]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim3], k: Literal[3]) -> TensorLike[E, Dv, Dim0]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim4], k: Literal[3]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim5], k: Literal[3]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim6], k: Literal[3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim3], k: Literal[3]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim4], k: Literal[3]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim5], k: Literal[3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim6], k: Literal[3]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim3], k: Literal[3]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim4], k: Literal[3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim5], k: Literal[3]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim6], k: Literal[3]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim3], k: Literal[3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim4], k: Literal[3]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim5], k: Literal[3]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim6], k: Literal[3]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim4], k: Literal[4]) -> TensorLike[E, Dv, Dim0]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim5], k: Literal[4]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim6], k: Literal[4]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim4], k: Literal[4]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim5], k: Literal[4]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim6], k: Literal[4]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim4], k: Literal[4]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim5], k: Literal[4]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim6], k: Literal[4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim5], k: Literal[5]) -> TensorLike[E, Dv, Dim0]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim6], k: Literal[5]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim5], k: Literal[5]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim6], k: Literal[5]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def dot(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim6], k: Literal[6]) -> TensorLike[E, Dv, Dim0]: ...
def dot(a: AnyTensor, b: AnyTensor, k: int = 1) -> AnyTensor:
    """Contract the last ``k`` dims of ``a`` with the first ``k`` dims of ``b``.

    ``dot(Matrix(4, 3), Matrix(3, 2))`` is a Matrix(4, 2); ``dot(Vector(3), Vector(3))`` a
    Scalar. Raises ShapeError when the contracted dims differ.
    """
    return build(DOT, (a, b), (python_int(k),))
# --- END GENERATED DOT ---
# fmt: on


# fmt: off
# --- BEGIN GENERATED MATMUL (scripts/gen_operators.py) ---
@overload
def matmul(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim1]) -> TensorLike[E, Dv, Dim0]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim1]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim1]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim1]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim1]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim1]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def matmul(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
def matmul(a: AnyTensor, b: AnyTensor) -> AnyTensor:
    """``a @ b`` as numpy's matmul (PEP 465): batched over the leading dims, which
    broadcast; a vector operand is promoted to a matrix and its promoted dim removed.

    ``matmul(Tensor(8, 4, 3), Tensor(8, 3, 5))`` is (8, 4, 5); ``matmul(Vector(3),
    Tensor(2, 3, 4))`` is (2, 4). Raises ShapeError when the matrix dims are not aligned
    or the batch dims do not broadcast.
    """
    return build_matmul(a, b)
# --- END GENERATED MATMUL ---
# fmt: on

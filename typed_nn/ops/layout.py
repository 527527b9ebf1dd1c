"""Layout ops: permute / permute_inv / transpose, reshape and tile (METANN.md §2.2).

* ``permute(x, order)`` is NumPy's ``transpose(x, order)``: ``out.shape[i] = x.shape[order[i]]``.
  ``order`` must be a permutation of ``range(rank)`` (a repeated axis is an error; MetaNN's
  check missed that). The identity permutation returns ``x`` itself.
* ``reshape(x, shape)`` keeps the elements in row-major order; one dim may be ``-1``
  (inferred). Evaluation is zero-copy: the result shares the evaluated input's memory.
* ``tile(x, shape, new_dims)`` repeats ``x`` to ``shape``: ``out[pos] = x[pos mod mute]``,
  where ``mute`` is ``x.shape`` with a 1 inserted at each new dim.
"""

from __future__ import annotations

from typing import Any, overload

from ..data.tensor import AnyTensor, TensorLike
from ..errors import RankError, ShapeError, message
from ..shape import deprecated, format_shape
from ..tags import MAX_RANK, D, DeviceTag, Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6, Dv, E, ElemTag
from . import batching
from .declare import OpDecl, Operand, Params
from .node import AnyOp, Cotangents, build
from .rules import python_ints, site, tensor_operands

__all__ = [
    "PERMUTE",
    "RESHAPE",
    "TILE",
    "TILE_GRAD",
    "expand",
    "mute_shape",
    "permute",
    "permute_any",
    "permute_inv",
    "permute_inv_any",
    "reshape",
    "reshape_to",
    "tile",
    "transpose",
]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


def _ints(op: str, x: AnyTensor, what: str, values: object) -> tuple[int, ...]:
    """``values`` as a tuple of ints (numpy's too), or a ShapeError naming the op and the
    argument."""
    ints = python_ints(values)
    if ints is None:
        raise ShapeError(
            message(
                f"cannot build {op}: {what} must be a tuple of ints, got {values!r}.",
                [("operand", x.describe())],
                built_at=site(),
                hint=f"write {what} as a tuple, e.g. (1, 0).",
            )
        )
    return ints


def _axes(op: str, x: AnyTensor, what: str, axes: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """Canonical (non-negative), distinct axes of a rank-``rank`` shape."""
    if any(not -rank <= a < rank for a in axes):
        raise ShapeError(
            message(
                f"cannot build {op}: {what} {axes} names an axis out of range.",
                [("operand", x.describe()), ("valid axes", f"{-rank} .. {rank - 1}")],
                built_at=site(),
                hint="count axes from 0, or from -1 for the last one.",
            )
        )
    canon = tuple(a + rank if a < 0 else a for a in axes)
    repeated = sorted({a for a in canon if canon.count(a) > 1})
    if repeated:
        raise ShapeError(
            message(
                f"cannot build {op}: {what} {axes} repeats axis {repeated[0]}.",
                [("operand", x.describe()), (what, str(axes))],
                built_at=site(),
                hint="name every axis exactly once.",
            )
        )
    return canon


_PERMUTATIONS: set[tuple[int, ...]] = set()
"""Orders already checked to be permutations (non-negative): a model's forward builds the same
few transposes at every call, and their check cost more than the rest of the node."""


def _order(op: str, x: AnyTensor, order: object) -> tuple[int, ...]:
    if type(order) is tuple and order in _PERMUTATIONS and len(order) == x.rank:
        return order
    axes = _axes(op, x, "order", _ints(op, x, "order", order), x.rank)
    if len(axes) != x.rank:
        raise ShapeError(
            message(
                f"cannot build {op}: order {tuple(axes)} is not a permutation of the "
                f"{x.rank} axes.",
                [("operand", x.describe()), ("order", f"{len(axes)} axes, need {x.rank}")],
                built_at=site(),
                hint=f"give each of the axes 0 .. {x.rank - 1} once.",
            )
        )
    if len(_PERMUTATIONS) < 1024:  # a few ranks' orders, bounded all the same
        _PERMUTATIONS.add(axes)
    return axes


def _infer_permute(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = tensor_operands(decl, operands)
    order = _order(decl.name, x, params[0])
    return tuple(x.shape[i] for i in order), x.elem, x.device


def _permute_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    order: tuple[int, ...] = n.params[0]
    return (permute_inv(g, order),)


PERMUTE = OpDecl(
    "permute",
    1,
    _infer_permute,
    params=("order",),
    kind="view",
    vjp=_permute_vjp,
    batching=batching.permute,
)


# ``order`` names every dim once, so its length is the rank: one overload per rank, then for each
# rank an overload for orders of any other known length (PEP 702: the checkers report the call,
# which raises ShapeError), then orders whose length is known only at run time, which are
# checked when the node is built (as are operands of a rank generic in ``D``).
# fmt: off
@overload
def permute(x: TensorLike[E, Dv, Dim0], order: tuple[()]) -> TensorLike[E, Dv, Dim0]: ...
@overload
def permute(x: TensorLike[E, Dv, Dim1], order: tuple[int]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def permute(x: TensorLike[E, Dv, Dim2], order: tuple[int, int]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def permute(x: TensorLike[E, Dv, Dim3], order: tuple[int, int, int]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def permute(x: TensorLike[E, Dv, Dim4], order: tuple[int, int, int, int]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def permute(x: TensorLike[E, Dv, Dim5], order: tuple[int, int, int, int, int]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def permute(x: TensorLike[E, Dv, Dim6], order: tuple[int, int, int, int, int, int]) -> TensorLike[E, Dv, Dim6]: ...
@overload
@deprecated("permute takes 0 axes for a rank-0 operand; this call raises ShapeError")
def permute(x: TensorLike[E, Dv, Dim0], order: tuple[int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim0]: ...
@overload
@deprecated("permute takes 1 axes for a rank-1 operand; this call raises ShapeError")
def permute(x: TensorLike[E, Dv, Dim1], order: tuple[()] | tuple[int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim1]: ...
@overload
@deprecated("permute takes 2 axes for a rank-2 operand; this call raises ShapeError")
def permute(x: TensorLike[E, Dv, Dim2], order: tuple[()] | tuple[int] | tuple[int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim2]: ...
@overload
@deprecated("permute takes 3 axes for a rank-3 operand; this call raises ShapeError")
def permute(x: TensorLike[E, Dv, Dim3], order: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim3]: ...
@overload
@deprecated("permute takes 4 axes for a rank-4 operand; this call raises ShapeError")
def permute(x: TensorLike[E, Dv, Dim4], order: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int] | tuple[int, int, int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim4]: ...
@overload
@deprecated("permute takes 5 axes for a rank-5 operand; this call raises ShapeError")
def permute(x: TensorLike[E, Dv, Dim5], order: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int] | tuple[int, int, int, int] | tuple[int, int, int, int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim5]: ...
@overload
@deprecated("permute takes 6 axes for a rank-6 operand; this call raises ShapeError")
def permute(x: TensorLike[E, Dv, Dim6], order: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int] | tuple[int, int, int, int] | tuple[int, int, int, int, int] | tuple[int, int, int, int, int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def permute(x: TensorLike[E, Dv, D], order: tuple[int, ...]) -> TensorLike[E, Dv, D]: ...
# fmt: on
def permute(x: TensorLike[E, Dv, D], order: tuple[int, ...]) -> TensorLike[E, Dv, D]:
    """Reorder the dims of ``x``: ``out.shape[i] == x.shape[order[i]]`` (numpy.transpose).

    ``order`` has one entry per dim of ``x``; an order of another length is a ShapeError,
    and statically (a tuple literal) a deprecation error in mypy and pyright.

    >>> permute(zeros((2, 3, 4), Float32, CPU), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return permute_any(x, order)


# fmt: off
@overload
def permute_inv(x: TensorLike[E, Dv, Dim0], order: tuple[()]) -> TensorLike[E, Dv, Dim0]: ...
@overload
def permute_inv(x: TensorLike[E, Dv, Dim1], order: tuple[int]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def permute_inv(x: TensorLike[E, Dv, Dim2], order: tuple[int, int]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def permute_inv(x: TensorLike[E, Dv, Dim3], order: tuple[int, int, int]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def permute_inv(x: TensorLike[E, Dv, Dim4], order: tuple[int, int, int, int]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def permute_inv(x: TensorLike[E, Dv, Dim5], order: tuple[int, int, int, int, int]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def permute_inv(x: TensorLike[E, Dv, Dim6], order: tuple[int, int, int, int, int, int]) -> TensorLike[E, Dv, Dim6]: ...
@overload
@deprecated("permute_inv takes 0 axes for a rank-0 operand; this call raises ShapeError")
def permute_inv(x: TensorLike[E, Dv, Dim0], order: tuple[int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim0]: ...
@overload
@deprecated("permute_inv takes 1 axes for a rank-1 operand; this call raises ShapeError")
def permute_inv(x: TensorLike[E, Dv, Dim1], order: tuple[()] | tuple[int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim1]: ...
@overload
@deprecated("permute_inv takes 2 axes for a rank-2 operand; this call raises ShapeError")
def permute_inv(x: TensorLike[E, Dv, Dim2], order: tuple[()] | tuple[int] | tuple[int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim2]: ...
@overload
@deprecated("permute_inv takes 3 axes for a rank-3 operand; this call raises ShapeError")
def permute_inv(x: TensorLike[E, Dv, Dim3], order: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim3]: ...
@overload
@deprecated("permute_inv takes 4 axes for a rank-4 operand; this call raises ShapeError")
def permute_inv(x: TensorLike[E, Dv, Dim4], order: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int] | tuple[int, int, int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim4]: ...
@overload
@deprecated("permute_inv takes 5 axes for a rank-5 operand; this call raises ShapeError")
def permute_inv(x: TensorLike[E, Dv, Dim5], order: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int] | tuple[int, int, int, int] | tuple[int, int, int, int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim5]: ...
@overload
@deprecated("permute_inv takes 6 axes for a rank-6 operand; this call raises ShapeError")
def permute_inv(x: TensorLike[E, Dv, Dim6], order: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int] | tuple[int, int, int, int] | tuple[int, int, int, int, int] | tuple[int, int, int, int, int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def permute_inv(x: TensorLike[E, Dv, D], order: tuple[int, ...]) -> TensorLike[E, Dv, D]: ...
# fmt: on
def permute_inv(x: TensorLike[E, Dv, D], order: tuple[int, ...]) -> TensorLike[E, Dv, D]:
    """Undo ``permute(., order)``: ``permute_inv(permute(y, order), order)`` has y's layout."""
    return permute_inv_any(x, order)


# ``permute`` and ``permute_inv`` without overloads, for package code whose operand's rank is
# known only at run time (as ``reshape_to``). The overloads are keyed on the operand's rank:
# for an operand of unknown rank, pyright matches one of the deprecated wrong-length ones.
def permute_any(x: AnyTensor, order: tuple[int, ...]) -> AnyTensor:
    """``permute(x, order)``, typed for an operand of any rank."""
    (t,) = tensor_operands(PERMUTE, (x,))
    canon = _order("permute", t, order)
    if canon == tuple(range(t.rank)):
        return x
    return build(PERMUTE, (x,), (canon,))


def permute_inv_any(x: AnyTensor, order: tuple[int, ...]) -> AnyTensor:
    """``permute_inv(x, order)``, typed for an operand of any rank."""
    (t,) = tensor_operands(PERMUTE, (x,))
    canon = _order("permute_inv", t, order)
    inverse = [0] * len(canon)
    for i, axis in enumerate(canon):
        inverse[axis] = i
    return permute_any(x, tuple(inverse))


def transpose(x: TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim2]:
    """The transpose of a matrix: ``(m, n) -> (n, m)`` (``permute(x, (1, 0))``)."""
    (t,) = tensor_operands(PERMUTE, (x,))
    if t.rank != 2:
        raise RankError(
            message(
                f"cannot build transpose: it needs a matrix, got rank {t.rank}.",
                [("operand", t.describe()), ("accepted", "rank 2")],
                built_at=site(),
                hint="use ops.permute(x, order) for other ranks.",
            )
        )
    return build(PERMUTE, (x,), ((1, 0),))


def _reshaped(x: AnyTensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` with its -1 inferred, checked against ``x``'s element count."""
    bad = [d for d in shape if d < -1]
    if bad or len(shape) > MAX_RANK:
        raise ShapeError(
            message(
                f"cannot build reshape: {format_shape(shape)} is not a valid target shape.",
                [("operand", x.describe()), ("target", format_shape(shape))],
                built_at=site(),
                hint=f"use at most {MAX_RANK} dims of sizes >= 0, and -1 for one inferred dim.",
            )
        )
    if shape.count(-1) > 1:
        raise ShapeError(
            message(
                "cannot build reshape: more than one -1 (too many inference positions).",
                [("operand", x.describe()), ("target", format_shape(shape))],
                built_at=site(),
                hint="write every size but one; -1 may stand for a single dim.",
            )
        )
    known = 1
    for d in shape:
        known *= d if d != -1 else 1
    if -1 in shape and known == 0:
        raise ShapeError(
            message(
                "cannot build reshape: -1 cannot be inferred next to a dim of size 0.",
                [("operand", x.describe()), ("target", format_shape(shape))],
                built_at=site(),
                hint="write every size explicitly.",
            )
        )
    if -1 in shape and x.size % known == 0:
        shape = tuple(x.size // known if d == -1 else d for d in shape)
        known = x.size
    if not shape and x.size != 1:
        raise ShapeError(
            message(
                f"cannot build reshape: cannot reshape {x.size} elements to a scalar.",
                [("operand", x.describe()), ("target", "()")],
                built_at=site(),
                hint="a scalar holds exactly one element; reduce first (ops.reduce_sum).",
            )
        )
    if known != x.size:
        raise ShapeError(
            message(
                "cannot build reshape: element count mismatch.",
                [
                    ("operand", f"{x.describe()}   <- {x.size} elements"),
                    ("target", f"{format_shape(shape)}   <- {known} elements"),
                ],
                built_at=site(),
                hint="the target sizes must multiply to the operand's element count.",
            )
        )
    return shape


def _infer_reshape(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = tensor_operands(decl, operands)
    return _reshaped(x, _ints(decl.name, x, "shape", params[0])), x.elem, x.device


def _reshape_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (reshape_to(g, n.operands[0].shape),)


RESHAPE = OpDecl(
    "reshape",
    1,
    _infer_reshape,
    params=("shape",),
    kind="view",
    vjp=_reshape_vjp,
    batching=batching.reshape,
)


def reshape_to(x: AnyTensor, shape: tuple[int, ...]) -> AnyTensor:
    """``x`` arranged as ``shape`` (same element count; no -1), or ``x`` when it has it."""
    return x if x.shape == shape else build(RESHAPE, (x,), (shape,))


# fmt: off
# --- BEGIN GENERATED RESHAPE (scripts/gen_op_overloads.py) ---
@overload
def reshape(x: TensorLike[E, Dv, D], shape: tuple[int, int]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reshape(x: TensorLike[E, Dv, D], shape: tuple[()]) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reshape(x: TensorLike[E, Dv, D], shape: tuple[int]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reshape(x: TensorLike[E, Dv, D], shape: tuple[int, int, int]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reshape(x: TensorLike[E, Dv, D], shape: tuple[int, int, int, int]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reshape(x: TensorLike[E, Dv, D], shape: tuple[int, int, int, int, int]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def reshape(x: TensorLike[E, Dv, D], shape: tuple[int, int, int, int, int, int]) -> TensorLike[E, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def reshape(x: TensorLike[E, Dv, D], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]]) -> TensorLike[E, Dv, Any]: ...
@overload
def reshape(x: TensorLike[E, Dv, D], shape: tuple[int, ...]) -> TensorLike[E, Dv, Any]: ...
# --- END GENERATED RESHAPE ---
# fmt: on
def reshape(x: AnyTensor, shape: tuple[int, ...]) -> AnyTensor:
    """The elements of ``x`` in row-major order, arranged as ``shape`` (one dim may be -1).

    The result's rank is ``len(shape)``. Evaluating it copies nothing: the result is a view
    of the evaluated ``x`` (unless ``x`` evaluates to a non-contiguous view, e.g. a permute).

    >>> reshape(zeros((2, 6), Float32, CPU), (3, -1)).shape
    (3, 4)
    """
    (t,) = tensor_operands(RESHAPE, (x,))
    target = _reshaped(t, _ints("reshape", t, "shape", shape))
    return build(RESHAPE, (x,), (target,))


def _new_dims(op: str, x: AnyTensor, shape: tuple[int, ...], new_dims: object) -> tuple[int, ...]:
    """The canonical, sorted result positions that ``x`` lacks (default: the leading ones)."""
    rank = len(shape)
    if rank < x.rank or rank > MAX_RANK:
        raise RankError(
            message(
                f"cannot build {op}: cannot tile rank {x.rank} to rank {rank}.",
                [("operand", x.describe()), ("target", format_shape(shape))],
                built_at=site(),
                hint=f"the target needs {x.rank} to {MAX_RANK} dims.",
            )
        )
    if new_dims is None:
        return tuple(range(rank - x.rank))
    dims = _axes(op, x, "new_dims", _ints(op, x, "new_dims", new_dims), rank)
    if len(dims) != rank - x.rank:
        raise ShapeError(
            message(
                f"cannot build {op}: {len(dims)} new dim(s) given, {rank - x.rank} needed.",
                [
                    ("operand", x.describe()),
                    ("target", format_shape(shape)),
                    ("new_dims", str(dims)),
                ],
                built_at=site(),
                hint="name one new dim per dim the target adds (rank(target) - rank(x)).",
            )
        )
    return tuple(sorted(dims))


def mute_shape(x_shape: tuple[int, ...], rank: int, new_dims: tuple[int, ...]) -> tuple[int, ...]:
    """``x_shape`` with a 1 inserted at each of ``new_dims`` (MetaNN's muteShape)."""
    kept = iter(x_shape)
    return tuple(1 if i in new_dims else next(kept) for i in range(rank))


def _infer_tile(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = tensor_operands(decl, operands)
    shape = _ints(decl.name, x, "shape", params[0])
    mute = mute_shape(x.shape, len(shape), _new_dims(decl.name, x, shape, params[1]))
    for i, (out, src) in enumerate(zip(shape, mute, strict=True)):
        if out < 0 or (out % src != 0 if src else out != 0):
            raise ShapeError(
                message(
                    f"cannot build {decl.name}: target dim {i} ({out}) is not a multiple of {src}.",
                    [("operand", x.describe()), ("target", format_shape(shape))],
                    built_at=site(),
                    hint="each target dim must be a multiple of the matching operand dim "
                    "(1 for a new dim).",
                )
            )
    return shape, x.elem, x.device


def _infer_tile_grad(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (g,) = tensor_operands(decl, operands)
    shape, new_dims = params
    assert isinstance(shape, tuple)
    assert isinstance(new_dims, tuple)
    # built by tile's vjp only, from a valid tile node: g's shape tiles ``shape``
    assert all(
        (out % src == 0 if src else out == 0)
        for out, src in zip(g.shape, mute_shape(shape, g.rank, new_dims), strict=True)
    )
    return shape, g.elem, g.device


# tile and tile_grad are each other's adjoints: tile repeats, tile_grad sums the repeats.
def _tile_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (build(TILE_GRAD, (g,), (n.operands[0].shape, n.params[1])),)


def _tile_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    return (build(TILE, (c,), (n.operands[0].shape, n.params[1])),)


TILE = OpDecl("tile", 1, _infer_tile, params=("shape", "new_dims"), vjp=_tile_vjp)
TILE_GRAD = OpDecl(
    "tile_grad",
    1,
    _infer_tile_grad,
    params=("shape", "new_dims"),
    vjp=_tile_grad_vjp,
    accumulates=True,  # sums over the repeats
)
"""``tile_grad(g, shape, new_dims)``: the sum of ``g`` over the repeats of
``tile(x, g.shape, new_dims)``, shaped like ``x`` (``shape``); tile's vjp."""


def expand(x: AnyTensor, shape: tuple[int, ...], new_dims: tuple[int, ...]) -> AnyTensor:
    """``x`` repeated along the result dims ``new_dims`` (canonical, sorted) to ``shape``;
    ``x``'s shape must be ``shape`` without them. ``x`` itself when there are none."""
    return build(TILE, (x,), (shape, new_dims)) if new_dims else x


# fmt: off
# --- BEGIN GENERATED TILE (scripts/gen_op_overloads.py) ---
@overload
def tile(x: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2], shape: tuple[int, int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Dim2]: ...
@overload
def tile(x: TensorLike[E, Dv, Dim0], shape: tuple[()], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Dim0]: ...
@overload
def tile(x: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1], shape: tuple[int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Dim1]: ...
@overload
def tile(x: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3], shape: tuple[int, int, int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Dim3]: ...
@overload
def tile(x: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4], shape: tuple[int, int, int, int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Dim4]: ...
@overload
def tile(x: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5], shape: tuple[int, int, int, int, int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Dim5]: ...
@overload
def tile(x: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5] | TensorLike[E, Dv, Dim6], shape: tuple[int, int, int, int, int, int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Dim6]: ...
@overload
@deprecated("tile cannot lower the rank of a rank-1 operand; this call raises")
def tile(x: TensorLike[E, Dv, Dim1], shape: tuple[()], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Any]: ...
@overload
@deprecated("tile cannot lower the rank of a rank-2 operand; this call raises")
def tile(x: TensorLike[E, Dv, Dim2], shape: tuple[()] | tuple[int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Any]: ...
@overload
@deprecated("tile cannot lower the rank of a rank-3 operand; this call raises")
def tile(x: TensorLike[E, Dv, Dim3], shape: tuple[()] | tuple[int] | tuple[int, int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Any]: ...
@overload
@deprecated("tile cannot lower the rank of a rank-4 operand; this call raises")
def tile(x: TensorLike[E, Dv, Dim4], shape: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Any]: ...
@overload
@deprecated("tile cannot lower the rank of a rank-5 operand; this call raises")
def tile(x: TensorLike[E, Dv, Dim5], shape: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int] | tuple[int, int, int, int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Any]: ...
@overload
@deprecated("tile cannot lower the rank of a rank-6 operand; this call raises")
def tile(x: TensorLike[E, Dv, Dim6], shape: tuple[()] | tuple[int] | tuple[int, int] | tuple[int, int, int] | tuple[int, int, int, int] | tuple[int, int, int, int, int], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Any]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def tile(x: TensorLike[E, Dv, D], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Any]: ...
@overload
def tile(x: TensorLike[E, Dv, D], shape: tuple[int, ...], new_dims: tuple[int, ...] | None = None) -> TensorLike[E, Dv, Any]: ...
# --- END GENERATED TILE ---
# fmt: on
def tile(x: AnyTensor, shape: tuple[int, ...], new_dims: object = None) -> AnyTensor:
    """Repeat ``x`` to ``shape`` (MetaNN Tile): ``out[pos] = x[pos mod mute]``.

    ``new_dims`` are the result positions that ``x`` lacks (default: the leading ones); the
    other result dims must be multiples of ``x``'s dims, in order.

    >>> v = tensor([1.0, 2.0], Float32, CPU, Dim1)
    >>> tile(v, (2, 4)).numpy()              # 2 rows; the vector twice along each row
    array([[1., 2., 1., 2.],
           [1., 2., 1., 2.]], dtype=float32)
    >>> tile(v, (2, 3), new_dims=(1,)).numpy()   # v runs down the rows instead
    array([[1., 1., 1.],
           [2., 2., 2.]], dtype=float32)
    """
    (t,) = tensor_operands(TILE, (x,))
    target = _ints("tile", t, "shape", shape)
    return build(TILE, (x,), (target, _new_dims("tile", t, target, new_dims)))

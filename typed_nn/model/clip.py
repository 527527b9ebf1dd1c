"""Gradient clipping by global norm (PyTorch's ``clip_grad_norm_``, lazily).

>>> grads = clip_by_global_norm(tn.grad(loss, params), max_norm=1.0)

Every gradient is scaled by ``max_norm / max(norm, max_norm)``, with ``norm`` the L2 norm of
all of them together: nothing changes below ``max_norm``, and above it the direction is kept
and the norm becomes ``max_norm``. The results are lazy expressions (in a compiled step,
``max_norm`` may be a run-time float argument).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

from .. import ops
from ..data.tensor import AnyTensor, TensorLike
from ..errors import DeviceError, ElemTypeError, ParamError, message
from ..tags import FE, D, Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6, Dv, FloatTag

__all__ = ["clip_by_global_norm", "global_norm"]


def global_norm(grads: Sequence[TensorLike[FE, Dv, Any]]) -> TensorLike[FE, Dv, Dim0]:
    """The L2 norm of all of ``grads`` together (a lazy Scalar)."""
    items = _checked(grads)
    total: AnyTensor = ops.reduce_sum(ops.square(items[0]))
    for g in items[1:]:
        total = total + ops.reduce_sum(ops.square(g))
    norm: TensorLike[FE, Dv, Dim0] = ops.sqrt(total)
    return norm


# One rank keeps it: an overload per concrete rank (mypy would solve a generic D from an
# assignment's declared type, fail, and take the Any-rank overload), then generic, then mixed.
@overload
def clip_by_global_norm(
    grads: Sequence[TensorLike[FE, Dv, Dim0]], max_norm: float
) -> list[TensorLike[FE, Dv, Dim0]]: ...
@overload
def clip_by_global_norm(
    grads: Sequence[TensorLike[FE, Dv, Dim1]], max_norm: float
) -> list[TensorLike[FE, Dv, Dim1]]: ...
@overload
def clip_by_global_norm(
    grads: Sequence[TensorLike[FE, Dv, Dim2]], max_norm: float
) -> list[TensorLike[FE, Dv, Dim2]]: ...
@overload
def clip_by_global_norm(
    grads: Sequence[TensorLike[FE, Dv, Dim3]], max_norm: float
) -> list[TensorLike[FE, Dv, Dim3]]: ...
@overload
def clip_by_global_norm(
    grads: Sequence[TensorLike[FE, Dv, Dim4]], max_norm: float
) -> list[TensorLike[FE, Dv, Dim4]]: ...
@overload
def clip_by_global_norm(
    grads: Sequence[TensorLike[FE, Dv, Dim5]], max_norm: float
) -> list[TensorLike[FE, Dv, Dim5]]: ...
@overload
def clip_by_global_norm(
    grads: Sequence[TensorLike[FE, Dv, Dim6]], max_norm: float
) -> list[TensorLike[FE, Dv, Dim6]]: ...
@overload
def clip_by_global_norm(
    grads: Sequence[TensorLike[FE, Dv, D]], max_norm: float
) -> list[TensorLike[FE, Dv, D]]: ...
@overload
def clip_by_global_norm(
    grads: Sequence[TensorLike[FE, Dv, Any]], max_norm: float
) -> list[TensorLike[FE, Dv, Any]]: ...
def clip_by_global_norm(
    grads: Sequence[TensorLike[FE, Dv, Any]], max_norm: float
) -> list[TensorLike[FE, Dv, Any]]:
    """``grads`` scaled together so that their global norm is at most ``max_norm``."""
    if not _positive(max_norm):
        raise ParamError(
            message(
                "clip_by_global_norm: max_norm must be a number > 0.",
                [("declared", "a number > 0"), ("received", repr(max_norm)[:80])],
                hint="e.g. clip_by_global_norm(grads, max_norm=1.0).",
            )
        )
    scale = max_norm / ops.maximum(global_norm(grads), max_norm)
    return [g * scale for g in _checked(grads)]


def _positive(value: object) -> bool:
    """A number > 0 (bools are not numbers here). A float argument of a traced function is
    checked by its value at trace time (Python arithmetic on it is an error there)."""
    if isinstance(value, float):
        return float.__float__(value) > 0
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _checked(grads: object) -> list[AnyTensor]:
    given = list(grads) if isinstance(grads, Sequence) and not isinstance(grads, str) else []
    items = [g for g in given if isinstance(g, TensorLike)]
    if not items or len(items) != len(given):
        raise ParamError(
            message(
                "gradient clipping needs a non-empty sequence of gradients (typed_nn data).",
                [("received", repr(grads)[:80])],
                hint="pass the gradients, e.g. clip_by_global_norm(tn.grad(loss, params), 1.0).",
            )
        )
    first = items[0]
    for g in items:
        if not issubclass(g.elem, FloatTag) or g.elem is not first.elem:
            raise ElemTypeError(
                message(
                    "gradient clipping needs float gradients of one element type.",
                    [("first", first.describe()), ("received", g.describe())],
                    hint="clip gradients of each element type separately.",
                )
            )
        if g.device is not first.device:
            raise DeviceError(
                message(
                    "gradient clipping needs the gradients on one device.",
                    [("first", first.describe()), ("received", g.describe())],
                    hint="clip the gradients of each device separately.",
                )
            )
    return items

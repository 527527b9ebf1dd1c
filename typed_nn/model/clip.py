"""Gradient clipping by global norm (PyTorch's ``clip_grad_norm_``, lazily).

>>> grads = clip_by_global_norm(tn.grad(loss, model), max_norm=1.0)   # a tree of model's type
>>> gw, gb = clip_by_global_norm(tn.grad(loss, [w, b]), max_norm=1.0)  # or a sequence

Every gradient is scaled by ``max_norm / max(norm, max_norm)``, with ``norm`` the L2 norm of
all of them together (a module's tree: its parameters' gradients, each shared one once, as
PyTorch counts a tied weight; its buffers are kept as they are): nothing changes below ``max_norm``, and above it the direction is kept
and the norm becomes ``max_norm``. The results are lazy expressions (in a compiled step,
``max_norm`` may be a run-time float argument).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeVar, overload

from .. import ops
from ..data.module import Module, parameters, tree_map
from ..data.tensor import AnyTensor, TensorLike
from ..errors import DeviceError, ElemTypeError, ParamError, message
from ..layers.param_cells import as_real
from ..tags import FE, D, Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6, Dv, FloatTag
from ..tracing import check_each_call

__all__ = ["clip_by_global_norm", "global_norm"]

M = TypeVar("M", bound=Module)
"""A module's type: its gradient tree (``tn.grad(loss, model)``) has it too."""


# A module's tree says nothing statically of its leaves' element and device (a Module is not
# generic in them), so its norm's tags are Any; a sequence's are its items'.
@overload
def global_norm(grads: Module) -> TensorLike[Any, Any, Dim0]: ...
@overload
def global_norm(grads: Sequence[TensorLike[FE, Dv, Any]]) -> TensorLike[FE, Dv, Dim0]: ...
def global_norm(grads: Module | Sequence[AnyTensor]) -> AnyTensor:
    """The L2 norm of all of ``grads`` together (a lazy Scalar): a sequence of gradients or
    a module's gradient tree (``tn.grad(loss, model)``)."""
    return _norm(_checked(grads))


def _norm(items: list[AnyTensor]) -> AnyTensor:
    total: AnyTensor = ops.reduce_sum(ops.square(items[0]))
    for g in items[1:]:
        total = total + ops.reduce_sum(ops.square(g))
    return ops.sqrt(total)


# A module's gradient tree comes back as its own type. For a sequence, one rank keeps it: an
# overload per concrete rank (mypy would solve a generic D from an assignment's declared type,
# fail, and take the Any-rank overload), then generic, then mixed.
@overload
def clip_by_global_norm(grads: M, max_norm: float) -> M: ...
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
    grads: Module | Sequence[AnyTensor], max_norm: float
) -> Module | list[AnyTensor]:
    """``grads`` scaled together so that their global norm is at most ``max_norm``: a list
    for a sequence, for a module's gradient tree a tree of the same type."""
    check_each_call(max_norm, _check_max_norm)
    items = _checked(grads)
    # 1 / max(norm / max_norm, 1): the norm scaled to max_norm above it, and with max_norm
    # inf (no clipping, as PyTorch's) a scale of 1, where max_norm / max(norm, inf) is NaN
    scale = 1.0 / ops.maximum(_norm(items) / max_norm, 1.0)
    if isinstance(grads, Module):
        scaled = {id(g): g * scale for g in items}  # a shared gradient stays shared
        return tree_map(lambda g: scaled[id(g)], grads)
    return [g * scale for g in items]


def _check_max_norm(value: object) -> None:
    """A number > 0, inf included (bools are not numbers here); checked at every call of a
    compiled step where it is a float argument."""
    number = as_real(value) if value != math.inf else math.inf
    if number is None or not number > 0:
        raise ParamError(
            message(
                "clip_by_global_norm: max_norm must be a number > 0.",
                [("declared", "a number > 0 (inf: no clipping)"), ("received", repr(value)[:80])],
                hint="e.g. clip_by_global_norm(grads, max_norm=1.0).",
            )
        )


def _checked(grads: object) -> list[AnyTensor]:
    """The gradients to clip: a module's parameters (each shared one once), or the items of a
    sequence of typed_nn data."""
    if isinstance(grads, Module):
        items = parameters(grads)
        if not items:
            raise ParamError(
                message(
                    "gradient clipping needs gradients: the module has no parameters.",
                    [("received", f"{type(grads).__name__}(...)   <- no parameters")],
                    hint="pass tn.grad(loss, model) of the model you train.",
                )
            )
    else:
        given = list(grads) if isinstance(grads, Sequence) and not isinstance(grads, str) else []
        items = [g for g in given if isinstance(g, TensorLike)]
        if not items or len(items) != len(given):
            raise ParamError(
                message(
                    "gradient clipping needs a non-empty sequence of gradients (typed_nn data) "
                    "or a module's gradient tree.",
                    [("received", _brief(grads, given))],
                    hint="pass what tn.grad returned: clip_by_global_norm(tn.grad(loss, model), "
                    "1.0) or clip_by_global_norm(tn.grad(loss, [w, b]), 1.0).",
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


def _brief(grads: object, given: list[object]) -> str:
    """What was passed, in one line: a sequence by its first item that is not data."""
    if isinstance(grads, TensorLike):
        return f"{grads.describe()}   <- one tensor: wrap it, [g]"
    if not given:
        text = repr(grads)
        shown = text if len(text) <= 60 else f"{text[:50]}..."
        return f"{type(grads).__name__} {shown}"
    i, item = next((i, v) for i, v in enumerate(given) if not isinstance(v, TensorLike))
    text = repr(item)
    shown = text if len(text) <= 40 else f"{text[:30]}..."
    return f"{type(grads).__name__} of {len(given)}; item {i}: {type(item).__name__} {shown}"

"""``dropout_mask``: a random keep-mask whose randomness is a function of a state tensor.

``dropout_mask(state, shape, keep, elem, stream)`` is ``shape`` data of element ``elem``
holding ``1 / keep`` with probability ``keep`` and 0 otherwise (inverted dropout: the mean
is kept). Its values are a pure function of the Int64 ``state`` tensor ``[seed, counter]``
and the Python int ``stream`` (a Philox counter-based generator keyed by ``(seed, stream)``,
started at ``counter``): evaluating the same node twice gives the same mask (a backward reads
the forward's mask), and a new ``counter`` value gives a new one. The state is an operand,
not a parameter, so a ``tn.compile``\\ d step that assigns ``counter + 1`` draws a fresh mask
at every replay (a parameter would be frozen into the trace).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.tensor import AnyTensor, TensorLike
from ..errors import ElemTypeError, ShapeError, message
from ..shape import check_shape
from ..tags import DeviceTag, Dv, ElemTag, FloatTag, Int64
from .declare import NOT_DIFFERENTIABLE, OpDecl, Operand, Params
from .node import build
from .rules import site, tensor_operands

__all__ = ["DROPOUT_MASK", "dropout_mask"]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


def _infer_mask(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (state,) = tensor_operands(decl, operands)
    shape, keep, elem, stream = params
    if state.elem is not Int64 or state.shape != (2,):
        raise ElemTypeError(
            message(
                f"cannot build {decl.name}: the state is not an Int64 vector [seed, counter].",
                [("state", state.describe())],
                built_at=site(),
                hint="tn.tensor([seed, 0], tn.Int64, tn.CPU, tn.Dim1).",
            )
        )
    if not (isinstance(elem, type) and issubclass(elem, FloatTag)):
        raise ElemTypeError(
            message(
                f"cannot build {decl.name}: the mask element must be Float32 or Float64.",
                [("elem", repr(elem))],
                built_at=site(),
                hint="pass the element of the data the mask multiplies.",
            )
        )
    if not (isinstance(keep, float) and 0.0 < keep <= 1.0) or not isinstance(stream, int):
        raise ShapeError(
            message(
                f"cannot build {decl.name}: keep must be a float in (0, 1] and stream an int.",
                [("keep", repr(keep)), ("stream", repr(stream))],
                built_at=site(),
                hint="keep = 1 - dropout rate.",
            )
        )
    return tuple(shape), elem, state.device


DROPOUT_MASK = OpDecl(
    "dropout_mask",
    1,
    _infer_mask,
    params=("shape", "keep", "elem", "stream"),
    vjp=NOT_DIFFERENTIABLE,
)


def dropout_mask(
    state: TensorLike[Int64, Dv, Any],
    shape: tuple[int, ...],
    keep: float,
    elem: type[FloatTag],
    stream: int = 0,
) -> AnyTensor:
    """A ``shape`` mask of ``1 / keep`` (probability ``keep``) and 0, drawn from ``state``
    ``[seed, counter]`` and ``stream`` (see the module)."""
    given: object = keep  # callers without a type checker may pass anything
    number = float(given) if isinstance(given, int | float | np.integer | np.floating) else given
    shape = check_shape(shape, "dropout_mask")
    return build(DROPOUT_MASK, (state,), (shape, number, elem, stream))

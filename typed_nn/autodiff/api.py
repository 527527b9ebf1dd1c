"""``tn.grad`` and ``tn.vjp``: gradients of lazy expressions, as lazy expressions.

``grad(y, wrt)`` differentiates a scalar float expression ``y`` with respect to data in its
graph (usually parameter tensors); ``vjp(ys, wrt, cotangents)`` pulls cotangents of
non-scalar outputs back. Both return the gradients in the structure of ``wrt`` (one value, a
tuple, a list or a dict) with the static types of ``wrt``'s entries, and evaluate nothing:
the results are graphs that the evaluator fuses and shares like any other, and that can be
differentiated again. An entry of ``wrt`` that the outputs do not reach gets a ZeroTensor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias, TypeVar, overload

import numpy as np

from ..data.factories import scalar
from ..data.module import Module, mark_gradient_of, named_parameters, tree_map
from ..data.tensor import AnyTensor, TensorLike
from ..errors import DeviceError, ElemTypeError, OperandError, ShapeError, message
from ..ops.layout import RESHAPE
from ..ops.node import build, format_site, user_site
from ..ops.rules import describe
from ..ops.special import zeros_like
from ..tags import (
    FE,
    FLOAT_NAMES,
    D,
    DeviceTag,
    Dim0,
    DimTag,
    Dv,
    Float32,
    Float64,
    FloatTag,
    tag_name,
)
from .reverse import backpropagate

__all__ = ["FloatData", "grad", "vjp"]


# Float data of any device and rank: an entry of a wrt that mixes elements or devices. Not a
# Protocol on ``elem``: pyright 1.1.414 memoises a failed protocol match of a generic class
# (microsoft/pyright#11644) and then rejects valid mixed tuples.
FloatData: TypeAlias = TensorLike[Float32, Any, Any] | TensorLike[Float64, Any, Any]


# The overloads of grad and vjp are written by scripts/gen_op_overloads.py: one per structure
# of wrt (see wrt_kinds there), and for vjp one per structure of wrt and of the outputs. A
# tuple gives a tuple and another sequence a list, which mypy and pyright call overlapping.
# fmt: off
# --- BEGIN GENERATED AUTODIFF TYPEVARS (scripts/gen_op_overloads.py) ---
E1 = TypeVar("E1", bound=FloatTag)
V1 = TypeVar("V1", bound=DeviceTag)
D1 = TypeVar("D1", bound=DimTag)
E2 = TypeVar("E2", bound=FloatTag)
V2 = TypeVar("V2", bound=DeviceTag)
D2 = TypeVar("D2", bound=DimTag)
E3 = TypeVar("E3", bound=FloatTag)
V3 = TypeVar("V3", bound=DeviceTag)
D3 = TypeVar("D3", bound=DimTag)
E4 = TypeVar("E4", bound=FloatTag)
V4 = TypeVar("V4", bound=DeviceTag)
D4 = TypeVar("D4", bound=DimTag)
E5 = TypeVar("E5", bound=FloatTag)
V5 = TypeVar("V5", bound=DeviceTag)
D5 = TypeVar("D5", bound=DimTag)
E6 = TypeVar("E6", bound=FloatTag)
V6 = TypeVar("V6", bound=DeviceTag)
D6 = TypeVar("D6", bound=DimTag)
F1 = TypeVar("F1", bound=FloatTag)
W1 = TypeVar("W1", bound=DeviceTag)
R1 = TypeVar("R1", bound=DimTag)
F2 = TypeVar("F2", bound=FloatTag)
W2 = TypeVar("W2", bound=DeviceTag)
R2 = TypeVar("R2", bound=DimTag)
F3 = TypeVar("F3", bound=FloatTag)
W3 = TypeVar("W3", bound=DeviceTag)
R3 = TypeVar("R3", bound=DimTag)
K = TypeVar("K")
Mod = TypeVar("Mod", bound=Module)
# --- END GENERATED AUTODIFF TYPEVARS ---


# --- BEGIN GENERATED GRAD (scripts/gen_op_overloads.py) ---
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: Mod) -> Mod: ...
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: TensorLike[E1, V1, D1]) -> TensorLike[E1, V1, D1]: ...
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: tuple[TensorLike[E1, V1, D1]]) -> tuple[TensorLike[E1, V1, D1]]: ...  # type: ignore[overload-overlap]
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]]: ...  # type: ignore[overload-overlap]
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]]: ...  # type: ignore[overload-overlap]
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]]: ...  # type: ignore[overload-overlap]
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]]: ...  # type: ignore[overload-overlap]
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]]: ...  # type: ignore[overload-overlap]
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: tuple[TensorLike[E1, V1, D1], ...]) -> tuple[TensorLike[E1, V1, D1], ...]: ...  # type: ignore[overload-overlap]
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: tuple[TensorLike[E1, V1, Any], ...]) -> tuple[TensorLike[E1, V1, Any], ...]: ...  # type: ignore[overload-overlap]
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: tuple[FloatData, ...]) -> tuple[AnyTensor, ...]: ...  # type: ignore[overload-overlap]
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: Sequence[TensorLike[E1, V1, D1]]) -> list[TensorLike[E1, V1, D1]]: ...
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: Sequence[TensorLike[E1, V1, Any]]) -> list[TensorLike[E1, V1, Any]]: ...
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: Sequence[FloatData]) -> list[AnyTensor]: ...
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: Mapping[K, TensorLike[E1, V1, D1]]) -> dict[K, TensorLike[E1, V1, D1]]: ...
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: Mapping[K, TensorLike[E1, V1, Any]]) -> dict[K, TensorLike[E1, V1, Any]]: ...
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: Mapping[K, FloatData]) -> dict[K, AnyTensor]: ...
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: list[object]) -> list[AnyTensor]: ...
@overload
def grad(y: TensorLike[FE, Dv, Dim0], wrt: dict[K, object]) -> dict[K, AnyTensor]: ...
# --- END GENERATED GRAD ---
# fmt: on
def grad(y: object, wrt: object) -> object:
    """The gradient of the scalar ``y`` with respect to ``wrt``, as lazy expressions.

    ``wrt``: data in ``y``'s graph (usually parameter tensors), or a tuple, list or dict of
    them; the result has the same structure, each gradient shaped like its input. Inputs
    ``y`` does not reach get a ZeroTensor; paths through ops with no derivative (argmax,
    sign, a where condition) contribute zero. Nothing is evaluated.

    Statically each gradient is a ``TensorLike`` with its input's tags (tuples of up to six
    typed entry by entry); a container mixing ranks gives ``TensorLike[E, Dv, Any]`` entries,
    or ``TensorLike[Any, Any, Any]`` ones where its entry type is unknown (mypy's
    ``list[object]`` for ``[w, b]``). ``y`` must be a float Scalar and ``wrt`` float data.

    >>> g_w, g_b = tn.grad(loss, (w, b))
    """
    return _grad(y, wrt)


# fmt: off
# --- BEGIN GENERATED VJP (scripts/gen_op_overloads.py) ---
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: Mod, cotangents: TensorLike[FE, Dv, D]) -> Mod: ...
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: TensorLike[E1, V1, D1], cotangents: TensorLike[FE, Dv, D]) -> TensorLike[E1, V1, D1]: ...
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: tuple[TensorLike[E1, V1, D1]], cotangents: TensorLike[FE, Dv, D]) -> tuple[TensorLike[E1, V1, D1]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]], cotangents: TensorLike[FE, Dv, D]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]], cotangents: TensorLike[FE, Dv, D]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]], cotangents: TensorLike[FE, Dv, D]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]], cotangents: TensorLike[FE, Dv, D]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]], cotangents: TensorLike[FE, Dv, D]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: tuple[TensorLike[E1, V1, D1], ...], cotangents: TensorLike[FE, Dv, D]) -> tuple[TensorLike[E1, V1, D1], ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: tuple[TensorLike[E1, V1, Any], ...], cotangents: TensorLike[FE, Dv, D]) -> tuple[TensorLike[E1, V1, Any], ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: tuple[FloatData, ...], cotangents: TensorLike[FE, Dv, D]) -> tuple[AnyTensor, ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: Sequence[TensorLike[E1, V1, D1]], cotangents: TensorLike[FE, Dv, D]) -> list[TensorLike[E1, V1, D1]]: ...
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: Sequence[TensorLike[E1, V1, Any]], cotangents: TensorLike[FE, Dv, D]) -> list[TensorLike[E1, V1, Any]]: ...
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: Sequence[FloatData], cotangents: TensorLike[FE, Dv, D]) -> list[AnyTensor]: ...
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: Mapping[K, TensorLike[E1, V1, D1]], cotangents: TensorLike[FE, Dv, D]) -> dict[K, TensorLike[E1, V1, D1]]: ...
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: Mapping[K, TensorLike[E1, V1, Any]], cotangents: TensorLike[FE, Dv, D]) -> dict[K, TensorLike[E1, V1, Any]]: ...
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: Mapping[K, FloatData], cotangents: TensorLike[FE, Dv, D]) -> dict[K, AnyTensor]: ...
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: list[object], cotangents: TensorLike[FE, Dv, D]) -> list[AnyTensor]: ...
@overload
def vjp(ys: TensorLike[FE, Dv, D], wrt: dict[K, object], cotangents: TensorLike[FE, Dv, D]) -> dict[K, AnyTensor]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: Mod, cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> Mod: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: TensorLike[E1, V1, D1], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> TensorLike[E1, V1, D1]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: tuple[TensorLike[E1, V1, D1]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> tuple[TensorLike[E1, V1, D1]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: tuple[TensorLike[E1, V1, D1], ...], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> tuple[TensorLike[E1, V1, D1], ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: tuple[TensorLike[E1, V1, Any], ...], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> tuple[TensorLike[E1, V1, Any], ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: tuple[FloatData, ...], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> tuple[AnyTensor, ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: Sequence[TensorLike[E1, V1, D1]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> list[TensorLike[E1, V1, D1]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: Sequence[TensorLike[E1, V1, Any]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> list[TensorLike[E1, V1, Any]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: Sequence[FloatData], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> list[AnyTensor]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: Mapping[K, TensorLike[E1, V1, D1]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> dict[K, TensorLike[E1, V1, D1]]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: Mapping[K, TensorLike[E1, V1, Any]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> dict[K, TensorLike[E1, V1, Any]]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: Mapping[K, FloatData], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> dict[K, AnyTensor]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: list[object], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> list[AnyTensor]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]], wrt: dict[K, object], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2]]) -> dict[K, AnyTensor]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: Mod, cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> Mod: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: TensorLike[E1, V1, D1], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> TensorLike[E1, V1, D1]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: tuple[TensorLike[E1, V1, D1]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> tuple[TensorLike[E1, V1, D1]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: tuple[TensorLike[E1, V1, D1], ...], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> tuple[TensorLike[E1, V1, D1], ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: tuple[TensorLike[E1, V1, Any], ...], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> tuple[TensorLike[E1, V1, Any], ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: tuple[FloatData, ...], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> tuple[AnyTensor, ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: Sequence[TensorLike[E1, V1, D1]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> list[TensorLike[E1, V1, D1]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: Sequence[TensorLike[E1, V1, Any]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> list[TensorLike[E1, V1, Any]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: Sequence[FloatData], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> list[AnyTensor]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: Mapping[K, TensorLike[E1, V1, D1]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> dict[K, TensorLike[E1, V1, D1]]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: Mapping[K, TensorLike[E1, V1, Any]], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> dict[K, TensorLike[E1, V1, Any]]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: Mapping[K, FloatData], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> dict[K, AnyTensor]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: list[object], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> list[AnyTensor]: ...
@overload
def vjp(ys: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]], wrt: dict[K, object], cotangents: tuple[TensorLike[F1, W1, R1], TensorLike[F2, W2, R2], TensorLike[F3, W3, R3]]) -> dict[K, AnyTensor]: ...
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: Mod, cotangents: Sequence[TensorLike[FE, Dv, D]]) -> Mod: ...
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: TensorLike[E1, V1, D1], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> TensorLike[E1, V1, D1]: ...
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: tuple[TensorLike[E1, V1, D1]], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> tuple[TensorLike[E1, V1, D1]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: tuple[TensorLike[E1, V1, D1], ...], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> tuple[TensorLike[E1, V1, D1], ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: tuple[TensorLike[E1, V1, Any], ...], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> tuple[TensorLike[E1, V1, Any], ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: tuple[FloatData, ...], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> tuple[AnyTensor, ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: Sequence[TensorLike[E1, V1, D1]], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> list[TensorLike[E1, V1, D1]]: ...
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: Sequence[TensorLike[E1, V1, Any]], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> list[TensorLike[E1, V1, Any]]: ...
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: Sequence[FloatData], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> list[AnyTensor]: ...
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: Mapping[K, TensorLike[E1, V1, D1]], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> dict[K, TensorLike[E1, V1, D1]]: ...
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: Mapping[K, TensorLike[E1, V1, Any]], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> dict[K, TensorLike[E1, V1, Any]]: ...
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: Mapping[K, FloatData], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> dict[K, AnyTensor]: ...
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: list[object], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> list[AnyTensor]: ...
@overload
def vjp(ys: Sequence[TensorLike[FE, Dv, D]], wrt: dict[K, object], cotangents: Sequence[TensorLike[FE, Dv, D]]) -> dict[K, AnyTensor]: ...
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: Mod, cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> Mod: ...
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: TensorLike[E1, V1, D1], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> TensorLike[E1, V1, D1]: ...
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: tuple[TensorLike[E1, V1, D1]], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> tuple[TensorLike[E1, V1, D1]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> tuple[TensorLike[E1, V1, D1], TensorLike[E2, V2, D2], TensorLike[E3, V3, D3], TensorLike[E4, V4, D4], TensorLike[E5, V5, D5], TensorLike[E6, V6, D6]]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: tuple[TensorLike[E1, V1, D1], ...], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> tuple[TensorLike[E1, V1, D1], ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: tuple[TensorLike[E1, V1, Any], ...], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> tuple[TensorLike[E1, V1, Any], ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: tuple[FloatData, ...], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> tuple[AnyTensor, ...]: ...  # type: ignore[overload-overlap]
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: Sequence[TensorLike[E1, V1, D1]], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> list[TensorLike[E1, V1, D1]]: ...
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: Sequence[TensorLike[E1, V1, Any]], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> list[TensorLike[E1, V1, Any]]: ...
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: Sequence[FloatData], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> list[AnyTensor]: ...
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: Mapping[K, TensorLike[E1, V1, D1]], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> dict[K, TensorLike[E1, V1, D1]]: ...
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: Mapping[K, TensorLike[E1, V1, Any]], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> dict[K, TensorLike[E1, V1, Any]]: ...
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: Mapping[K, FloatData], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> dict[K, AnyTensor]: ...
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: list[object], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> list[AnyTensor]: ...
@overload
def vjp(ys: tuple[FloatData, FloatData, FloatData, FloatData, *tuple[FloatData, ...]], wrt: dict[K, object], cotangents: tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor, *tuple[AnyTensor, ...]]) -> dict[K, AnyTensor]: ...
# --- END GENERATED VJP ---
# fmt: on
def vjp(ys: object, wrt: object, cotangents: object) -> object:
    """Pull the ``cotangents`` of the outputs ``ys`` back to ``wrt`` (lazy expressions).

    ``ys``: an expression, or a tuple of them with a tuple of ``cotangents`` (each exactly its
    output's shape, element and device; statically its output's type, checked position by
    position for up to three outputs). ``wrt`` and the result as for :func:`grad`, which is
    ``vjp(y, wrt, tn.scalar(1.0, y.elem, y.device))`` for a scalar ``y``. Nothing is evaluated.

    >>> gx, gw = tn.vjp(y, (x, w), g)
    """
    return _vjp(ys, wrt, cotangents)


def _grad(y: object, wrt: object) -> object:
    out = _output("grad", y, "y")
    if out.rank != 0:
        raise ShapeError(
            message(
                "cannot take tn.grad of a non-scalar output.",
                [("y", out.describe()), ("accepted", "a rank-0 float expression (a Scalar)")],
                built_at=format_site(user_site()),
                hint="reduce it first (ops.reduce_sum(y) or ops.reduce_mean(y)), or pull a "
                "cotangent of its shape back with tn.vjp(y, wrt, cotangent).",
            )
        )
    return _pull("grad", [out], [_one(out.elem, out.device)], wrt)


def _vjp(ys: object, wrt: object, cotangents: object) -> object:
    many = isinstance(ys, tuple | list)
    outs = list(ys) if isinstance(ys, tuple | list) else [ys]
    if many != isinstance(cotangents, tuple | list) or (
        many and len(outs) != len(cotangents)  # type: ignore[arg-type]  # a tuple or list here
    ):
        raise OperandError(
            message(
                "cannot build tn.vjp: the cotangents do not match the outputs one to one.",
                [("outputs", _outline(ys)), ("cotangents", _outline(cotangents))],
                built_at=format_site(user_site()),
                hint="give one cotangent per output, in the same structure (a tensor for a "
                "tensor, a tuple for a tuple).",
            )
        )
    cots = list(cotangents) if many else [cotangents]  # type: ignore[call-overload]
    checked = [_output("vjp", y, f"output {i + 1}" if many else "ys") for i, y in enumerate(outs)]
    seeds = [_cotangent(y, c, i, many) for i, (y, c) in enumerate(zip(checked, cots, strict=True))]
    return _pull("vjp", checked, seeds, wrt)


_ONES: dict[tuple[type, type], AnyTensor] = {}


def _one(elem: type, device: type) -> AnyTensor:
    """The seed of ``grad``: one read-only rank-0 tensor of 1 per element type and device, so
    the gradients of many losses (a per-sample loop) share it and batch together."""
    one = _ONES.get((elem, device))
    if one is None:
        one = scalar(1.0, elem, device)
        if isinstance(one.array, np.ndarray):
            one.array.flags.writeable = False
        one = _ONES[(elem, device)] = one
    return one


def _pull(fn: str, outs: list[AnyTensor], seeds: list[AnyTensor], wrt: object) -> object:
    """Backpropagate and return the cotangents in ``wrt``'s structure."""
    if isinstance(wrt, TensorLike):
        return _fill(backpropagate(outs, seeds, [_input(fn, wrt, "wrt")]), [wrt])[0]
    if isinstance(wrt, Module):  # a tree of the module's type, its parameters' gradients
        named = named_parameters(wrt)
        items = [_input(fn, t, f"wrt.{path}") for path, t in named]
        found = _distinct(_fill(backpropagate(outs, seeds, items), items))
        by_leaf = {id(t): g for t, g in zip(items, found, strict=True)}
        tree = tree_map(lambda p: by_leaf[id(p)], wrt)
        mark_gradient_of(tree, wrt)
        return tree
    if isinstance(wrt, tuple | list):
        items = [_input(fn, w, f"wrt[{i}]") for i, w in enumerate(wrt)]
        grads = _fill(backpropagate(outs, seeds, items), items)
        return tuple(grads) if isinstance(wrt, tuple) else grads
    if isinstance(wrt, Mapping):
        keys = list(wrt)
        items = [_input(fn, wrt[k], f"wrt[{k!r}]") for k in keys]
        return dict(zip(keys, _fill(backpropagate(outs, seeds, items), items), strict=True))
    raise OperandError(
        message(
            f"cannot take tn.{fn} with respect to {type(wrt).__name__} {wrt!r}.",
            [
                ("wrt", describe(wrt)),
                ("accepted", "an nn.Module, typed_nn data, or a tuple, list or dict of it"),
            ],
            built_at=format_site(user_site()),
            hint="pass the tensors to differentiate by, e.g. tn.grad(loss, (w, b)).",
        )
    )


def _distinct(grads: list[AnyTensor]) -> list[AnyTensor]:
    """One object per parameter: two parameters whose gradient is one node (``x + (b1 +
    b2)``, an LSTM's two biases over one step) get one each, a view of it, so that the tree
    lists both (one object under two paths is a tied weight, counted once)."""
    seen: set[int] = set()
    out = []
    for g in grads:
        if id(g) in seen:
            g = build(RESHAPE, (g,), (g.shape,))
        seen.add(id(g))
        out.append(g)
    return out


def _fill(grads: list[AnyTensor | None], wrt: Sequence[AnyTensor]) -> list[AnyTensor]:
    """A ZeroTensor of the input's shape where no path reaches it."""
    return [zeros_like(w) if g is None else g for g, w in zip(grads, wrt, strict=True)]


def _output(fn: str, y: object, what: str) -> AnyTensor:
    if not isinstance(y, TensorLike):
        raise OperandError(
            message(
                f"cannot take tn.{fn}: {what} is not typed_nn data.",
                [(what, describe(y)), ("accepted", "a float expression (TensorLike)")],
                built_at=format_site(user_site()),
                hint="differentiate an expression built from typed_nn tensors and ops.",
            )
        )
    if not issubclass(y.elem, FloatTag):
        raise ElemTypeError(
            message(
                f"cannot take tn.{fn} of an integer output.",
                [(what, y.describe()), ("accepted", f"{FLOAT_NAMES} elements")],
                built_at=format_site(user_site()),
                hint="integer values have no gradient; differentiate a float expression "
                "(ops.astype(y, tn.Float32) only if its values really vary continuously).",
            )
        )
    return y


def _input(fn: str, w: object, what: str) -> AnyTensor:
    if not isinstance(w, TensorLike):
        raise OperandError(
            message(
                f"cannot take tn.{fn} with respect to {what}: it is not typed_nn data.",
                [(what, describe(w)), ("accepted", "typed_nn data (a Tensor, a node)")],
                built_at=format_site(user_site()),
                hint="every entry of wrt must be a tensor or expression of the graph; "
                "leave other values out of the structure.",
            )
        )
    if not issubclass(w.elem, FloatTag):
        raise ElemTypeError(
            message(
                f"cannot take tn.{fn} with respect to an integer tensor ({what}).",
                [(what, w.describe()), ("accepted", f"{FLOAT_NAMES} elements")],
                built_at=format_site(user_site()),
                hint="gradients exist for float data only; drop it from wrt.",
            )
        )
    return w


def _cotangent(y: AnyTensor, c: object, i: int, many: bool) -> AnyTensor:
    what = f"cotangent {i + 1}" if many else "cotangent"
    if not isinstance(c, TensorLike):
        raise OperandError(
            message(
                f"cannot build tn.vjp: {what} is not typed_nn data.",
                [("output", y.describe()), (what, describe(c))],
                built_at=format_site(user_site()),
                hint="give a tensor of the output's shape, element and device.",
            )
        )
    items = [("output", y.describe()), (what, c.describe())]
    if c.shape != y.shape:
        raise ShapeError(
            message(
                f"cannot build tn.vjp: {what} has shape {c.shape}, the output {y.shape}.",
                items,
                built_at=format_site(user_site()),
                hint="a cotangent has exactly its output's shape.",
            )
        )
    if c.elem is not y.elem:
        raise ElemTypeError(
            message(
                f"cannot build tn.vjp: {what} has {tag_name(c.elem)} elements, "
                f"the output {tag_name(y.elem)}.",
                items,
                built_at=format_site(user_site()),
                hint=f"convert it: ops.astype(cotangent, tn.{tag_name(y.elem)}).",
            )
        )
    if c.device is not y.device:
        raise DeviceError(
            message(
                f"cannot build tn.vjp: {what} lives on {tag_name(c.device)}, "
                f"the output on {tag_name(y.device)}.",
                items,
                built_at=format_site(user_site()),
                hint=f"move it: ops.to_device(cotangent, tn.{tag_name(y.device)}).",
            )
        )
    return c


def _outline(x: object) -> str:
    if isinstance(x, tuple | list):
        return f"{type(x).__name__} of {len(x)}"
    return describe(x)

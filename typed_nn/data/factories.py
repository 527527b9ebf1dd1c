"""Factories for principal tensors: ``tensor``, ``zeros``, ``ones``, ``scalar``.

``zeros`` and ``ones`` take their rank from the shape tuple's length, statically too:
``zeros((2, 3), Float32, CPU)`` is a ``Tensor[Float32, CPU, Dim2]`` for mypy.
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np
import numpy.typing as npt

from .. import backends
from ..errors import ElemTypeError, RankError, message
from ..tags import CPU, D, DeviceTag, Dim0, Dim1, Dim2, Dim3, Dim4, Dv, E, ElemTag, dim_of_rank
from .special import check_shape
from .tensor import Tensor

__all__ = ["ones", "scalar", "tensor", "zeros"]


def _convert(data: object, elem: type[ElemTag], what: str) -> npt.NDArray[Any]:
    """``data`` as a host array of ``elem``'s dtype; only same-kind conversions are allowed."""
    array = np.asarray(backends.to_host(data) if backends.device_of_array(data) else data)
    if array.dtype.kind not in "biuf" or not np.can_cast(array.dtype, elem.dtype, "same_kind"):
        raise ElemTypeError(
            message(
                f"{what}: cannot convert {array.dtype} data to {elem.__name__}.",
                [("declared", f"{elem.__name__} ({elem.dtype})"), ("received", str(array.dtype))],
                hint="convert the data explicitly first (e.g. array.astype(np.int32)), "
                "or declare a float element type.",
            )
        )
    return array


def _place(array: npt.NDArray[Any], device: type[DeviceTag]) -> Any:
    if device is CPU:
        return array
    return backends.array_module(device).asarray(array)


def tensor(
    data: npt.ArrayLike, elem: type[E], device: type[Dv], dim: type[D], *, copy: bool = True
) -> Tensor[E, Dv, D]:
    """A tensor holding ``data`` (nested lists, numbers or an array), checked against the tags.

    The rank must equal ``dim.rank``; the data is converted to ``elem`` when that keeps its
    kind (ints to floats, float64 to float32), else ``ElemTypeError``. ``copy=False`` shares
    the memory of a numpy array that already has the right dtype.

    >>> tensor([[1, 2], [3, 4]], Float32, CPU, Dim2)
    Tensor[Float32, CPU, Dim2](2, 2)
    """
    array = _convert(data, elem, "tensor")
    if array.ndim != dim.rank:
        raise RankError(
            message(
                f"tensor: data of rank {array.ndim} cannot be a {dim.__name__} tensor.",
                [
                    ("declared", f"{dim.__name__} (rank {dim.rank})"),
                    ("received", f"shape {array.shape}"),
                ],
                hint=f"pass dim=tn.Dim{array.ndim}, or reshape the data to rank {dim.rank}.",
            )
        )
    _check_int_range(array, elem)
    array = array.astype(elem.dtype, copy=copy or array.dtype != elem.dtype)
    return Tensor(_place(array, device), elem, device, dim)


def _check_int_range(array: npt.NDArray[Any], elem: type[ElemTag]) -> None:
    """Narrowing integers (Python ints arrive as int64) must not wrap around silently."""
    if array.dtype.kind not in "iu" or elem.dtype.kind not in "iu" or array.size == 0:
        return
    if np.can_cast(array.dtype, elem.dtype, "safe"):
        return
    info = np.iinfo(elem.dtype.type)  # type: ignore[type-var]  # int kind checked above
    low, high = int(array.min()), int(array.max())
    if low < info.min or high > info.max:
        raise ElemTypeError(
            message(
                f"tensor: values do not fit in {elem.__name__}.",
                [
                    ("declared", f"{elem.__name__} ({info.min} .. {info.max})"),
                    ("received", f"{array.dtype} values {low} .. {high}"),
                ],
                hint="declare a wider element type (Int64), or scale the data first.",
            )
        )


@overload
def zeros(shape: tuple[()], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim0]: ...
@overload
def zeros(shape: tuple[int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim1]: ...
@overload
def zeros(shape: tuple[int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim2]: ...
@overload
def zeros(shape: tuple[int, int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim3]: ...
@overload
def zeros(
    shape: tuple[int, int, int, int], elem: type[E], device: type[Dv]
) -> Tensor[E, Dv, Dim4]: ...
def zeros(
    shape: tuple[int, ...], elem: type[ElemTag], device: type[DeviceTag]
) -> Tensor[Any, Any, Any]:
    """A tensor of zeros; its rank is the length of ``shape`` (at most 4)."""
    shape = check_shape(shape, "zeros")
    array = backends.array_module(device).zeros(shape, elem.dtype)
    return Tensor(array, elem, device, dim_of_rank(len(shape)))


@overload
def ones(shape: tuple[()], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim0]: ...
@overload
def ones(shape: tuple[int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim1]: ...
@overload
def ones(shape: tuple[int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim2]: ...
@overload
def ones(shape: tuple[int, int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim3]: ...
@overload
def ones(
    shape: tuple[int, int, int, int], elem: type[E], device: type[Dv]
) -> Tensor[E, Dv, Dim4]: ...
def ones(
    shape: tuple[int, ...], elem: type[ElemTag], device: type[DeviceTag]
) -> Tensor[Any, Any, Any]:
    """A tensor of ones; its rank is the length of ``shape``."""
    shape = check_shape(shape, "ones")
    array = backends.array_module(device).ones(shape, elem.dtype)
    return Tensor(array, elem, device, dim_of_rank(len(shape)))


def scalar(value: float | int, elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim0]:
    """A rank-0 tensor; equal to another scalar of the same value (MetaNN)."""
    return tensor(value, elem, device, Dim0)

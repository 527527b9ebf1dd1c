"""Factories for principal tensors: ``tensor``, ``zeros``, ``ones``, ``scalar``.

``zeros`` and ``ones`` take their rank from the shape tuple's length, statically too:
``zeros((2, 3), Float32, CPU)`` is a ``Tensor[Float32, CPU, Dim2]`` for mypy.
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np
import numpy.typing as npt

from .. import devices
from ..errors import (
    ElemRangeError,
    ElemTypeError,
    RankError,
    ShapeError,
    TagError,
    flag,
    message,
)
from ..shape import check_shape, deprecated
from ..tags import (
    CPU,
    DEVICE_TAGS,
    DIM_TAGS,
    ELEM_TAGS,
    FE,
    MAX_RANK,
    D,
    DeviceTag,
    Dim0,
    Dim1,
    Dim2,
    Dim3,
    Dim4,
    Dim5,
    Dim6,
    DimTag,
    Dv,
    E,
    ElemTag,
    dim_of_rank,
)
from .tensor import Tensor, check_elem_on_device

__all__ = ["check_tags", "ones", "scalar", "tensor", "zeros"]


_TAG_KINDS = {
    "elem": (
        ElemTag,
        "dtype",
        "an element tag",
        "Float32, Float64, Float16, BFloat16, Int32 or Int64",
    ),
    "device": (DeviceTag, "name", "a device tag", "CPU or GPU"),
    "dim": (DimTag, "rank", "a rank tag", f"Dim0 to Dim{MAX_RANK}"),
}


def check_tags(what: str, example: str, **tags: object) -> None:
    """Each of ``tags`` (``elem=``, ``device=``, ``dim=``) must be a concrete tag of its kind.

    ``example`` is a correct call, shown as the fix. (Callers test membership of typed_nn's
    own tags first: a user's tag subclass passes here, anything else raises.)"""
    for name, tag in tags.items():
        kind, attribute, a_tag, accepted = _TAG_KINDS[name]
        if isinstance(tag, type) and issubclass(tag, kind) and hasattr(tag, attribute):
            continue
        items = [
            (p, _name_of(t) + (f"   <- expected {a_tag}: {accepted}" if p == name else ""))
            for p, t in tags.items()
        ]
        raise TagError(
            message(
                f"{what}: {name} must be {a_tag}, got {_name_of(tag)}.",
                [("parameters", f"{what}(..., {', '.join(tags)})"), *items],
                hint=f"pass the tags in this order, e.g. {example}.",
            )
        )


def _name_of(tag: object) -> str:
    return tag.__name__ if isinstance(tag, type) else f"{type(tag).__name__} {tag!r}"


def _convert(data: object, elem: type[ElemTag], what: str) -> npt.NDArray[Any]:
    """``data`` as a host array of ``elem``'s dtype; only same-kind conversions are allowed."""
    if str(getattr(data, "dtype", "")) == "torch.bfloat16" and hasattr(data, "detach"):
        bf16: Any = data  # a torch.Tensor: numpy cannot read it; float32 holds it exactly
        data = bf16.detach().cpu().float().numpy()
    try:
        array = np.asarray(devices.to_host(data) if devices.device_of_array(data) else data)
    except ValueError as exc:  # nested lists numpy cannot make one shape of
        raise ShapeError(
            message(
                f"{what}: the nested lists are ragged (they make no rectangular shape).",
                [("received", _ragged_at(data) or str(exc))],
                hint="give every row of a level the same length (pad the short rows).",
            )
        ) from exc
    refused = array.dtype.kind not in "biuf" or not np.can_cast(
        array.dtype, elem.dtype, "same_kind"
    )
    if refused and array.dtype != elem.dtype:  # ml_dtypes' bfloat16 is of kind "V"
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
    return devices.array_module(device).asarray(array)


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
    if elem not in ELEM_TAGS or device not in DEVICE_TAGS or dim not in DIM_TAGS:
        check_tags(
            "tensor",
            "tn.tensor(data, tn.Float32, tn.CPU, tn.Dim1)",
            elem=elem,
            device=device,
            dim=dim,
        )
    copy = flag("tensor", "copy", copy)
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
    copy = copy or array.dtype != elem.dtype
    if array.dtype.kind == "f" and array.dtype.itemsize > elem.dtype.itemsize:
        try:
            with np.errstate(over="raise"):  # no extra pass over the data when nothing overflows
                array = array.astype(elem.dtype, copy=copy)
        except FloatingPointError:
            raise _finite_lost(array, elem) from None
    else:
        array = array.astype(elem.dtype, copy=copy)
    check_elem_on_device(elem, device, "make a tensor")
    return Tensor(_place(array, device), elem, device, dim)


def _ragged_at(data: object) -> str | None:
    """Where nested lists first disagree, level by level: ``data[1] has 2 items, ...``."""
    level: list[tuple[tuple[int, ...], object]] = [((), data)]
    while level:
        first_path, first = level[0]
        first_items = _items(first)
        for path, x in level:
            items = _items(x)
            if (items is None) != (first_items is None) or (
                items is not None and first_items is not None and len(items) != len(first_items)
            ):
                return f"data{_index(path)} {_what(x)}, but data{_index(first_path)} {_what(first)}"
        if first_items is None:
            return None
        level = [((*path, i), y) for path, x in level for i, y in enumerate(_items(x) or ())]
    return None


def _index(path: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in path)


def _items(x: object) -> list[object] | None:
    """The items of a nested level (a list, tuple or array); None for a number."""
    if isinstance(x, list | tuple) or (isinstance(x, np.ndarray) and x.ndim > 0):
        return list(x)
    return None


def _what(x: object) -> str:
    items = _items(x)
    if items is None:
        return f"is {type(x).__name__} {x!r}"
    return f"has {len(items)} item{'' if len(items) == 1 else 's'}"


def _finite_lost(array: npt.NDArray[Any], elem: type[ElemTag]) -> ElemRangeError:
    """The error for narrowing floats (Python floats arrive as float64) that turns finite
    values into infinities; it names the first such value."""
    with np.errstate(over="ignore"):
        converted = array.astype(elem.dtype)
    lost = np.isfinite(array) & ~np.isfinite(converted)
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(lost)), lost.shape))
    scalar = converted.dtype.type
    if not issubclass(scalar, np.floating):  # the caller narrows floats only
        raise TypeError(f"_finite_lost: {elem.__name__} is not a floating-point element type")
    largest = float(np.finfo(scalar).max)
    return ElemRangeError(
        message(
            f"tensor: {float(array[index])!r} does not fit in {elem.__name__} "
            f"(it would become {float(converted[index])!r}).",
            [
                ("declared", f"{elem.__name__} (finite up to ±{largest:.8g})"),
                ("received", f"{array.dtype} {float(array[index])!r} at index {list(index)}"),
                ("out of range", f"{int(lost.sum())} of {array.size} values"),
            ],
            hint="declare a wider element type (tn.Float64), or scale the data first.",
        )
    )


def _check_int_range(array: npt.NDArray[Any], elem: type[ElemTag]) -> None:
    """Narrowing integers (Python ints arrive as int64) must not wrap around silently."""
    if array.dtype.kind not in "iu" or elem.dtype.kind not in "iu" or array.size == 0:
        return
    if np.can_cast(array.dtype, elem.dtype, "safe"):
        return
    info = np.iinfo(elem.dtype.type)  # type: ignore[type-var]  # int kind checked above
    low, high = int(array.min()), int(array.max())
    if low < info.min or high > info.max:
        raise ElemRangeError(
            message(
                f"tensor: values do not fit in {elem.__name__}.",
                [
                    ("declared", f"{elem.__name__} ({info.min} .. {info.max})"),
                    ("received", f"{array.dtype} values {low} .. {high}"),
                ],
                hint="declare a wider element type (Int64), or scale the data first.",
            )
        )


# fmt: off
# --- BEGIN GENERATED ZEROS (scripts/gen_op_overloads.py) ---
@overload
def zeros(shape: tuple[int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim2]: ...
@overload
def zeros(shape: tuple[()], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim0]: ...
@overload
def zeros(shape: tuple[int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim1]: ...
@overload
def zeros(shape: tuple[int, int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim3]: ...
@overload
def zeros(shape: tuple[int, int, int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim4]: ...
@overload
def zeros(shape: tuple[int, int, int, int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim5]: ...
@overload
def zeros(shape: tuple[int, int, int, int, int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def zeros(shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Any]: ...
@overload
def zeros(shape: tuple[int, ...], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Any]: ...
# --- END GENERATED ZEROS ---
# fmt: on
def zeros(
    shape: tuple[int, ...], elem: type[ElemTag], device: type[DeviceTag]
) -> Tensor[Any, Any, Any]:
    """A tensor of zeros; its rank is the length of ``shape`` (at most ``MAX_RANK``, 6).

    A shape of unknown length (``x.shape`` is a ``tuple[int, ...]``) gives a tensor of
    unknown static rank: ``Tensor[E, Dv, Any]``.
    """
    if elem not in ELEM_TAGS or device not in DEVICE_TAGS:
        check_tags("zeros", "tn.zeros((2, 3), tn.Float32, tn.CPU)", elem=elem, device=device)
    shape = check_shape(shape, "zeros")
    check_elem_on_device(elem, device, "make zeros")
    array = devices.array_module(device).zeros(shape, elem.dtype)
    return Tensor(array, elem, device, dim_of_rank(len(shape)))


# fmt: off
# --- BEGIN GENERATED ONES (scripts/gen_op_overloads.py) ---
@overload
def ones(shape: tuple[int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim2]: ...
@overload
def ones(shape: tuple[()], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim0]: ...
@overload
def ones(shape: tuple[int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim1]: ...
@overload
def ones(shape: tuple[int, int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim3]: ...
@overload
def ones(shape: tuple[int, int, int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim4]: ...
@overload
def ones(shape: tuple[int, int, int, int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim5]: ...
@overload
def ones(shape: tuple[int, int, int, int, int, int], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def ones(shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Any]: ...
@overload
def ones(shape: tuple[int, ...], elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Any]: ...
# --- END GENERATED ONES ---
# fmt: on
def ones(
    shape: tuple[int, ...], elem: type[ElemTag], device: type[DeviceTag]
) -> Tensor[Any, Any, Any]:
    """A tensor of ones; its rank is the length of ``shape``."""
    if elem not in ELEM_TAGS or device not in DEVICE_TAGS:
        check_tags("ones", "tn.ones((2, 3), tn.Float32, tn.CPU)", elem=elem, device=device)
    shape = check_shape(shape, "ones")
    check_elem_on_device(elem, device, "make ones")
    array = devices.array_module(device).ones(shape, elem.dtype)
    return Tensor(array, elem, device, dim_of_rank(len(shape)))


@overload
def scalar(value: int, elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim0]: ...
@overload
def scalar(value: float, elem: type[FE], device: type[Dv]) -> Tensor[FE, Dv, Dim0]: ...
def scalar(value: float | int, elem: type[E], device: type[Dv]) -> Tensor[E, Dv, Dim0]:
    """A rank-0 tensor; equal to another scalar of the same value (MetaNN).

    An integer element (``Int32``, ``Int64``) takes an ``int``: a ``float`` needs a float
    element, statically and at run time (ElemTypeError, even for ``2.0``).
    """
    return tensor(value, elem, device, Dim0)

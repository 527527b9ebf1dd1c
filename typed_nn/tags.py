"""Type-level tags: element types, devices and ranks.

Tags are classes, never instantiated. They are the type arguments of every data type
(``Tensor[Float32, CPU, Dim2]``) and they carry their meaning at run time too
(``Float32.dtype``, ``CPU.name``, ``Dim2.rank``), so one object serves mypy and the checks
made when data or a node is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypeVar

import numpy as np

__all__ = [
    "CPU",
    "GPU",
    "D",
    "D2",
    "DeviceTag",
    "Dim0",
    "Dim1",
    "Dim2",
    "Dim3",
    "Dim4",
    "Dim5",
    "Dim6",
    "DimTag",
    "Dv",
    "E",
    "ElemTag",
    "FE",
    "BFloat16",
    "Float16",
    "Float32",
    "Float64",
    "FloatTag",
    "Int32",
    "Int64",
    "IntTag",
    "HALF_TAGS",
    "accumulation_dtype",
    "bfloat16_dtype",
    "is_float_dtype",
    "dim_of_rank",
    "elem_of_dtype",
    "tag_name",
]


class _Tag:
    """Base of all tags: tags are types, so instantiating one is always a mistake."""

    def __new__(cls) -> _Tag:
        raise TypeError(f"{cls.__name__} is a type tag; use the class itself, not an instance")


class ElemTag(_Tag):
    """An element type; ``dtype`` is the numpy dtype that stores it."""

    dtype: ClassVar[np.dtype[np.generic]]


class FloatTag(ElemTag):
    """A floating-point element type."""


class IntTag(ElemTag):
    """An integer element type; ``min`` and ``max`` bound its values."""

    min: ClassVar[int]
    max: ClassVar[int]


class Float16(FloatTag):
    """16-bit IEEE float (numpy ``float16``): 11-bit mantissa, largest value 65504. Reductions,
    softmax, losses, norms and products accumulate it in float32 (docs/precision.md)."""

    dtype = np.dtype(np.float16)


def bfloat16_dtype() -> np.dtype[np.generic]:
    """numpy's dtype for bfloat16, from the ``ml_dtypes`` package (numpy has none): imported
    here, at the first use of BFloat16 data, so ``import typed_nn`` stays numpy-only; a
    ``MissingDependencyError`` naming the ``bf16`` extra where it is not installed."""
    global _bfloat16
    if _bfloat16 is None:
        try:
            import ml_dtypes
        except ImportError:
            from .errors import missing_dependency

            raise missing_dependency("BFloat16 data", "ml_dtypes", "bf16") from None
        _bfloat16 = np.dtype(ml_dtypes.bfloat16)
    return _bfloat16


_bfloat16: np.dtype[np.generic] | None = None


class _BFloat16Meta(type):
    """Gives BFloat16 its ``dtype`` on first access rather than at import (see
    :func:`bfloat16_dtype`). A data descriptor on the metaclass wins over the class attribute
    every other element tag sets, so ``BFloat16.dtype`` reads like theirs."""

    @property
    def dtype(cls) -> np.dtype[np.generic]:
        return bfloat16_dtype()


class BFloat16(FloatTag, metaclass=_BFloat16Meta):
    """bfloat16: float32's 8-bit exponent with an 8-bit mantissa (numpy dtype from the
    optional ``ml_dtypes`` package: ``pip install 'typed_nn[bf16]'``). Accumulated in float32
    like Float16 (docs/precision.md)."""


class Float32(FloatTag):
    """32-bit IEEE float (numpy ``float32``)."""

    dtype = np.dtype(np.float32)


class Float64(FloatTag):
    """64-bit IEEE float (numpy ``float64``)."""

    dtype = np.dtype(np.float64)


class Int32(IntTag):
    """32-bit signed integer (numpy ``int32``)."""

    dtype = np.dtype(np.int32)
    min, max = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)


class Int64(IntTag):
    """64-bit signed integer (numpy ``int64``)."""

    dtype = np.dtype(np.int64)
    min, max = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


class DeviceTag(_Tag):
    """A device; ``name`` selects the backend that computes on it."""

    name: ClassVar[str]


class CPU(DeviceTag):
    """The host: numpy arrays."""

    name = "CPU"


class GPU(DeviceTag):
    """An NVIDIA GPU: cupy arrays (cupy is imported only when GPU data is built)."""

    name = "GPU"


class DimTag(_Tag):
    """A rank (number of dims); sizes are checked at run time, ranks statically."""

    rank: ClassVar[int]


# One class per rank, alike on purpose: each must be its own class for the type checkers.
class Dim0(DimTag):
    """Rank 0: a scalar."""

    rank = 0


class Dim1(DimTag):
    """Rank 1: a vector."""

    rank = 1


class Dim2(DimTag):
    """Rank 2: a matrix."""

    rank = 2


class Dim3(DimTag):
    """Rank 3."""

    rank = 3


class Dim4(DimTag):
    """Rank 4 (e.g. NCHW images)."""

    rank = 4


class Dim5(DimTag):
    """Rank 5 (e.g. video: NCTHW, or grouped attention)."""

    rank = 5


class Dim6(DimTag):
    """Rank 6 (the highest rank typed_nn types statically)."""

    rank = 6


# Bounded and invariant: a covariant rank would let a Matrix pass where a Tensor3 is declared.
E = TypeVar("E", bound=ElemTag)
FE = TypeVar("FE", bound=FloatTag)
Dv = TypeVar("Dv", bound=DeviceTag)
D = TypeVar("D", bound=DimTag)
D2 = TypeVar("D2", bound=DimTag)

if TYPE_CHECKING:  # for the checkers only: no data has this rank

    class UnknownRank(DimTag):
        """What only a rank of ``Any`` matches (data of a rank known at run time only,
        ``tn.zeros(x.shape, ...)``): the generated operator overloads for such an operand come
        first and give ``TensorLike[E, Dv, Any]``, where the concrete-rank ones would give a
        made-up rank (a checker picks the first overload an ``Any`` rank matches)."""

    # A TypeVar rather than the class itself: pyright then takes the first overload an
    # operand of unknown rank matches instead of calling the call ambiguous (``Any``).
    UR = TypeVar("UR", bound=UnknownRank)

# BFloat16 last: elem_of_dtype reaches its (lazily imported) dtype only for a bfloat16 dtype.
ELEM_TAGS: tuple[type[ElemTag], ...] = (Float32, Float64, Int32, Int64, Float16, BFloat16)
HALF_TAGS: tuple[type[FloatTag], ...] = (Float16, BFloat16)
"""The 16-bit float tags: computed in their own type, accumulated in float32."""
FLOAT_NAMES = "Float16, BFloat16, Float32 or Float64"
"""The float element types, as messages list what an op that needs floats accepts."""
DEVICE_TAGS: tuple[type[DeviceTag], ...] = (CPU, GPU)
DIM_TAGS: tuple[type[DimTag], ...] = (Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6)
MAX_RANK = len(DIM_TAGS) - 1


def elem_of_dtype(dtype: np.dtype[np.generic]) -> type[ElemTag] | None:
    """The element tag whose dtype is ``dtype``, or None when typed_nn has none."""
    if dtype.name == "bfloat16":  # ml_dtypes' name; no other dtype reads BFloat16.dtype
        return BFloat16 if dtype == BFloat16.dtype else None
    for tag in ELEM_TAGS:
        if tag is not BFloat16 and tag.dtype == dtype:
            return tag
    return None


def dim_of_rank(rank: int) -> type[DimTag]:
    """The rank tag for ``rank`` (0 to ``MAX_RANK``, which is 6)."""
    try:
        if 0 <= rank <= MAX_RANK:
            return DIM_TAGS[rank]
    except TypeError:  # not a number: callers without a type checker may pass anything
        pass
    from .errors import RankError, message

    raise RankError(
        message(
            f"typed_nn supports ranks 0 to {MAX_RANK}, got rank {rank!r}.",
            hint=f"reshape the data to at most {MAX_RANK} dims.",
        )
    )


def tag_name(tag: type[_Tag]) -> str:
    """The name a tag is shown with in reprs and messages."""
    return tag.__name__


def accumulation_dtype(dtype: np.dtype[np.generic]) -> np.dtype[np.generic]:
    """The dtype a reduction, product, softmax, loss or norm of ``dtype`` data accumulates
    in: float32 for the 16-bit floats (a float16 sum of 1e5 ones overflows; a bfloat16 one
    stalls at 256), ``dtype`` itself otherwise. Read by name, so asking imports nothing."""
    return _FLOAT32 if dtype.name in _HALF_NAMES else dtype


_FLOAT32: np.dtype[np.generic] = np.dtype(np.float32)
_HALF_NAMES = frozenset({"float16", "bfloat16"})


def is_float_dtype(dtype: np.dtype[np.generic]) -> bool:
    """Whether ``dtype`` holds floats: numpy's own (kind ``"f"``) or ml_dtypes' bfloat16
    (kind ``"V"`` to numpy), read by name so that asking imports nothing."""
    return dtype.kind == "f" or dtype.name == "bfloat16"

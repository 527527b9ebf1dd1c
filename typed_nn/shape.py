"""Shape helpers in Caffe Blob's style: canonical axes, element counts, row-major offsets.

A shape is a plain ``tuple[int, ...]``; rank-0 data has shape ``()`` and count 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from .errors import ShapeError, message
from .tags import dim_of_rank

__all__ = [
    "Shape",
    "broadcast_shapes",
    "canonical_axis",
    "check_shape",
    "count",
    "deprecated",
    "format_shape",
    "index_of",
    "offset",
    "shift_index",
]

_F = TypeVar("_F")

if TYPE_CHECKING:
    # PEP 702's marker, for the checkers only: typed_nn puts it on the overloads of calls that
    # always raise (a shape of more than MAX_RANK dims, more reduced dims than the operand
    # has), so that mypy (enable_error_code = deprecated) and pyright (reportDeprecated) report
    # the call, which a catch-all overload for shapes of unknown length would otherwise accept.
    # The overloads never run, so at run time the marker does nothing (and typing_extensions
    # is not a dependency).
    from typing_extensions import deprecated
else:

    def deprecated(message: str) -> Callable[[_F], _F]:
        return lambda f: f


Shape = tuple[int, ...]


def format_shape(shape: Shape) -> str:
    """``(4, 3)``; ``()`` for a scalar."""
    return "(" + ", ".join(str(d) for d in shape) + ")"


def broadcast_shapes(*shapes: Shape) -> Shape | None:
    """numpy's broadcasting rule: trailing dims aligned, each pair equal or one of them 1
    (which expands); the result has the highest rank. None when the shapes do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    result = [1] * rank
    for s in shapes:
        for i, n in enumerate(s, rank - len(s)):
            if n != result[i]:
                if result[i] != 1 and n != 1:
                    return None
                if n != 1:
                    result[i] = n
    return tuple(result)


def canonical_axis(axis: int, rank: int) -> int:
    """Map a possibly negative axis index into ``0 .. rank-1`` (Caffe's CanonicalAxisIndex).

    >>> canonical_axis(-1, 3)
    2
    """
    if not -rank <= axis < rank:
        raise ShapeError(
            message(
                f"axis {axis} is out of range for rank {rank}.",
                [("valid axes", f"{-rank} .. {rank - 1}" if rank else "none (rank 0)")],
                hint="count axes from 0, or from -1 for the last one.",
            )
        )
    return axis + rank if axis < 0 else axis


def count(shape: Shape, start: int = 0, end: int | None = None) -> int:
    """Number of elements in dims ``start .. end-1`` (all dims by default); 1 for none.

    Like Caffe's ``Blob::count(start, end)``; negative bounds count from the end.
    """
    rank = len(shape)
    lo = start + rank if start < 0 else start
    hi = rank if end is None else (end + rank if end < 0 else end)
    if not 0 <= lo <= hi <= rank:
        raise ShapeError(
            message(
                f"count({start}, {end}) does not name a range of dims of shape {format_shape(shape)}.",
                hint=f"use 0 <= start <= end <= {rank}.",
            )
        )
    result = 1
    for d in shape[lo:hi]:
        result *= d
    return result


def offset(shape: Shape, index: Sequence[int]) -> int:
    """Row-major offset of a multi-index (last index fastest); MetaNN's IndexToOffset."""
    if len(index) != len(shape):
        raise ShapeError(
            message(
                f"an index of {len(index)} dims cannot address shape {format_shape(shape)}.",
                hint=f"give exactly {len(shape)} indices.",
            )
        )
    result = 0
    for i, (ix, dim) in enumerate(zip(index, shape, strict=True)):
        if not 0 <= ix < dim:
            raise ShapeError(
                message(
                    "Invalid dimension index.",
                    [("dim", str(i)), ("index", str(ix)), ("size", str(dim))],
                    hint=f"index dim {i} with 0 .. {dim - 1}.",
                )
            )
        result = result * dim + ix
    return result


def index_of(shape: Shape, flat: int) -> tuple[int, ...]:
    """The multi-index of a row-major offset; MetaNN's OffsetToIndex."""
    if not 0 <= flat < count(shape):
        raise ShapeError(
            message(
                "Offset out of bound!",
                [("offset", str(flat)), ("shape", format_shape(shape))],
                hint=f"use an offset in 0 .. {count(shape) - 1}.",
            )
        )
    index: list[int] = []
    for dim in reversed(shape):
        flat, ix = divmod(flat, dim)
        index.append(ix)
    return tuple(reversed(index))


def shift_index(shape: Shape, index: Sequence[int], carry: int = 1) -> tuple[int, ...]:
    """Add ``carry`` to a multi-index with carry across dims; MetaNN's ShiftIndex."""
    if carry < 0:
        raise ShapeError(
            message(
                "Not implemented yet: shift_index with a negative carry.",
                [("carry", str(carry))],
                hint="shift forwards only (carry >= 0), as MetaNN's ShiftIndex.",
            )
        )
    flat = offset(shape, index) + carry
    if flat >= count(shape):
        raise ShapeError(
            message(
                "Overflow",
                [("index", str(tuple(index))), ("carry", str(carry))],
                hint="the shifted index would be past the last element.",
            )
        )
    return index_of(shape, flat)


def check_shape(shape: object, what: str) -> tuple[int, ...]:
    """A shape tuple of non-negative ints (numpy integers too, made ints) with at most
    ``MAX_RANK`` (6) dims."""
    if not isinstance(shape, tuple) or not all(
        isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise ShapeError(
            message(
                f"{what} needs a shape tuple of non-negative ints, got {shape!r}.",
                hint="write the shape as a tuple, e.g. (4, 3); () for a scalar.",
            )
        )
    dim_of_rank(len(shape))
    return tuple(int(d) for d in shape)

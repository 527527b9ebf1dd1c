"""Category queries (MetaNN's DataCategory / IsScalar / IsMatrix ...): the rank of data."""

from __future__ import annotations

from ..errors import OperandError, message
from .tensor import TensorLike

__all__ = [
    "data_category",
    "is_matrix",
    "is_scalar",
    "is_tensor3",
    "is_tensor4",
    "is_tensor5",
    "is_tensor6",
    "is_vector",
]


def data_category(x: object) -> int:
    """The category (rank) of a data object; raises OperandError for anything else."""
    if not isinstance(x, TensorLike):
        raise OperandError(
            message(
                f"{type(x).__name__} is not typed_nn data, so it has no category.",
                hint="use is_scalar / is_vector / ... to test arbitrary objects.",
            )
        )
    return x.rank


def _is_rank(x: object, rank: int) -> bool:
    return isinstance(x, TensorLike) and x.rank == rank


def is_scalar(x: object) -> bool:
    """Whether ``x`` is rank-0 data."""
    return _is_rank(x, 0)


def is_vector(x: object) -> bool:
    """Whether ``x`` is rank-1 data."""
    return _is_rank(x, 1)


def is_matrix(x: object) -> bool:
    """Whether ``x`` is rank-2 data."""
    return _is_rank(x, 2)


def is_tensor3(x: object) -> bool:
    """Whether ``x`` is rank-3 data."""
    return _is_rank(x, 3)


def is_tensor4(x: object) -> bool:
    """Whether ``x`` is rank-4 data."""
    return _is_rank(x, 4)


def is_tensor5(x: object) -> bool:
    """Whether ``x`` is rank-5 data."""
    return _is_rank(x, 5)


def is_tensor6(x: object) -> bool:
    """Whether ``x`` is rank-6 data."""
    return _is_rank(x, 6)

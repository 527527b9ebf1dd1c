"""``DynamicData``: a type-erased holder that keeps E, Dv and D (MetaNN DynamicData).

Layers use it to store values of different concrete kinds in one stack. An empty holder
(``DynamicData()``) has no shape; reading it or evaluating it is an error. It lives with the
ops because ``try_cast`` knows every data kind, the op-node kinds (``ZeroTensor``) included.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

from ..data.scalable import ScalableTensor
from ..data.tensor import Tensor, TensorLike
from ..errors import LayerError, OperandError, message
from ..tags import D, Dv, E
from .special import ConstantTensor, ZeroTensor

__all__ = ["DynamicData", "make_dynamic"]

T = TypeVar("T")


class DynamicData(TensorLike[E, Dv, D]):
    """Wraps any data of category (E, Dv, D); equality per MetaNN (§1.3)."""

    __slots__ = ("_wrapped",)

    def __init__(self, wrapped: TensorLike[E, Dv, D] | None = None) -> None:
        self._wrapped = wrapped

    def is_empty(self) -> bool:
        """Whether the holder wraps nothing."""
        return self._wrapped is None

    # The data kinds keep the holder's tags: try_cast(tn.Tensor) is a Tensor[E, Dv, D] | None.
    @overload
    def try_cast(self, cls: type[Tensor[E, Dv, D]]) -> Tensor[E, Dv, D] | None: ...
    @overload
    def try_cast(self, cls: type[ZeroTensor[E, Dv, D]]) -> ZeroTensor[E, Dv, D] | None: ...
    @overload
    def try_cast(self, cls: type[ConstantTensor[E, Dv, D]]) -> ConstantTensor[E, Dv, D] | None: ...
    @overload
    def try_cast(self, cls: type[ScalableTensor[E, Dv, D]]) -> ScalableTensor[E, Dv, D] | None: ...
    @overload
    def try_cast(self, cls: type[DynamicData[E, Dv, D]]) -> DynamicData[E, Dv, D] | None: ...
    @overload
    def try_cast(self, cls: type[T]) -> T | None: ...
    def try_cast(self, cls: type[Any]) -> Any:
        """The wrapped object if it is a ``cls``, else None (also None when empty).

        For the data kinds (``tn.Tensor``, ``ZeroTensor``, ``ConstantTensor``,
        ``ScalableTensor``, ``DynamicData``) the result has this holder's element, device and
        rank; for another class ``C`` it is a ``C | None``.
        """
        return self._wrapped if isinstance(self._wrapped, cls) else None

    def _get(self) -> TensorLike[E, Dv, D]:
        if self._wrapped is None:
            raise LayerError(
                message(
                    "Invalid internal buffer: this DynamicData is empty.",
                    hint="wrap data with tn.make_dynamic(x) before using it.",
                )
            )
        return self._wrapped

    @property
    def shape(self) -> tuple[int, ...]:
        return self._get().shape

    @property
    def elem(self) -> type[E]:
        return self._get().elem

    @property
    def device(self) -> type[Dv]:
        return self._get().device

    def lower(self) -> TensorLike[E, Dv, D]:
        return self._get()

    def describe(self) -> str:
        if self._wrapped is None:
            return "DynamicData[empty]"
        return f"DynamicData({self._wrapped.describe()})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DynamicData):
            return False
        if self._wrapped is None or other._wrapped is None:
            return self._wrapped is None and other._wrapped is None
        return type(self._wrapped) is type(other._wrapped) and self._wrapped == other._wrapped

    def __hash__(self) -> int:
        return hash(self._wrapped)


def make_dynamic(x: TensorLike[E, Dv, D]) -> DynamicData[E, Dv, D]:
    """Wrap ``x`` in a DynamicData; a DynamicData is returned unchanged."""
    if isinstance(x, DynamicData):
        return x
    given: object = x  # callers without a type checker may pass anything
    if not isinstance(given, TensorLike):
        raise OperandError(
            message(
                "make_dynamic needs typed_nn data to hold.",
                [("received", type(given).__name__)],
                hint="pass a tensor or an expression, e.g. tn.make_dynamic(tn.zeros((2, 3), ...)).",
            )
        )
    return DynamicData(x)

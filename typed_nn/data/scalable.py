"""``ScalableTensor``: a growable list of same-shaped items, one rank higher (MetaNN Batch).

Items stay lazy until the whole list is evaluated, which stacks them along a new dim 0.
Copies share the list (MetaNN's shared buffer): they are equal and see each other's pushes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import overload

from ..errors import LayerError, OperandError, ShapeError, message
from ..tags import MAX_RANK, D, Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6, Dv, E
from .tensor import UP, AnyTensor, TensorLike

__all__ = ["ScalableTensor"]


class ScalableTensor(TensorLike[E, Dv, D]):
    """Items of one shape; ``D`` is the rank of the whole (item rank + 1)."""

    __slots__ = ("_items",)

    # fmt: off
    # --- BEGIN GENERATED SCALABLE TENSOR (scripts/gen_op_overloads.py) ---
    @overload
    def __init__(self: ScalableTensor[E, Dv, Dim1], items: Iterable[TensorLike[E, Dv, Dim0]]) -> None: ...
    @overload
    def __init__(self: ScalableTensor[E, Dv, Dim2], items: Iterable[TensorLike[E, Dv, Dim1]]) -> None: ...
    @overload
    def __init__(self: ScalableTensor[E, Dv, Dim3], items: Iterable[TensorLike[E, Dv, Dim2]]) -> None: ...
    @overload
    def __init__(self: ScalableTensor[E, Dv, Dim4], items: Iterable[TensorLike[E, Dv, Dim3]]) -> None: ...
    @overload
    def __init__(self: ScalableTensor[E, Dv, Dim5], items: Iterable[TensorLike[E, Dv, Dim4]]) -> None: ...
    @overload
    def __init__(self: ScalableTensor[E, Dv, Dim6], items: Iterable[TensorLike[E, Dv, Dim5]]) -> None: ...
    # --- END GENERATED SCALABLE TENSOR ---
    # fmt: on
    @overload
    def __init__(self, items: None = None) -> None: ...
    def __init__(self, items: Iterable[AnyTensor] | None = None) -> None:
        self._items: list[AnyTensor] = []
        for item in items or ():
            self._push(item)

    # An item has the whole's element and device and one rank less (statically too).
    @overload
    def push_back(self: ScalableTensor[E, Dv, Dim1], item: TensorLike[E, Dv, Dim0]) -> None: ...
    @overload
    def push_back(self: ScalableTensor[E, Dv, Dim2], item: TensorLike[E, Dv, Dim1]) -> None: ...
    @overload
    def push_back(self: ScalableTensor[E, Dv, Dim3], item: TensorLike[E, Dv, Dim2]) -> None: ...
    @overload
    def push_back(self: ScalableTensor[E, Dv, Dim4], item: TensorLike[E, Dv, Dim3]) -> None: ...
    @overload
    def push_back(self: ScalableTensor[E, Dv, Dim5], item: TensorLike[E, Dv, Dim4]) -> None: ...
    @overload
    def push_back(self: ScalableTensor[E, Dv, Dim6], item: TensorLike[E, Dv, Dim5]) -> None: ...
    def push_back(self, item: AnyTensor) -> None:
        """Append an item; it must match the first item's shape, element and device."""
        self._push(item)

    def _push(self, item: AnyTensor) -> None:
        if not isinstance(item, TensorLike):
            raise OperandError(
                message(
                    f"cannot push {type(item).__name__} into a ScalableTensor: it is not "
                    "typed_nn data.",
                    [("received", repr(item))],
                    hint="wrap values with tn.tensor(array, elem, device, dim) or tn.scalar(...).",
                )
            )
        if self._items:
            first = self._items[0]
            if (item.shape, item.elem, item.device) != (first.shape, first.elem, first.device):
                raise ShapeError(
                    message(
                        "Shape mismatch",
                        [("items hold", first.describe()), ("pushed", item.describe())],
                        hint="every item of a ScalableTensor has the same shape, element and device.",
                    )
                )
        elif item.rank >= MAX_RANK:
            raise ShapeError(
                message(
                    f"ScalableTensor items have at most {MAX_RANK - 1} dims.",
                    [("pushed", item.describe())],
                )
            )
        self._items.append(item)

    def is_empty(self) -> bool:
        """Whether no item was pushed yet."""
        return not self._items

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def item(self) -> float | int | bool: ...
    @overload
    def item(self, index: int) -> AnyTensor: ...
    def item(self, index: int | None = None) -> AnyTensor | float | int | bool:
        """``item(i)``: the stored item ``i`` (unevaluated); ``item()``: as for any data, the
        value of rank-0 data (a ScalableTensor has a batch dim: an error)."""
        if index is None:
            return super().item()
        return self._items[index]

    def reversed(self) -> ScalableTensor[E, Dv, D]:
        """A new ScalableTensor with the items in reverse order (MetaNN ``Reverse()``)."""
        result: ScalableTensor[E, Dv, D] = ScalableTensor()
        result._items = self._items[::-1]
        return result

    def _first(self) -> AnyTensor:
        if not self._items:
            raise LayerError(
                message(
                    "an empty ScalableTensor has no element type, device or item shape yet.",
                    hint="push_back an item first.",
                )
            )
        return self._items[0]

    @property
    def shape(self) -> tuple[int, ...]:
        if not self._items:
            return (0,)
        return (len(self._items), *self._items[0].shape)

    @property
    def elem(self) -> type[E]:
        elem: type[E] = self._first().elem
        return elem

    @property
    def device(self) -> type[Dv]:
        device: type[Dv] = self._first().device
        return device

    def lower(self) -> TensorLike[E, Dv, D]:
        lowered: TensorLike[E, Dv, D] = UP.stack_items(self._items)
        return lowered

    def describe(self) -> str:
        if not self._items:
            return "ScalableTensor[empty](0)"
        return super().describe()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScalableTensor) and self._items is other._items

    def __hash__(self) -> int:
        return id(self._items)

    def __copy__(self) -> ScalableTensor[E, Dv, D]:
        clone: ScalableTensor[E, Dv, D] = ScalableTensor()
        clone._items = self._items
        return clone

"""``LoadBuffer[E, Dv]``: parameter name → principal tensor, for loading, saving and sharing.

MetaNN ``model/weight_cont/load_buffer.h``. When a parameter layer initialises, it first
looks its parameter name up here: a tensor found is *shared* (the layer keeps that very
object, so two layers mapped to one name share one weight); a freshly initialised tensor is
stored here afterwards, so the buffer ends up holding every parameter of the network, ready
for :func:`~typed_nn.model.save_weights`. Loading a weight file into an empty buffer before
initialising a network makes the network start from the file.

>>> buf = LoadBuffer(tn.Float32, tn.CPU)
>>> buf.set("fc1/weight", tn.zeros((64, 128), tn.Float32, tn.CPU))
>>> buf.try_get("fc1/weight", tn.Dim2)
Tensor[Float32, CPU, Dim2](64, 128)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, overload

from ..data.tensor import Tensor
from ..data.tensor_like import TensorLike
from ..errors import DeviceError, ElemTypeError, OperandError, ParamError, RankError, message
from ..tags import D, DimTag, Dv, E

__all__ = ["LoadBuffer"]


class LoadBuffer(Generic[E, Dv]):
    """Principal tensors of element ``E`` on device ``Dv``, one per parameter name.

    Iterating yields the names in insertion order; ``items()`` yields (name, tensor).
    A tensor's rank is known at run time only, so lookups without ``dim`` are typed
    ``Tensor[E, Dv, Any]``; pass ``dim`` for a rank-checked, precisely typed result.
    """

    def __init__(self, elem: type[E], device: type[Dv]) -> None:
        self._elem = elem
        self._device = device
        self._tensors: dict[str, Tensor[E, Dv, Any]] = {}

    @property
    def elem(self) -> type[E]:
        """Element tag every stored tensor has."""
        return self._elem

    @property
    def device(self) -> type[Dv]:
        """Device tag every stored tensor has."""
        return self._device

    @overload
    def try_get(self, name: str) -> Tensor[E, Dv, Any] | None: ...
    @overload
    def try_get(self, name: str, dim: type[D]) -> Tensor[E, Dv, D] | None: ...
    def try_get(self, name: str, dim: type[DimTag] | None = None) -> Tensor[E, Dv, Any] | None:
        """The tensor stored under ``name`` (the same object each time), or None.

        With ``dim``, a stored tensor of another rank is a ``RankError``.
        """
        tensor = self._tensors.get(name)
        if tensor is not None and dim is not None and tensor.rank != dim.rank:
            raise RankError(
                message(
                    f"parameter {name!r} in the load buffer has rank {tensor.rank}.",
                    [
                        ("declared", f"{dim.__name__} (rank {dim.rank})"),
                        ("stored", tensor.describe()),
                    ],
                    hint="two layers mapped to one parameter name must declare the same type.",
                )
            )
        return tensor

    def set(self, name: str, tensor: TensorLike[E, Dv, D]) -> None:
        """Store the principal ``tensor`` (not a copy) under a new ``name``."""
        tensor = self._check(name, tensor)
        if name in self._tensors:
            raise ParamError(
                message(
                    f"Duplicate parameter with name: {name}",
                    [("stored", self._tensors[name].describe()), ("new", tensor.describe())],
                    hint="give each parameter layer its own name, or map both to one name "
                    "and let the second share the first's tensor (try_get before set).",
                )
            )
        self._tensors[name] = tensor

    def _check(self, name: str, tensor: object) -> Tensor[E, Dv, Any]:
        if not isinstance(tensor, Tensor):
            raise OperandError(
                message(
                    f"a LoadBuffer holds principal tensors; cannot store {name!r}.",
                    [("received", getattr(tensor, "describe", lambda: type(tensor).__name__)())],
                    hint="evaluate it first: tn.evaluate(x).",
                )
            )
        for error, what, have, want in (
            (ElemTypeError, "element", tensor.elem, self._elem),
            (DeviceError, "device", tensor.device, self._device),
        ):
            if have is not want:
                raise error(
                    message(
                        f"cannot store {name!r}: the {what} differs from the buffer's.",
                        [
                            (
                                "buffer",
                                f"LoadBuffer[{self._elem.__name__}, {self._device.__name__}]",
                            ),
                            ("received", tensor.describe()),
                        ],
                        hint=f"use a LoadBuffer({have.__name__}, ...) for this data, or convert it.",
                    )
                )
        return tensor

    def is_param_exist(self, name: str, dim: type[DimTag] | None = None) -> bool:
        """Whether ``name`` is stored (with rank ``dim.rank`` when ``dim`` is given)."""
        tensor = self._tensors.get(name)
        return tensor is not None and (dim is None or tensor.rank == dim.rank)

    def clear(self) -> None:
        """Forget every stored tensor (the tensors themselves are untouched)."""
        self._tensors.clear()

    def items(self) -> Iterator[tuple[str, Tensor[E, Dv, Any]]]:
        """(name, tensor) pairs in insertion order."""
        return iter(list(self._tensors.items()))

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._tensors))

    def __len__(self) -> int:
        return len(self._tensors)

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def __repr__(self) -> str:
        inner = ", ".join(f"{n!r}: {t.describe()}" for n, t in self._tensors.items())
        return f"LoadBuffer[{self._elem.__name__}, {self._device.__name__}]({{{inner}}})"

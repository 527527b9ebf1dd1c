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
>>> buf["fc1/weight"].shape, len(buf), "fc1/weight" in buf
((64, 128), 1, True)
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any, overload

from ..data.tensor import Tensor, TensorLike
from ..errors import (
    DeviceError,
    ElemTypeError,
    OperandError,
    ParamError,
    ParamNotFoundError,
    RankError,
    listed,
    message,
)
from ..tags import D, DimTag, Dv, E
from .tagged_store import TaggedStore

__all__ = ["LoadBuffer"]


class LoadBuffer(TaggedStore[E, Dv], Mapping[str, Tensor[E, Dv, Any]]):
    """Principal tensors of element ``E`` on device ``Dv``, one per parameter name.

    A read-only ``Mapping[str, Tensor[E, Dv, Any]]`` (``buf[name]``, ``len``, ``in``,
    ``keys()`` / ``values()`` / ``items()``, ``get``), in insertion order; ``set`` adds.
    A tensor's rank is known at run time only, so lookups without ``dim`` are typed
    ``Tensor[E, Dv, Any]``; ``try_get(name, dim)`` gives a rank-checked, precisely typed result.
    An unknown name is a ``ParamNotFoundError`` (a ``KeyError``) listing the closest names.
    Two buffers are equal only when they are the same object (comparing tensors by value
    would build lazy expressions).
    """

    def __init__(self, elem: type[E], device: type[Dv]) -> None:
        super().__init__(elem, device)
        self._tensors: dict[str, Tensor[E, Dv, Any]] = {}

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

    def __getitem__(self, name: str) -> Tensor[E, Dv, Any]:
        tensor = self._tensors.get(name)
        if tensor is None:
            raise ParamNotFoundError(self._not_found(name))
        return tensor

    def _not_found(self, name: object) -> str:
        known = list(self._tensors)
        close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5)
        items = [("closest", listed(close))] if close else []
        items.append(("stored", f"{len(known)} name(s)" + (f": {listed(known)}" if known else "")))
        return message(
            f"no parameter {name!r} in the LoadBuffer.",
            items,
            hint="check the name (layer names join with '/': 'net/fc1/weight'); "
            "buf.get(name) gives None for a missing name, and the layers add their "
            "parameters when layer_init runs.",
        )

    def __iter__(self) -> Iterator[str]:
        # A snapshot: a layer may add parameters while the names are iterated.
        return iter(list(self._tensors))

    def __len__(self) -> int:
        return len(self._tensors)

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def __eq__(self, other: object) -> bool:
        return self is other

    # Deliberately hashable (by identity, as __eq__): typeshed types Mapping.__hash__ as None.
    __hash__ = object.__hash__  # pyright: ignore[reportAssignmentType]

    def __repr__(self) -> str:
        inner = ", ".join(f"{n!r}: {t.describe()}" for n, t in self._tensors.items())
        return f"LoadBuffer[{self._elem.__name__}, {self._device.__name__}]({{{inner}}})"

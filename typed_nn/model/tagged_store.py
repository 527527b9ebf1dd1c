"""``TaggedStore``: the element and device tags of a store of tensors that all share them
(``LoadBuffer``, ``GradCollector``), set once at construction."""

from __future__ import annotations

from typing import Generic

from ..tags import Dv, E

__all__ = ["TaggedStore"]


class TaggedStore(Generic[E, Dv]):
    """Tensors of element ``E`` on device ``Dv``: ``elem`` and ``device`` are read-only."""

    def __init__(self, elem: type[E], device: type[Dv]) -> None:
        self._elem = elem
        self._device = device

    @property
    def elem(self) -> type[E]:
        """Element tag every stored tensor has."""
        return self._elem

    @property
    def device(self) -> type[Dv]:
        """Device tag every stored tensor has."""
        return self._device

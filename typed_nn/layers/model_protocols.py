"""What layers need from the model side (``ParamInitializer``, ``LoadBuffer``, ``GradCollector``).

The model classes live in ``typed_nn.model``; layers are written against these small
protocols so that either side can change without the other (and tests can use fakes). The
method names are MetaNN's (§6) in snake case.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..data.tensor import AnyTensor, Tensor

__all__ = ["FillerLike", "GradCollectorLike", "InitializerLike", "LoadBufferLike", "SaverLike"]


class FillerLike(Protocol):
    """Fills a freshly allocated parameter tensor in place (constant, gaussian, ...)."""

    def fill(self, data: Tensor[Any, Any, Any], /) -> None: ...


class InitializerLike(Protocol):
    """MetaNN ``ParamInitializer``: name mapping, stored parameters and fillers by key."""

    def layer_name_to_param_name(self, layer_name: str, /) -> str: ...
    def is_param_exist(self, name: str, /) -> bool: ...
    def get_param(self, name: str, dst: AnyTensor, /) -> None: ...
    def get_filler(self, key: object, /) -> FillerLike: ...


class LoadBufferLike(Protocol):
    """MetaNN ``LoadBuffer``: parameters by name, for loading, sharing and saving."""

    def try_get(self, name: str, /) -> AnyTensor | None: ...
    def set(self, name: str, data: AnyTensor, /) -> None: ...


class SaverLike(LoadBufferLike, Protocol):
    """Where ``save_weights`` writes parameters (a LoadBuffer serves)."""


class GradCollectorLike(Protocol):
    """MetaNN ``GradCollector``: receives (parameter name, weight, summed gradient)."""

    def collect(self, name: str, weight: AnyTensor, grad: AnyTensor, /) -> None: ...

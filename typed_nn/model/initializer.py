"""``ParamInitializer``: fillers by key, preset parameters and the layer → parameter name map.

MetaNN ``model/param_initializer/param_initializer.h``. A parameter layer initialises its
tensor from, in order: a loaded value (``LoadBuffer``), a preset value of this initializer
(``set_param``), or the filler named by its ``PInitializerIs(key)`` policy. Layer names are
translated to parameter names through prefixes (``add_to_name_map``), so a network can read
parameters that were saved under other names.

>>> init = ParamInitializer({"w": XavierFiller(seed=0), "b": ConstantFiller(0.0)})
>>> init.add_to_name_map("net/fc1/", "encoder/")
>>> init.layer_name_to_param_name("net/fc1/weight")
'encoder/weight'
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import devices
from ..data.tensor import Tensor, TensorLike
from ..errors import ElemTypeError, OperandError, ParamError, ShapeError, message
from ..evaluate.cache import overwrite
from ..ops.node import format_site, user_site
from ..shape import format_shape
from ..tags import D, Dv, E, elem_of_dtype
from .fillers import Filler

__all__ = ["ParamInitializer"]


class ParamInitializer:
    """Fillers by key (any hashable key), preset parameters by name, and a name map.

    Args:
        fillers: ``{key: filler}``; a layer with ``PInitializerIs(key)`` fills from it.
    """

    def __init__(self, fillers: Mapping[Hashable, Filler] | None = None) -> None:
        self._fillers: dict[Hashable, Filler] = dict(fillers or {})
        self._params: dict[str, npt.NDArray[Any]] = {}
        self._name_map: dict[str, str] = {}

    # --- fillers -------------------------------------------------------------------------

    def get_filler(self, key: Hashable) -> Filler:
        """The filler registered under ``key`` (MetaNN ``GetFiller<Key>()``)."""
        try:
            return self._fillers[key]
        except KeyError:
            raise ParamError(
                message(
                    f"No filler with key {key!r}.",
                    [("keys", ", ".join(repr(k) for k in self._fillers) or "(none)")],
                    hint="register it: ParamInitializer({key: filler, ...}) or set_filler(key, f).",
                )
            ) from None

    def has_filler(self, key: Hashable) -> bool:
        """Whether a filler is registered under ``key``."""
        return key in self._fillers

    def set_filler(self, key: Hashable, filler: Filler) -> None:
        """Register (or replace) the filler of ``key``."""
        self._fillers[key] = filler

    # --- preset parameters ---------------------------------------------------------------

    def set_param(self, name: str, value: TensorLike[E, Dv, D] | npt.NDArray[Any]) -> None:
        """Store a host copy of ``value`` as the preset parameter ``name`` (replacing any)."""
        array = _host_copy(value)
        if array is None:
            raise OperandError(
                message(
                    f"set_param({name!r}, ...) needs typed_nn data or a numpy array.",
                    [("received", f"{type(value).__name__} {getattr(value, 'dtype', '')}")],
                    hint="pass a tn.Tensor, or a float32/float64/int32/int64 numpy array.",
                )
            )
        self._params[name] = array

    def is_param_exist(self, name: str) -> bool:
        """Whether a preset parameter ``name`` was stored."""
        return name in self._params

    def get_param(self, name: str, dst: TensorLike[E, Dv, D]) -> None:
        """Copy the preset parameter ``name`` into the principal tensor ``dst`` (same shape;
        same-kind elements)."""
        if not isinstance(dst, Tensor):
            raise OperandError(
                message(
                    f"get_param({name!r}, dst) writes into a principal tensor.",
                    [("received", dst.describe())],
                    hint="allocate dst with tn.zeros(shape, elem, device).",
                )
            )
        array = self._params.get(name)
        if array is None:
            raise ParamError(
                message(
                    f"cannot initialise {name!r}: the initializer holds no parameter of that name.",
                    [
                        ("name", repr(name)),
                        ("stored", ", ".join(map(repr, self._params)) or "(none)"),
                    ],
                    hint="store it with set_param(name, tensor) or check the name map.",
                )
            )
        if array.shape != dst.shape:
            raise ShapeError(
                message(
                    f"cannot initialise {name!r}: the value set_param stored has shape "
                    f"{format_shape(array.shape)}, the layer's parameter {format_shape(dst.shape)}.",
                    [
                        ("parameter", f"{name!r}{format_shape(array.shape)}"),
                        ("destination", dst.describe()),
                    ],
                    built_at=format_site(user_site()),
                    hint="the preset value must have the layer's parameter shape.",
                )
            )
        if not np.can_cast(array.dtype, dst.elem.dtype, "same_kind"):
            raise ElemTypeError(
                message(
                    f"cannot copy {array.dtype} parameter {name!r} into {dst.elem.__name__} data.",
                    [("parameter", str(array.dtype)), ("destination", dst.describe())],
                    hint="store the parameter with the layer's element type.",
                )
            )
        values = array.astype(dst.elem.dtype, copy=False)
        if dst.device.name != "CPU":
            values = devices.array_module(dst.device).asarray(values)
        overwrite(dst, values)

    # --- name map ------------------------------------------------------------------------

    def add_to_name_map(self, layer_prefix: str, param_prefix: str) -> None:
        """Map layer names starting with ``layer_prefix`` to ``param_prefix`` + the rest."""
        known = self._name_map.get(layer_prefix)
        if known is not None and known != param_prefix:
            raise ParamError(
                message(
                    "Parameter name conflict.",
                    [
                        ("layer prefix", repr(layer_prefix)),
                        ("mapped to", repr(known)),
                        ("now", repr(param_prefix)),
                    ],
                    hint="map each layer prefix to one parameter prefix.",
                )
            )
        self._name_map[layer_prefix] = param_prefix

    def layer_name_to_param_name(self, name: str) -> str:
        """The parameter name of layer ``name``: the first mapped prefix in reverse key order
        (so ``"a/b"`` wins over ``"a"``) is replaced; an unmapped name is returned as is."""
        for prefix in sorted(self._name_map, reverse=True):
            if name.startswith(prefix):
                return self._name_map[prefix] + name[len(prefix) :]
        return name

    def __repr__(self) -> str:
        return (
            f"ParamInitializer(fillers={list(self._fillers)!r}, params={list(self._params)!r}, "
            f"name_map={self._name_map!r})"
        )


def _host_copy(value: object) -> npt.NDArray[Any] | None:
    """A host copy of typed_nn data or of a numpy array of a typed_nn dtype; else None."""
    if isinstance(value, TensorLike):
        return np.array(value.numpy(), copy=True)
    if isinstance(value, np.ndarray) and elem_of_dtype(value.dtype) is not None:
        return value.copy()
    return None

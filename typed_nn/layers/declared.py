"""What a layer class was declared for, as a type argument: ``Declared[E, Dv]`` or ``Undeclared``.

Every shipped layer template is generic in ``Decl``, its last type argument:
``LinearLayer[Declared[Float32, CPU]]`` is a LinearLayer declared for Float32 CPU inputs, and
its ``input_cont()`` is a ``DeclaredValues`` whose ``set`` takes only Float32 CPU data (or
a number), so feeding it Float64 is an error for mypy and pyright alike. ``Undeclared`` (the
default: an inference layer, a bare template) takes any data and types its outputs from it.

Who writes the argument: pyright sees ``make_train_layer(LinearLayer[Declared[tn.Float32,
tn.CPU]], LayerInMap(...))`` (the run time checks that it agrees with the map); with the
typed_nn mypy plugin, ``make_train_layer(LinearLayer, LayerInMap({LayerInput: M32}))`` is
given the argument from the map's types. (Plain typing cannot re-parameterise a class that a
function receives, so without the plugin the argument must be written.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic

from ..tags import DeviceTag, Dv, E, ElemTag

__all__ = ["TYPE_DEFAULTS", "Decl", "Declared", "Undeclared", "declared_tags"]


class Undeclared:
    """The ``Decl`` type argument of a layer declared for nothing (the default)."""


class Declared(Undeclared, Generic[E, Dv]):
    """The ``Decl`` type argument of a layer declared for element ``E`` on device ``Dv``. A
    subclass of Undeclared, with ``Decl`` covariant: a declared layer is a layer, so
    ``Layer[Any, Any]`` (``Decl`` left to its default) takes every layer."""


if TYPE_CHECKING:
    # PEP 696 default, for the checkers only (typing_extensions is not a dependency).
    from typing_extensions import TypeVar

    Decl = TypeVar("Decl", bound=Undeclared, covariant=True, default=Undeclared)
else:
    from typing import TypeVar

    Decl = TypeVar("Decl", bound=Undeclared, covariant=True)

TYPE_DEFAULTS: dict[object, object] = {Decl: Undeclared}
"""Type parameter -> its default, for run-time subscriptions that leave trailing ones out
(Python 3.11's typing has no defaults): ``Layer.__class_getitem__`` fills them in."""


def declared_tags(declared: object) -> tuple[type[ElemTag], type[DeviceTag]] | None:
    """(element, device) of a ``Declared[E, Dv]`` subscription; None for anything else."""
    args = getattr(declared, "__args__", None)
    if getattr(declared, "__origin__", None) is not Declared or args is None or len(args) != 2:
        return None
    elem, device = args
    if not (
        isinstance(elem, type)
        and issubclass(elem, ElemTag)
        and isinstance(device, type)
        and issubclass(device, DeviceTag)
    ):
        return None
    return elem, device

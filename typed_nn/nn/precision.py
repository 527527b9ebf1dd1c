"""Mixed precision in the catalogue: a module's parameters stored in one element type and
computed in another (docs/precision.md, "Mixed precision in modules").

A catalogue module built with ``precision=PMixedBFloat16`` (any ``PrecisionPolicy`` object
setting ``compute_elem``) keeps its parameters in ``elem`` (the float32 *master weights*) and
casts each one to the compute type where the forward reads it (``ops.astype``, whose gradient
is cast back): ``tn.grad(loss, model)`` and the optimizer's state stay in ``elem``. The compute
type is the modules' third type parameter, ``CE``, which defaults to the element type (PEP 696),
so ``nn.Linear[Float32, CPU]`` is ``nn.Linear[Float32, CPU, Float32]`` and
``nn.Linear(4, 3, precision=PMixedBFloat16)`` is an ``nn.Linear[Float32, CPU, BFloat16]``
that takes and returns BFloat16 data. Its input must already be in the compute type: a cast
is the caller's, explicit (a static error and an ``ElemTypeError`` otherwise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, cast

from .. import ops
from ..data.module import Module
from ..data.tensor import AnyTensor, TensorLike
from ..errors import ElemTypeError, OperandError, ParamError, message
from ..ops.node import format_site, user_site
from ..ops.rules import describe, wrap_hint
from ..policies.objects import PolicyObject
from ..policies.precision import PrecisionPolicy
from ..tags import FE, FloatTag

__all__ = ["CE", "PC", "Mixed"]

if TYPE_CHECKING:
    # PEP 696 default, for the checkers only (typing_extensions is not a dependency): an
    # unmixed module computes in its element type. At run time Mixed.__class_getitem__ fills
    # the default in.
    from typing_extensions import TypeVar as DefaultTypeVar

    CE = DefaultTypeVar("CE", bound=FloatTag, default=FE)
else:
    CE = TypeVar("CE", bound=FloatTag)

PC = TypeVar("PC", bound=FloatTag)
"""The compute type a ``precision=`` argument names (in the constructors' overloads)."""
T = TypeVar("T", bound=AnyTensor)


class Mixed(Module):
    """Base of the catalogue modules with parameters: what ``precision=`` sets and reads.

    ``compute_elem`` is None (compute in the parameters' type) unless a policy was given."""

    compute_elem: type[FloatTag] | None = None
    param_elem: type[FloatTag] | None = None
    """The parameters' element type (what an unmixed module computes in)."""

    if not TYPE_CHECKING:

        def __class_getitem__(cls, params: Any) -> Any:
            # PEP 696 at run time on 3.11: ``Linear[Float32, CPU]`` means
            # ``Linear[Float32, CPU, Float32]`` (the compute type defaults to the element type).
            if isinstance(params, tuple) and len(params) == 2:
                params = (*params, params[0])
            return super().__class_getitem__(params)

    def _set_precision(self, precision: object, param_elem: type[FloatTag]) -> None:
        """Keep the compute type ``precision`` names (None: compute in ``param_elem``)."""
        self.param_elem = param_elem
        if precision is None:
            return
        if not (
            isinstance(precision, PolicyObject)
            and precision.key == (PrecisionPolicy, "compute_elem")
            and isinstance(precision.value, type)
            and issubclass(precision.value, FloatTag)
        ):
            raise ParamError(
                message(
                    f"cannot create {type(self).__name__}: precision= takes a PrecisionPolicy "
                    "object setting compute_elem.",
                    [("received", repr(precision))],
                    built_at=format_site(user_site()),
                    hint="precision=PMixedBFloat16, PMixedFloat16 or PComputeElemIs(tn.BFloat16); "
                    "the parameters' type is elem=.",
                )
            )
        if precision.value is not param_elem:
            self.compute_elem = precision.value

    def _param(self, p: T) -> T:
        """Parameter ``p`` as the forward reads it: cast to the compute type."""
        ce = self.compute_elem
        if ce is None or p.elem is ce:
            return p
        return cast(T, ops.astype(p, ce))  # T's rank and device, in the compute type

    def _input(self, x: object) -> None:
        """A module's input must already be in the type it computes in (its compute type, or
        its parameters' type): said here, naming the module, rather than by the first op
        that meets a parameter."""
        ce = self.compute_elem or self.param_elem
        if not isinstance(x, TensorLike):
            raise OperandError(
                message(
                    f"cannot apply {type(self).__name__}: its input is not typed_nn data.",
                    [("received", describe(x)), ("accepted", "a tensor or an expression")],
                    built_at=format_site(user_site()),
                    hint=wrap_hint(x, ce),
                )
            )
        if ce is None or x.elem is ce:
            return
        computes = "computes in" if self.compute_elem else "has parameters of"
        raise ElemTypeError(
            message(
                f"cannot apply {type(self).__name__}: it {computes} {ce.__name__}, the input "
                f"is {x.elem.__name__}.",
                [("declared", f"{ce.__name__} data"), ("received", x.describe())],
                built_at=format_site(user_site()),
                hint=f"convert the input first: ops.astype(x, tn.{ce.__name__}).",
            )
        )

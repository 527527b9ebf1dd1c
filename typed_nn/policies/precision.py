"""PrecisionPolicy: which element type parameters are stored in, which one they compute in.

Mixed precision as a policy (docs/precision.md): parameters, their gradients and the
optimizer's state are stored in ``param_elem`` (the *master weights*, Float32 by default); the
forward computes in ``compute_elem`` (BFloat16 or Float16), the parameters cast to it where
they are read (``ops.astype``, whose gradient is cast back). Both minors take float tags only
(``type[FloatTag]``): ``PComputeElemIs(tn.Int32)`` is rejected by the type checkers and when
declared; two objects setting one minor are a ``PolicyConflictError`` (and a mypy error with
the project's plugin), as for every major.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, TypeVar, cast

from typed_nn.tags import BFloat16, Float16, Float32, FloatTag

from .annotations import show_value
from .major import PolicyMajor
from .objects import PolicyObject, PolicyTemplate

__all__ = [
    "ComputeIn",
    "PComputeElemIs",
    "PMixedBFloat16",
    "PMixedFloat16",
    "PParamElemIs",
    "PrecisionPolicy",
]


@dataclass(frozen=True)
class PrecisionPolicy(PolicyMajor):
    """The element types of a model's parameters and of its computation.

    Attributes:
        param_elem: what parameters, their gradients and the optimizer's state are stored in.
        compute_elem: what the forward computes in; None means ``param_elem`` (no casts).
    """

    param_elem: type[FloatTag] = Float32
    compute_elem: type[FloatTag] | None = None

    @property
    def computes_in(self) -> type[FloatTag]:
        """The element type the forward computes in (``compute_elem``, else ``param_elem``)."""
        return self.compute_elem if self.compute_elem is not None else self.param_elem


CE = TypeVar("CE", bound=FloatTag)

ComputeIn: TypeAlias = PolicyObject[PrecisionPolicy, Literal["compute_elem"], type[CE]]
"""The static type of a policy object that makes a module compute in ``CE``:
``ComputeIn[BFloat16]`` is ``PMixedBFloat16``'s (and ``PComputeElemIs(tn.BFloat16)``'s) type,
so a module built with ``precision=PMixedBFloat16`` is typed as computing in BFloat16."""


class _ComputeElemTemplate(
    PolicyTemplate[PrecisionPolicy, Literal["compute_elem"], type[FloatTag]]
):
    """``PComputeElemIs``: generic in the tag, so the object keeps it for the type checkers."""

    __slots__ = ()

    def __call__(self, value: type[CE]) -> ComputeIn[CE]:
        return _compute_in(value, f"{self._name}({show_value(value)})")


def _compute_in(value: type[CE], name: str) -> ComputeIn[CE]:
    # the object keeps its tag for the checkers (PolicyObject's own constructor is typed by
    # the minor's annotation, type[FloatTag] | None)
    return cast(ComputeIn[CE], PolicyObject(PrecisionPolicy, "compute_elem", value, name=name))


PParamElemIs: PolicyTemplate[PrecisionPolicy, Literal["param_elem"], type[FloatTag]] = (
    PolicyTemplate(PrecisionPolicy, "param_elem", name="PParamElemIs")
)
PComputeElemIs = _ComputeElemTemplate(PrecisionPolicy, "compute_elem", name="PComputeElemIs")
PMixedBFloat16: ComputeIn[BFloat16] = _compute_in(BFloat16, "PMixedBFloat16")
"""Compute in BFloat16 (parameters stay in ``param_elem``, Float32 by default)."""
PMixedFloat16: ComputeIn[Float16] = _compute_in(Float16, "PMixedFloat16")
"""Compute in Float16 (pair it with a ``typed_nn.model.LossScaler``)."""

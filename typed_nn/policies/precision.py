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
from typing import Literal, TypeAlias

from typed_nn.tags import BFloat16, Float16, Float32, FloatTag

from .major import PolicyMajor
from .objects import PolicyObject, PolicyTemplate

__all__ = [
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


_ComputeElem: TypeAlias = PolicyObject[
    PrecisionPolicy, Literal["compute_elem"], type[FloatTag] | None
]

PParamElemIs: PolicyTemplate[PrecisionPolicy, Literal["param_elem"], type[FloatTag]] = (
    PolicyTemplate(PrecisionPolicy, "param_elem", name="PParamElemIs")
)
PComputeElemIs: PolicyTemplate[PrecisionPolicy, Literal["compute_elem"], type[FloatTag]] = (
    PolicyTemplate(PrecisionPolicy, "compute_elem", name="PComputeElemIs")
)
PMixedBFloat16: _ComputeElem = PolicyObject(
    PrecisionPolicy, "compute_elem", BFloat16, name="PMixedBFloat16"
)
"""Compute in BFloat16 (parameters stay in ``param_elem``, Float32 by default)."""
PMixedFloat16: _ComputeElem = PolicyObject(
    PrecisionPolicy, "compute_elem", Float16, name="PMixedFloat16"
)
"""Compute in Float16 (pair it with a ``typed_nn.model.LossScaler``)."""

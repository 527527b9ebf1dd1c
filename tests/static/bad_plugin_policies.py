"""Policy mistakes only the typed_nn mypy plugin rejects (checked with mypy only)."""

from dataclasses import dataclass

from typed_nn import Float16
from typed_nn.policies import (
    DimPolicy,
    GradPolicy,
    PComputeElemIs,
    PDimArrayIs,
    PDimCountIs,
    PKeepDim,
    PMixedBFloat16,
    PModifyDimNumIs,
    PNoKeepDim,
    PNoUpdate,
    PolicyContainer,
    PolicyMajor,
    PolicyObject,
    PolicyTemplate,
    PUpdate,
    PUpdateIs,
    SubPolicyContainer,
)

PolicyContainer(PUpdate, PNoUpdate)  # E: Policy conflict: GradPolicy.is_update is set by
PolicyContainer(PUpdate, PUpdate)  # E: Policy conflict: GradPolicy.is_update
PolicyContainer(PNoUpdate, PKeepDim, PUpdateIs(True))  # E: by argument 1 (PNoUpdate) and argument 3 (PUpdateIs(True))
PolicyContainer(PModifyDimNumIs(1), PModifyDimNumIs(2))  # E: DimPolicy.modify_dim_num
SubPolicyContainer("w", PKeepDim, PNoKeepDim)  # E: Policy conflict: DimPolicy.is_keep_dim
PolicyContainer(PMixedBFloat16, PComputeElemIs(Float16))  # E: Policy conflict: PrecisionPolicy.compute_elem
PolicyContainer(PKeepDim, SubPolicyContainer("w", PUpdate, PUpdate))  # E: Policy conflict


@dataclass(frozen=True)
class OptimPolicy(PolicyMajor):
    momentum: float = 0.0
    nesterov: bool = False


PNesterov = PolicyObject(OptimPolicy, "nesterov", True)
PNoNesterov = PolicyObject(OptimPolicy, "nesterov", False)
PMomentumIs = PolicyTemplate(OptimPolicy, "momentum")
PolicyContainer(PNesterov, PNoNesterov)  # E: Policy conflict: OptimPolicy.nesterov
PolicyContainer(PMomentumIs(0.9), PMomentumIs(0.5))  # E: Policy conflict: OptimPolicy.momentum
PMomentumIs("fast")  # E: incompatible type "str"; expected "float"
PolicyObject(OptimPolicy, "nesterov", 3.5)  # E: does not fit OptimPolicy.nesterov
PolicyObject(GradPolicy, "is_updat", True)  # E: Policy major "GradPolicy" has no minor
PolicyTemplate(DimPolicy, "modify_dim_nums")  # E: has no minor "modify_dim_nums"

# A bool where an int or float is declared: mypy counts bool as an int, the run-time check does not.
PModifyDimNumIs(True)  # E: Policy value of type "bool" does not fit DimPolicy.modify_dim_num (declared "int")
PDimCountIs(False)  # E: a bool is not accepted where an int or float is declared
PDimArrayIs(1, True)  # E: does not fit an item of DimPolicy.dim_array (declared "int")
PolicyObject(DimPolicy, "modify_dim_num", True)  # E: does not fit DimPolicy.modify_dim_num (declared "int"); a bool
PolicyObject(DimPolicy, "dim_array", (0, True))  # E: "tuple[int, bool]" does not fit DimPolicy.dim_array
PMomentumIs(True)  # E: does not fit OptimPolicy.momentum (declared "float")
PolicyObject(OptimPolicy, "momentum", False)  # E: does not fit OptimPolicy.momentum (declared "float")

"""Policy mistakes only the typed_nn mypy plugin rejects."""

from dataclasses import dataclass

from typed_nn.policies import (
    DimPolicy,
    GradPolicy,
    PKeepDim,
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

PolicyContainer(
    PUpdate, PNoUpdate
)  # E: Policy conflict: GradPolicy.is_update is set by argument 1 and argument 2
PolicyContainer(
    PUpdate, PUpdate
)  # E: Policy conflict: GradPolicy.is_update is set by argument 1 and argument 2
PolicyContainer(
    PNoUpdate, PKeepDim, PUpdateIs(True)
)  # E: Policy conflict: GradPolicy.is_update is set by argument 1 and argument 3
PolicyContainer(
    PModifyDimNumIs(1), PModifyDimNumIs(2)
)  # E: Policy conflict: DimPolicy.modify_dim_num
PolicyContainer(
    PKeepDim, SubPolicyContainer("w", PKeepDim, PNoKeepDim)
)  # E: Policy conflict: DimPolicy.is_keep_dim is set by argument 2 and argument 3


@dataclass(frozen=True)
class OptimPolicy(PolicyMajor):
    momentum: float = 0.0
    nesterov: bool = False


PNesterov = PolicyObject(OptimPolicy, "nesterov", True)
PNoNesterov = PolicyObject(OptimPolicy, "nesterov", False)
PMomentumIs = PolicyTemplate(OptimPolicy, "momentum")
PolicyContainer(PNesterov, PNoNesterov)  # E: Policy conflict: OptimPolicy.nesterov
PolicyContainer(PMomentumIs(0.9), PMomentumIs(0.5))  # E: Policy conflict: OptimPolicy.momentum
PMomentumIs("fast")  # E: has incompatible type "str"; expected "float"
PolicyObject(
    OptimPolicy, "nesterov", 3.5
)  # E: Policy value of type "float" does not fit OptimPolicy.nesterov
PolicyObject(GradPolicy, "is_updat", True)  # E: Policy major "GradPolicy" has no minor "is_updat"
PolicyTemplate(
    DimPolicy, "modify_dim_nums"
)  # E: Policy major "DimPolicy" has no minor "modify_dim_nums"

"""Policies that type-check: selection is typed per major, templates take their value type."""

from dataclasses import dataclass
from typing import Literal, assert_type

import typed_nn as tn
from typed_nn.policies import (
    DimPolicy,
    GradPolicy,
    ParamPolicy,
    PDimArrayIs,
    PElemIs,
    PKeepDim,
    PModifyDimNumIs,
    PNoUpdate,
    PolicyContainer,
    PolicyMajor,
    PolicyObject,
    PolicyTemplate,
    PUpdate,
    PUpdateIs,
    RnnPolicy,
    SeqID,
    SubPolicyContainer,
    VarScaleDistribution,
    VarScaleFillerPolicy,
    change_policy,
    policy_select,
    sub_policies,
)
from typed_nn.tags import ElemTag

c = PolicyContainer(PUpdate, PKeepDim, PModifyDimNumIs(2), SubPolicyContainer("w", PNoUpdate))
assert_type(policy_select(GradPolicy, c), GradPolicy)
assert_type(policy_select(GradPolicy, c).is_update, bool)
assert_type(policy_select(DimPolicy, c).modify_dim_num, int)
assert_type(policy_select(DimPolicy, c).dim_array, tuple[int, ...])
assert_type(policy_select(ParamPolicy, c).elem, type[ElemTag] | None)
assert_type(policy_select(RnnPolicy, c).seq_ids, tuple[SeqID, ...])
assert_type(policy_select(VarScaleFillerPolicy, c).distribute, VarScaleDistribution)
assert_type(PUpdate, PolicyObject[GradPolicy, Literal["is_update"], bool])
assert_type(PUpdateIs(True), PolicyObject[GradPolicy, Literal["is_update"], bool])
assert_type(PDimArrayIs(1, 0), PolicyObject[DimPolicy, Literal["dim_array"], tuple[int, ...]])
assert_type(PElemIs(tn.Float64), PolicyObject[ParamPolicy, Literal["elem"], type[ElemTag]])
assert_type(sub_policies(c, "w"), PolicyContainer)
assert_type(change_policy(PNoUpdate, c), PolicyContainer)

# Different majors never conflict; one minor in the parent and in a sub-container is fine.
PolicyContainer(PUpdate, PKeepDim, SubPolicyContainer("w", PNoUpdate, PModifyDimNumIs(3)))


@dataclass(frozen=True)
class OptimPolicy(PolicyMajor):
    momentum: float = 0.0
    nesterov: bool = False


PNesterov: PolicyObject[OptimPolicy, Literal["nesterov"], bool] = PolicyObject(
    OptimPolicy, "nesterov", True, name="PNesterov"
)
PMomentumIs: PolicyTemplate[OptimPolicy, Literal["momentum"], float] = PolicyTemplate(
    OptimPolicy, "momentum", name="PMomentumIs"
)
assert_type(
    policy_select(OptimPolicy, PolicyContainer(PNesterov, PMomentumIs(0.9))).momentum, float
)

# Conflicts the plugin cannot see statically are left to the run-time check (not an error here).
some = [PUpdate]
PolicyContainer(*some, PNoUpdate)
# A user-defined major's objects mix with the catalogue's (the plugin infers Literal minors).
PNesterov2 = PolicyObject(OptimPolicy, "nesterov", True)
PolicyContainer(PNesterov2, PUpdate, PolicyObject(OptimPolicy, "momentum", 2))


@dataclass(frozen=True)
class OtherGradPolicy(PolicyMajor):
    is_update: bool = True


# Same minor name, different majors: no conflict.
PolicyContainer(PUpdate, PolicyObject(OtherGradPolicy, "is_update", False))

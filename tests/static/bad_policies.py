"""Policy mistakes that mypy and pyright both reject (no plugin needed)."""

from typed_nn.policies import (
    GradPolicy,
    PActFuncIs,
    PDimArrayIs,
    PModifyDimNumIs,
    PolicyContainer,
    PUpdate,
    PUpdateIs,
    policy_select,
)

PModifyDimNumIs("x")  # E: incompatible type "str"; expected "int"
PUpdateIs(1.5)  # E: incompatible type "float"; expected "bool"
PDimArrayIs(1, "a")  # E: incompatible type "str"; expected "int"
PActFuncIs(3)  # E: incompatible type "int"; expected "type"
PolicyContainer(PModifyDimNumIs)  # E: incompatible type "PolicyTemplate[
PolicyContainer(PolicyContainer(PUpdate))  # E: incompatible type "PolicyContainer"
c = PolicyContainer()
v: int = policy_select(GradPolicy, c).missing  # E: "GradPolicy" has no attribute "missing"

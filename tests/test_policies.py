"""Policy containers, conflicts, selection and the catalogue's defaults (METANN.md section 4)."""

import itertools

import pytest

from typed_nn import CPU, Float64
from typed_nn.errors import TypedNNError
from typed_nn.policies import (
    DimPolicy,
    GradPolicy,
    InitPolicy,
    LayerStructurePolicy,
    ParamPolicy,
    PBiasNotInvolved,
    PDeviceIs,
    PDimArrayIs,
    PDisableBptt,
    PElemIs,
    PFeedbackNoOutput,
    PFeedbackOutput,
    PKeepDim,
    PModifyDimNumIs,
    PNormVarScale,
    PNoUpdate,
    PolicyConflictError,
    PolicyContainer,
    PolicyError,
    PolicyItem,
    PUpdate,
    PUpdateIs,
    PVarScaleFanIn,
    RnnPolicy,
    SubPolicyContainer,
    ValueSourcePolicy,
    VarScaleDistribution,
    VarScaleFillerPolicy,
    VarScaleMode,
    has_policy,
    policy_select,
)

# --- the conflict rule (METANN.md 4.3) -------------------------------------------------------


def test_update_and_no_update_conflict() -> None:
    with pytest.raises(PolicyConflictError, match=r"two policies set GradPolicy\.is_update"):
        PolicyContainer(PUpdate, PNoUpdate)  # type: ignore[policy-conflict]


def test_same_object_twice_conflicts() -> None:
    with pytest.raises(PolicyConflictError, match=r"first\s+: PUpdate .*\n.*second\s+: PUpdate"):
        PolicyContainer(PUpdate, PUpdate)  # type: ignore[policy-conflict]


def test_template_made_object_conflicts_with_named_object() -> None:
    with pytest.raises(PolicyConflictError, match=r"PUpdate.*\n.*PUpdateIs\(False\)"):
        PolicyContainer(PUpdate, PKeepDim, PUpdateIs(False))  # type: ignore[policy-conflict]


def test_conflict_message_names_both_objects_and_a_fix() -> None:
    with pytest.raises(PolicyConflictError) as info:
        PolicyContainer(PModifyDimNumIs(1), PModifyDimNumIs(2))  # type: ignore[policy-conflict]
    text = str(info.value)
    assert "cannot build PolicyContainer: two policies set DimPolicy.modify_dim_num." in text
    assert "PModifyDimNumIs(1) (DimPolicy.modify_dim_num = 1)" in text
    assert "PModifyDimNumIs(2) (DimPolicy.modify_dim_num = 2)" in text
    assert "built at : test_policies.py:" in text
    assert (
        "hint: keep one of them; to set modify_dim_num for one sublayer only, put it in Sub" in text
    )


def test_conflict_error_is_a_typed_nn_type_error() -> None:
    with pytest.raises(TypeError, match=r"GradPolicy\.is_feedback_output"):
        PolicyContainer(PFeedbackOutput, PFeedbackNoOutput)  # type: ignore[policy-conflict]
    assert issubclass(PolicyConflictError, PolicyError)
    assert issubclass(PolicyConflictError, TypedNNError)


def test_different_majors_never_conflict() -> None:
    items = (PUpdate, PFeedbackOutput, PKeepDim, PModifyDimNumIs(2), PBiasNotInvolved)
    c = PolicyContainer(*items)
    assert len(c) == 5
    assert c.objects == items


def test_order_does_not_matter() -> None:
    items: tuple[PolicyItem, ...] = (
        PUpdate,
        PKeepDim,
        PNormVarScale,
        SubPolicyContainer("w", PNoUpdate),
    )
    containers = [PolicyContainer(*p) for p in itertools.permutations(items)]
    assert len(set(containers)) == 1
    assert all(policy_select(GradPolicy, c) == GradPolicy(is_update=True) for c in containers)


def test_conflict_is_found_in_any_order() -> None:
    for pair in itertools.permutations((PUpdate, PKeepDim, PNoUpdate)):
        with pytest.raises(PolicyConflictError, match=r"GradPolicy\.is_update"):
            PolicyContainer(*pair)


def test_conflict_inside_a_sub_container() -> None:
    with pytest.raises(PolicyConflictError, match=r"SubPolicyContainer\('w'\).*DimPolicy"):
        SubPolicyContainer("w", PKeepDim, PKeepDim)  # type: ignore[policy-conflict]


def test_conflict_across_sub_containers_of_one_name() -> None:
    with pytest.raises(
        PolicyConflictError, match=r"sublayer 'w' of PolicyContainer: two policies set GradPolicy"
    ):
        PolicyContainer(SubPolicyContainer("w", PUpdate), SubPolicyContainer("w", PNoUpdate))  # type: ignore[policy-conflict]


def test_parent_and_sublayer_may_set_the_same_minor() -> None:
    c = PolicyContainer(
        PUpdate, SubPolicyContainer("w", PNoUpdate), SubPolicyContainer("b", PUpdate)
    )
    assert c.subs == (SubPolicyContainer("w", PNoUpdate), SubPolicyContainer("b", PUpdate))


# --- policy_select: defaults when absent (METANN.md 4.5) -------------------------------------


def test_defaults_when_absent() -> None:
    empty = PolicyContainer()
    assert policy_select(GradPolicy, empty) == GradPolicy(False, False)
    assert policy_select(ParamPolicy, empty) == ParamPolicy(None, None, None, None)
    assert policy_select(DimPolicy, empty) == DimPolicy(False, (), 1, 0)
    assert policy_select(LayerStructurePolicy, empty) == LayerStructurePolicy(None, True)
    assert policy_select(VarScaleFillerPolicy, empty) == VarScaleFillerPolicy(
        VarScaleDistribution.UNIFORM, VarScaleMode.FAN_AVG
    )
    assert policy_select(InitPolicy, empty) == InitPolicy(None)
    assert policy_select(RnnPolicy, empty) == RnnPolicy((), True)
    assert policy_select(ValueSourcePolicy, empty) == ValueSourcePolicy(float)


def test_select_takes_the_objects_value_and_defaults_the_rest() -> None:
    c = PolicyContainer(PFeedbackOutput, PModifyDimNumIs(3), PDimArrayIs(1, 0), PVarScaleFanIn)
    assert policy_select(GradPolicy, c) == GradPolicy(is_update=False, is_feedback_output=True)
    assert policy_select(DimPolicy, c) == DimPolicy(dim_array=(1, 0), modify_dim_num=3)
    selected = policy_select(VarScaleFillerPolicy, c)
    assert selected.scale_mode is VarScaleMode.FAN_IN
    assert selected.distribute is VarScaleDistribution.UNIFORM


def test_select_ignores_sub_containers() -> None:
    c = PolicyContainer(SubPolicyContainer("w", PUpdate, PDisableBptt))
    assert policy_select(GradPolicy, c).is_update is False
    assert policy_select(RnnPolicy, c).use_bptt is True


def test_selected_major_is_frozen() -> None:
    selected = policy_select(GradPolicy, PolicyContainer(PUpdate))
    with pytest.raises(AttributeError):
        selected.is_update = False  # type: ignore[misc]


def test_has_policy_tells_explicit_from_default() -> None:
    c = PolicyContainer(PElemIs(Float64), SubPolicyContainer("w", PUpdate))
    assert has_policy(c, ParamPolicy, "elem")
    assert not has_policy(c, ParamPolicy, "param_type")
    assert not has_policy(c, GradPolicy, "is_update")


def test_elem_and_device_policies_take_tags() -> None:
    assert policy_select(ParamPolicy, PolicyContainer(PElemIs(Float64))).elem is Float64
    with pytest.raises(PolicyError, match=r"ParamPolicy.elem takes type\[ElemTag\] \| None"):
        PElemIs(float)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match=r"ParamPolicy.device takes type\[DeviceTag\]"):
        PDeviceIs(Float64)  # type: ignore[arg-type]
    assert policy_select(ParamPolicy, PolicyContainer(PDeviceIs(CPU))).device is CPU


def test_has_policy_rejects_an_unknown_minor() -> None:
    with pytest.raises(PolicyError, match=r"ParamPolicy has no minor 'elem_type'.*\n"):
        has_policy(PolicyContainer(), ParamPolicy, "elem_type")


# --- containers as values --------------------------------------------------------------------


def test_containers_are_hashable_and_compare_by_content() -> None:
    a = PolicyContainer(
        PUpdate, SubPolicyContainer("w", PKeepDim), SubPolicyContainer("w", PNoUpdate)
    )
    b = PolicyContainer(SubPolicyContainer("w", PNoUpdate, PKeepDim), PUpdateIs(True))
    assert a == b
    assert hash(a) == hash(b)
    assert a != PolicyContainer(PUpdate)
    assert {a: 1}[b] == 1


def test_reprs_read_like_declarations() -> None:
    c = PolicyContainer(PUpdate, PModifyDimNumIs(2), SubPolicyContainer("w", PNoUpdate))
    assert (
        repr(c)
        == "PolicyContainer(PUpdate, PModifyDimNumIs(2), SubPolicyContainer('w', PNoUpdate))"
    )
    assert repr(PolicyContainer()) == "PolicyContainer()"
    assert repr(PDimArrayIs(1, 0)) == "PDimArrayIs(1, 0)"
    assert repr(PElemIs(Float64)) == "PElemIs(Float64)"
    assert repr(PVarScaleFanIn) == "PVarScaleFanIn"


def test_container_iterates_in_given_order() -> None:
    sub = SubPolicyContainer("w", PNoUpdate)
    c = PolicyContainer(PKeepDim, sub, PUpdate)
    assert list(c) == [PKeepDim, sub, PUpdate]
    assert c.items == (PKeepDim, sub, PUpdate)
    assert c.objects == (PKeepDim, PUpdate)

"""Sub-layer scoping: plain_policies, sub_policies (SubPolicyPicker), change_policy (METANN 4.4)."""

from typed_nn.policies import (
    DimPolicy,
    GradPolicy,
    PFeedbackNoOutput,
    PFeedbackOutput,
    PKeepDim,
    PModifyDimNumIs,
    PNoUpdate,
    PolicyContainer,
    PUpdate,
    SubPolicyContainer,
    change_policy,
    plain_policies,
    policy_select,
    sub_policies,
)


def test_plain_policies_drops_every_sub_container() -> None:
    c = PolicyContainer(PUpdate, SubPolicyContainer("w", PNoUpdate), PKeepDim)
    assert plain_policies(c).items == (PUpdate, PKeepDim)


def test_linear_layer_test_3_updates_only_the_bias() -> None:
    # MetaNN LinearLayer test 3: PUpdate, SubPolicyContainer<WeightParamSublayer, PNoUpdate>.
    c = PolicyContainer(PUpdate, SubPolicyContainer("weight", PNoUpdate))
    assert policy_select(GradPolicy, sub_policies(c, "weight")).is_update is False
    assert policy_select(GradPolicy, sub_policies(c, "bias")).is_update is True


def test_sublayer_inherits_the_parents_other_minors() -> None:
    c = PolicyContainer(PUpdate, PFeedbackOutput, PKeepDim, SubPolicyContainer("w", PNoUpdate))
    picked = sub_policies(c, "w")
    assert picked.items == (PNoUpdate, PFeedbackOutput, PKeepDim)
    assert policy_select(GradPolicy, picked) == GradPolicy(False, True)
    assert policy_select(DimPolicy, picked).is_keep_dim is True


def test_all_sub_containers_of_the_name_are_concatenated_in_order() -> None:
    c = PolicyContainer(
        SubPolicyContainer("w", PNoUpdate),
        PFeedbackOutput,
        SubPolicyContainer("b", PKeepDim),
        SubPolicyContainer("w", PModifyDimNumIs(2)),
    )
    assert sub_policies(c, "w").items == (PNoUpdate, PModifyDimNumIs(2), PFeedbackOutput)


def test_other_names_are_dropped_and_nested_ones_kept() -> None:
    inner = SubPolicyContainer("act", PFeedbackNoOutput)
    c = PolicyContainer(
        PUpdate,
        SubPolicyContainer("mlp", PKeepDim, inner),
        SubPolicyContainer("other", PNoUpdate),
    )
    mlp = sub_policies(c, "mlp")
    assert mlp.items == (PKeepDim, inner, PUpdate)
    act = sub_policies(mlp, "act")
    assert act.items == (PFeedbackNoOutput, PKeepDim, PUpdate)
    assert policy_select(GradPolicy, act) == GradPolicy(is_update=True, is_feedback_output=False)


def test_nested_override_three_levels_deep() -> None:
    c = PolicyContainer(
        PUpdate,
        SubPolicyContainer(
            "a", SubPolicyContainer("b", PNoUpdate, SubPolicyContainer("c", PUpdate))
        ),
    )
    a = sub_policies(c, "a")
    b = sub_policies(a, "b")
    leaf = sub_policies(b, "c")
    assert [policy_select(GradPolicy, x).is_update for x in (c, a, b, leaf)] == [
        True,
        True,
        False,
        True,
    ]


def test_an_unnamed_sublayer_gets_the_plain_policies() -> None:
    c = PolicyContainer(PUpdate, SubPolicyContainer("w", PNoUpdate))
    assert sub_policies(c, "missing") == plain_policies(c)


def test_change_policy_replaces_and_appends_at_the_end() -> None:
    sub = SubPolicyContainer("w", PFeedbackNoOutput)
    c = PolicyContainer(PFeedbackNoOutput, sub, PUpdate)
    changed = change_policy(PFeedbackOutput, c)
    assert changed.items == (sub, PUpdate, PFeedbackOutput)
    assert policy_select(GradPolicy, changed).is_feedback_output is True
    assert policy_select(GradPolicy, sub_policies(changed, "w")).is_feedback_output is False


def test_change_policy_adds_a_minor_that_was_absent() -> None:
    assert change_policy(PKeepDim, PolicyContainer(PUpdate)).items == (PUpdate, PKeepDim)

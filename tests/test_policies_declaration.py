"""Declaring majors, objects and templates: what is checked, and the error messages."""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import pytest

from typed_nn.policies import (
    DimPolicy,
    GradPolicy,
    PActFuncIs,
    PDimArrayIs,
    PInitializerIs,
    PModifyDimNumIs,
    PNoUpdate,
    PolicyConflictError,
    PolicyContainer,
    PolicyError,
    PolicyMajor,
    PolicyObject,
    PolicyTemplate,
    PRandomGeneratorIs,
    PSeqIDsAre,
    PUpdate,
    PUpdateIs,
    PValueTypeIs,
    RnnPolicy,
    SeqID,
    SubPolicyContainer,
    VariadicPolicyTemplate,
    policy_select,
)


@dataclass(frozen=True)
class OptimPolicy(PolicyMajor):
    """A user-defined major with two minors."""

    momentum: float = 0.0
    nesterov: bool = False


@dataclass(frozen=True)
class ShapesPolicy(PolicyMajor):
    """A major exercising every supported annotation form."""

    mode: Literal["a", "b"] = "a"
    base: type[Exception] = ValueError
    pair: tuple[int, str] = (0, "")
    hook: Callable[[int], int] | None = None


class LayerInput:
    """A port key class."""


def test_user_defined_major_end_to_end() -> None:
    p_nesterov = PolicyObject(OptimPolicy, "nesterov", True, name="PNesterov")
    p_momentum_is = PolicyTemplate(OptimPolicy, "momentum", name="PMomentumIs")
    c = PolicyContainer(p_nesterov, p_momentum_is(0.9), PUpdate)
    assert policy_select(OptimPolicy, c) == OptimPolicy(momentum=0.9, nesterov=True)
    assert policy_select(OptimPolicy, PolicyContainer()) == OptimPolicy()
    assert repr(p_momentum_is(1)) == "PMomentumIs(1)"
    with pytest.raises(PolicyError, match=r"two policies set OptimPolicy\.nesterov"):
        PolicyContainer(p_nesterov, PolicyObject(OptimPolicy, "nesterov", False))  # type: ignore[policy-conflict]


def test_unnamed_objects_print_what_they_set() -> None:
    obj = PolicyObject(OptimPolicy, "nesterov", True)
    assert repr(obj) == "OptimPolicy.nesterov=True"
    assert obj.describe() == "OptimPolicy.nesterov = True"
    assert PUpdate.describe() == "PUpdate (GradPolicy.is_update = True)"


def test_objects_are_equal_by_meaning_and_immutable() -> None:
    assert PUpdateIs(True) == PUpdate
    assert hash(PUpdateIs(True)) == hash(PUpdate)
    assert PUpdate.key == (GradPolicy, "is_update")
    with pytest.raises(AttributeError, match="policy objects are immutable"):
        PUpdate._value = False


def test_unknown_minor_is_an_error_with_a_suggestion() -> None:
    with pytest.raises(
        PolicyError,
        match=r"(?s)cannot declare policy GradPolicy\.is_updat=True: "
        r"GradPolicy has no minor 'is_updat'\..*declared : is_update, is_feedback_output"
        r".*received : 'is_updat'.*hint: did you mean 'is_update'\?",
    ):
        PolicyObject(GradPolicy, "is_updat", True)  # type: ignore[policy-minor]


def test_unknown_minor_in_a_template() -> None:
    with pytest.raises(PolicyError, match=r"template PFoo: DimPolicy has no minor 'foo'"):
        PolicyTemplate(DimPolicy, "foo", name="PFoo")  # type: ignore[policy-minor]
    with pytest.raises(PolicyError, match=r"template DimPolicy\.bar: DimPolicy has no minor"):
        VariadicPolicyTemplate(DimPolicy, "bar")  # type: ignore[policy-minor]


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (
            lambda: PModifyDimNumIs("x"),  # type: ignore[arg-type]
            r"PModifyDimNumIs\('x'\): DimPolicy\.modify_dim_num takes int",
        ),
        (lambda: PModifyDimNumIs(True), r"received : True \(bool\)"),  # type: ignore[policy-minor]
        (lambda: PUpdateIs(1), r"GradPolicy\.is_update takes bool"),  # type: ignore[arg-type]
        (lambda: PDimArrayIs(1, "a"), r"DimPolicy\.dim_array takes tuple\[int, \.\.\.\]"),  # type: ignore[arg-type]
        (lambda: PActFuncIs(3), r"LayerStructurePolicy\.act_func takes type \| None"),  # type: ignore[arg-type]
        (lambda: PValueTypeIs(1.5), r"received : 1\.5 \(float\)"),  # type: ignore[arg-type]
        (lambda: PSeqIDsAre(LayerInput), r"RnnPolicy\.seq_ids takes tuple\[SeqID, \.\.\.\]"),  # type: ignore[arg-type]
        (lambda: PolicyObject(OptimPolicy, "momentum", "fast"), r"like the default 0\.0"),  # type: ignore[policy-minor]
        (lambda: PolicyObject(ShapesPolicy, "mode", "c"), r"takes Literal\['a', 'b'\]"),  # type: ignore[policy-minor]
        (lambda: PolicyObject(ShapesPolicy, "base", int), r"ShapesPolicy\.base takes"),  # type: ignore[policy-minor]
        (lambda: PolicyObject(ShapesPolicy, "pair", (1, 2)), r"received : \(1, 2\) \(tuple\)"),  # type: ignore[policy-minor]
        (lambda: PolicyObject(ShapesPolicy, "pair", (1,)), r"ShapesPolicy\.pair takes"),  # type: ignore[policy-minor]
        (lambda: PolicyObject(ShapesPolicy, "hook", 3), r"ShapesPolicy\.hook takes"),  # type: ignore[policy-minor]
    ],
)
def test_wrong_value_type_is_an_error(make: Callable[[], object], pattern: str) -> None:
    with pytest.raises(PolicyError, match=pattern):
        make()


def test_right_values_of_every_annotation_form() -> None:
    ok = [
        PolicyObject(ShapesPolicy, "mode", "b"),
        PolicyObject(ShapesPolicy, "base", KeyError),
        PolicyObject(ShapesPolicy, "pair", (1, "x")),
        PolicyObject(ShapesPolicy, "hook", abs),
        PolicyObject(OptimPolicy, "momentum", 1),
        PInitializerIs(LayerInput),
        PRandomGeneratorIs(object()),
        PSeqIDsAre(SeqID(LayerInput, 0), SeqID(LayerInput, 1)),
    ]
    assert len(PolicyContainer(*ok[:5])) == 5
    assert policy_select(RnnPolicy, PolicyContainer(ok[-1])).seq_ids[1] == SeqID(LayerInput, 1)


def test_unhashable_value_is_an_error() -> None:
    with pytest.raises(PolicyError, match=r"(?s)its value is not hashable.*hint: use an immutable"):
        PolicyObject(ShapesPolicy, "hook", type("F", (), {"__call__": abs, "__hash__": None})())


def test_not_a_policy_item_is_an_error() -> None:
    with pytest.raises(PolicyError, match=r"(?s)PModifyDimNumIs is not a policy object.*call the"):
        PolicyContainer(PModifyDimNumIs)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match=r"unpack its items: PolicyContainer\(\*container"):
        PolicyContainer(PolicyContainer(PUpdate))  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match=r"(?s)'update' is not a policy object.*pass policy"):
        SubPolicyContainer("w", "update")  # type: ignore[arg-type]


def test_sub_container_name_must_be_a_non_empty_str() -> None:
    with pytest.raises(PolicyError, match=r"sublayer name must be a non-empty str"):
        SubPolicyContainer("")
    with pytest.raises(PolicyError, match=r"received : 3 \(int\)"):
        SubPolicyContainer(3)  # type: ignore[arg-type]


def test_seq_id_is_checked() -> None:
    assert SeqID(LayerInput).dim == 0
    with pytest.raises(PolicyError, match=r"(?s)cannot declare SeqID.*SeqID\(LayerInput, -1\)"):
        SeqID(LayerInput, -1)
    with pytest.raises(PolicyError, match=r"received : SeqID\('x', 0\)"):
        SeqID("x", 0)  # type: ignore[arg-type]


class NotAMajor:
    flag: bool = False


class NotFrozen(PolicyMajor):
    flag: bool = False


NotFrozen = dataclass(NotFrozen)  # type: ignore[misc]


@dataclass(frozen=True)
class NoDefault(PolicyMajor):
    flag: bool


@dataclass(frozen=True)
class Unsupported(PolicyMajor):
    sizes: list[int] = dataclasses.field(default_factory=list)


@dataclass(frozen=True)
class Unresolvable(PolicyMajor):
    flag: "Missing" = None  # type: ignore[name-defined]  # noqa: F821


@pytest.mark.parametrize(
    ("major", "pattern"),
    [
        (NotAMajor, r"cannot use NotAMajor as a policy major: not a PolicyMajor subclass"),
        (NotFrozen, r"(?s)NotFrozen.*not a frozen dataclass.*@dataclass\(frozen=True\)"),
        (NoDefault, r"minor 'flag' has no default"),
        (Unsupported, r"minor 'sizes' is annotated list\[int\]"),
        (Unresolvable, r"(?s)an annotation cannot be resolved.*define the major"),
    ],
)
def test_bad_majors_are_refused_on_first_use(major: type[PolicyMajor], pattern: str) -> None:
    with pytest.raises(PolicyError, match=pattern):
        PolicyTemplate(major, "flag")


def test_a_conflict_in_make_train_layer_names_the_users_line() -> None:
    import sys

    import typed_nn as tn
    from typed_nn.layers import AddLayer, LayerInMap, LeftOperand, RightOperand, make_train_layer

    m = tn.Matrix[tn.Float32, tn.CPU]
    in_map = LayerInMap({LeftOperand: m, RightOperand: m})
    line = sys._getframe().f_lineno + 3
    match = rf"(?s)GradPolicy\.is_update.*built at : test_policies_declaration\.py:{line}\n"
    with pytest.raises(PolicyConflictError, match=match):
        make_train_layer(AddLayer, in_map, PUpdate, PNoUpdate)  # type: ignore[policy-conflict]

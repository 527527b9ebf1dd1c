"""Debug mode checks TypeVar-generic annotations (``Matrix[FE, Dv]``) at run time.

Runs with TYPED_NN_DEBUG=1 only (``test_debug.py`` runs it in such a subprocess): the concrete
parts (a Matrix's rank), TypeVar bounds, and each TypeVar bound once per call.
"""

from __future__ import annotations

import importlib
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from beartype.roar import BeartypeCallHintParamViolation, BeartypeCallHintReturnViolation
from jaxtyping import TypeCheckError

import typed_nn as tn
import typed_nn.debug
from typed_nn.debug.checker import beartype_tagged
from typed_nn.tags import FE, Dv

pytestmark = pytest.mark.skipif(
    not typed_nn.debug.is_enabled(),
    reason="debug mode is off: test_debug.py runs this file with TYPED_NN_DEBUG=1",
)

GENERIC_CODE = """
from __future__ import annotations
from typing import Generic
import typed_nn as tn
from typed_nn import ops
from typed_nn.tags import D, FE, Dv

def first_row(x: tn.Matrix[FE, Dv]) -> tn.Matrix[FE, Dv]:
    return x[0]  # a Vector: the declared rank is wrong

def add(x: tn.Matrix[FE, Dv], y: tn.Matrix[FE, Dv]) -> tn.Matrix[FE, Dv]:
    return x + ops.astype(y, x.elem)

def double(x: tn.TensorLike[FE, Dv, D]) -> tn.TensorLike[FE, Dv, D]:
    return x * 2.0

def drop_axis(x: tn.TensorLike[FE, Dv, D]) -> tn.TensorLike[FE, Dv, D]:
    return x[0]

def widen(x: tn.Matrix[FE, Dv]) -> tn.Matrix[FE, Dv]:
    return ops.astype(x, tn.Float64)

def on_cpu(x: tn.Matrix[FE, tn.CPU]) -> tn.Matrix[FE, tn.CPU]:
    return x

class Layer(Generic[FE]):
    def apply(self, x: tn.Matrix[FE, Dv], w: tn.Matrix[FE, Dv]) -> tn.Matrix[FE, Dv]:
        return x @ w
"""

_names = itertools.count()


def load(tmp_path: Path, *, shapes: bool) -> ModuleType:
    name = f"debug_generic_pkg_{next(_names)}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(GENERIC_CODE)
    sys.path.insert(0, str(tmp_path))
    try:
        typed_nn.debug.install(name, shapes=shapes)
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


@pytest.fixture(params=[True, False], ids=["jaxtyping", "claw"])
def generic_module(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ModuleType]:
    module = load(tmp_path, shapes=bool(request.param))
    yield module
    sys.modules.pop(module.__name__, None)


@pytest.fixture
def hooked(tmp_path: Path) -> Iterator[ModuleType]:
    module = load(tmp_path, shapes=True)
    yield module
    sys.modules.pop(module.__name__, None)


def typed_nn_cause(error: BaseException) -> tn.TypedNNError:
    """The first typed_nn error behind jaxtyping's TypeCheckError (the deepest in its chain:
    jaxtyping re-checks one argument at a time while handling it, under a stub's name)."""
    found: tn.TypedNNError | None = None
    seen: BaseException | None = error
    while seen is not None:
        found = seen if isinstance(seen, tn.TypedNNError) else found
        seen = seen.__cause__ or seen.__context__
    assert found is not None, f"no typed_nn error behind {error!r}"
    return found


def as_any(x: object) -> Any:
    """``x`` seen through ``Any``: how a wrong value slips past mypy."""
    return x


def m(elem: type[tn.ElemTag] = tn.Float32) -> Any:
    """A 2x3 matrix seen through Any (how wrong data slips past mypy)."""
    matrix: Any = tn.ones((2, 3), elem, tn.CPU)
    return matrix


def test_valid_generic_calls_pass(generic_module: ModuleType) -> None:
    x, w = m(), tn.ones((3, 2), tn.Float32, tn.CPU)
    assert generic_module.add(x, x).numpy().tolist() == [[2.0] * 3] * 2
    assert generic_module.add(m(tn.Float64), m(tn.Float64)).elem is tn.Float64
    assert generic_module.double(x).shape == (2, 3)
    assert generic_module.double(tn.ones((4,), tn.Float16, tn.CPU)).shape == (4,)
    assert generic_module.Layer[tn.Float32]().apply(x, w).numpy().tolist() == [[3.0] * 2] * 2
    assert generic_module.on_cpu(x).shape == (2, 3)
    # each call binds afresh: Float64 after Float32 is no conflict
    assert generic_module.double(m(tn.Float64)).elem is tn.Float64


def test_a_vector_returned_as_a_generic_matrix_is_rejected(hooked: ModuleType) -> None:
    with pytest.raises(TypeCheckError) as caught:
        hooked.first_row(m())
    error = typed_nn_cause(caught.value)
    assert isinstance(error, tn.RankError)
    assert str(error) == (
        "first_row: return value has rank 1, not rank 2 (Dim2).\n"
        f"  function : {hooked.__name__}.first_row\n"
        "  declared : TensorLike[FE, Dv, Dim2]\n"
        "  received : Tensor[Float32, CPU, Dim1](3)\n"
        "hint: reshape it, or declare the rank it has: Vector is rank 1, Matrix rank 2, "
        "a TypeVar such as D any rank."
    )


def test_beartype_claw_checks_the_rank_of_a_generic_matrix(tmp_path: Path) -> None:
    module = load(tmp_path, shapes=False)
    with pytest.raises(
        BeartypeCallHintReturnViolation,
        match=r"first_row\(\) return \"Tensor\[Float32, CPU, Dim1\]\(3\)\" violates type hint "
        r"typed_nn\.data\.tensor\.TensorLike\[~FE, ~Dv, typed_nn\.tags\.Dim2\]",
    ):
        module.first_row(m())


def test_one_fe_with_two_elements_across_two_parameters_is_rejected(hooked: ModuleType) -> None:
    with pytest.raises(TypeCheckError) as caught:
        hooked.add(m(), m(tn.Float64))
    error = typed_nn_cause(caught.value)
    assert isinstance(error, tn.ElemTypeError)
    assert str(error) == (
        "add: parameter 'y' has element Float64, but FE is Float32 in this call.\n"
        f"  function : {hooked.__name__}.add\n"
        "  declared : TensorLike[FE, Dv, Dim2]\n"
        "  received : Tensor[Float64, CPU, Dim2](2, 3)\n"
        "  bound    : FE = Float32 by parameter 'x'\n"
        "hint: convert it with ops.astype(x, tn.Float32), or annotate with a second TypeVar "
        "where elements may differ."
    )


def test_a_result_whose_element_differs_from_its_parameters_is_rejected(
    hooked: ModuleType,
) -> None:
    with pytest.raises(TypeCheckError) as caught:
        hooked.widen(m())
    assert str(typed_nn_cause(caught.value)).startswith(
        "widen: return value has element Float64, but FE is Float32 in this call.\n"
    )
    assert "  bound    : FE = Float32 by parameter 'x'\n" in str(typed_nn_cause(caught.value))


def test_a_generic_method_binds_its_typevars_per_call(hooked: ModuleType) -> None:
    with pytest.raises(TypeCheckError) as caught:
        hooked.Layer().apply(m(), tn.ones((3, 2), tn.Float64, tn.CPU))
    assert str(typed_nn_cause(caught.value)).startswith(
        "Layer.apply: parameter 'w' has element Float64, but FE is Float32 in this call.\n"
        f"  function : {hooked.__name__}.Layer.apply\n"
    )


def test_a_rank_typevar_binds_the_rank_of_tensorlike(hooked: ModuleType) -> None:
    with pytest.raises(TypeCheckError) as caught:
        hooked.drop_axis(m())
    error = typed_nn_cause(caught.value)
    assert isinstance(error, tn.RankError)
    assert str(error).startswith(
        "drop_axis: return value has rank 1, but D is Dim2 in this call.\n"
    )
    assert "  bound    : D = Dim2 by parameter 'x'\n" in str(error)


def test_a_typevar_bound_is_respected(generic_module: ModuleType) -> None:
    ints: Any = tn.ones((2, 3), tn.Int32, tn.CPU)
    with pytest.raises((TypeCheckError, BeartypeCallHintParamViolation)) as caught:
        generic_module.double(ints)
    if isinstance(caught.value, TypeCheckError):
        assert str(typed_nn_cause(caught.value)).startswith(
            "double: parameter 'x' has element Int32, not FE (a FloatTag).\n"
        )


def test_a_concrete_device_beside_typevars_is_checked() -> None:
    class OnGpu(tn.TensorLike[tn.Float32, tn.GPU, tn.Dim2]):  # never evaluated: no cupy
        shape = (2, 2)
        elem = tn.Float32
        device = tn.GPU

        def __eq__(self, other: object) -> bool:
            return self is other

        def __hash__(self) -> int:
            return id(self)

    def on_cpu(x: tn.Matrix[FE, tn.CPU]) -> None:
        del x

    with pytest.raises(tn.DeviceError) as caught:
        beartype_tagged(on_cpu)(as_any(OnGpu()))
    assert str(caught.value).splitlines()[0] == (
        "test_a_concrete_device_beside_typevars_is_checked.<locals>.on_cpu: parameter 'x' "
        "has device GPU, not CPU."
    )
    assert str(caught.value).endswith(
        "hint: move it with ops.to_device(x, tn.CPU), or annotate with a second TypeVar "
        "where devices may differ."
    )


def test_beartype_tagged_binds_typevars_for_your_own_decorators() -> None:
    def pair(x: tn.Matrix[FE, Dv], y: tn.Matrix[FE, Dv]) -> int:
        return x.shape[0] + y.shape[0]

    checked = beartype_tagged(pair)
    assert checked(m(), m()) == 4
    with pytest.raises(tn.ElemTypeError, match=r"parameter 'y' has element Float64, but FE"):
        checked(m(), m(tn.Float64))

    # a list of generic matrices is checked item by item against the bound
    def stack(xs: list[tn.Matrix[FE, Dv]]) -> int:
        return len(xs)

    assert beartype_tagged(stack)([m()]) == 1
    with pytest.raises(tn.ElemTypeError, match=r"parameter 'xs' has element Int32, not FE"):
        beartype_tagged(stack)([m(tn.Int32)])

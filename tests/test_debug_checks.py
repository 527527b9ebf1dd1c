"""What debug mode catches that mypy cannot (runs with TYPED_NN_DEBUG=1 only).

``test_debug.py`` runs this file in a ``TYPED_NN_DEBUG=1`` subprocess during the ordinary run;
the CI's second, debug-mode run of the whole suite runs it directly.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from beartype import beartype
from beartype.roar import BeartypeCallHintParamViolation
from helpers import t32
from jaxtyping import Float32, TypeCheckError, jaxtyped

import typed_nn as tn
import typed_nn.debug
from typed_nn.debug.checker import beartype_tagged
from typed_nn.ops import Operation

pytestmark = pytest.mark.skipif(
    not typed_nn.debug.is_enabled(),
    reason="debug mode is off: test_debug.py runs this file with TYPED_NN_DEBUG=1",
)


_names = itertools.count()

USER_CODE = """
from __future__ import annotations
from jaxtyping import Float
import typed_nn as tn

def first_row(x: tn.Tensor[tn.Float32, tn.CPU, tn.Dim2]) -> tn.Tensor[tn.Float32, tn.CPU, tn.Dim1]:
    return x[0]

def trace_like(x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Matrix[tn.Float32, tn.CPU]:
    return x + 0.0

def affine(
    x: Float[tn.Matrix[tn.Float32, tn.CPU], "batch n_in"],
    w: Float[tn.Matrix[tn.Float32, tn.CPU], "n_in n_out"],
) -> Float[tn.Matrix[tn.Float32, tn.CPU], "batch n_out"]:
    return x @ w
"""


def load_user_package(tmp_path: Path, *, shapes: bool) -> ModuleType:
    """A fresh user package checked with ``install`` (jaxtyping's hook when ``shapes``)."""
    name = f"debug_user_pkg_{next(_names)}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(USER_CODE)
    sys.path.insert(0, str(tmp_path))
    try:
        typed_nn.debug.install(name, shapes=shapes)
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


@pytest.fixture
def user_module(tmp_path: Path) -> Iterator[ModuleType]:
    module = load_user_package(tmp_path, shapes=True)
    yield module
    sys.modules.pop(module.__name__, None)


def as_any(x: object) -> Any:
    """``x`` seen through ``Any``: how a wrong value slips past mypy (a loader, a dict, ...)."""
    return x


# --- tagged types checked by element, device and rank --------------------------------------


def test_a_float64_tensor_where_float32_is_declared_is_rejected(user_module: ModuleType) -> None:
    loaded = as_any(tn.tensor(np.zeros((2, 3)), tn.Float64, tn.CPU, tn.Dim2))
    with pytest.raises(
        TypeCheckError,
        match=r"(?s)parameter 'x'.*Actual value: Tensor\[Float64, CPU, Dim2\]\(2, 3\)"
        r".*Expected type: typed_nn\.data\.tensor\.Tensor\[typed_nn\.tags\.Float32, "
        r"typed_nn\.tags\.CPU, typed_nn\.tags\.Dim2\]",
    ):
        user_module.first_row(loaded)


def test_beartype_claw_alone_rejects_the_float64_tensor_too(tmp_path: Path) -> None:
    user_module = load_user_package(tmp_path, shapes=False)
    loaded = as_any(tn.tensor(np.zeros((2, 3)), tn.Float64, tn.CPU, tn.Dim2))
    with pytest.raises(
        BeartypeCallHintParamViolation,
        match=r"first_row\(\) parameter x=\"Tensor\[Float64, CPU, Dim2\]\(2, 3\)\" violates "
        r"type hint typed_nn\.data\.tensor\.Tensor\[typed_nn\.tags\.Float32, .*not instance of "
        r"<class \"typed_nn\.data\.tensor\.Tensor\[Float32, CPU, Dim2\]\">",
    ):
        user_module.first_row(loaded)


def test_a_rank_3_tensor_passed_as_a_matrix_through_any_is_rejected(
    user_module: ModuleType,
) -> None:
    cube = as_any(tn.zeros((2, 3, 4), tn.Float32, tn.CPU))
    with pytest.raises(
        TypeCheckError,
        match=r"(?s)parameter 'x'.*Actual value: Tensor\[Float32, CPU, Dim3\]\(2, 3, 4\)"
        r".*Expected type: typed_nn\.data\.tensor\.TensorLike\[typed_nn\.tags\.Float32, "
        r"typed_nn\.tags\.CPU, typed_nn\.tags\.Dim2\]",
    ):
        user_module.trace_like(cube)


def test_a_wrong_device_tag_is_rejected_too(user_module: ModuleType) -> None:
    class OnGpu(tn.TensorLike[tn.Float32, tn.GPU, tn.Dim2]):  # no cupy needed: never evaluated
        shape = (2, 2)
        elem = tn.Float32
        device = tn.GPU

        def __eq__(self, other: object) -> bool:
            return self is other

        def __hash__(self) -> int:
            return id(self)

    with pytest.raises(TypeCheckError, match=r"Actual value: OnGpu\[Float32, GPU, Dim2\]\(2, 2\)"):
        user_module.trace_like(as_any(OnGpu()))


def test_mismatched_named_sizes_across_two_arguments_are_rejected(user_module: ModuleType) -> None:
    x = tn.zeros((2, 3), tn.Float32, tn.CPU)
    assert user_module.affine(x, tn.zeros((3, 5), tn.Float32, tn.CPU)).shape == (2, 5)
    with pytest.raises(
        TypeCheckError,
        match=r"(?s)parameter 'w'.*Tensor\[Float32, CPU, Dim2\]\(4, 5\).*'n_in n_out'.*n_in=3",
    ):
        user_module.affine(x, tn.zeros((4, 5), tn.Float32, tn.CPU))


def test_concrete_subscriptions_are_checked_by_element_device_and_rank() -> None:
    @beartype_tagged
    def keep(x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Matrix[tn.Float32, tn.CPU]:
        return x

    @beartype_tagged
    def rows(xs: list[tn.Vector[tn.Float32, tn.CPU]] | None) -> int:
        return len(xs or [])

    x = t32([[1.0, 2.0]])
    assert keep(x) is x
    assert keep(x + x) == x + x  # lazy nodes are data too
    assert rows([t32([1.0])]) == 1
    with pytest.raises(
        BeartypeCallHintParamViolation, match=r"parameter xs=\[Tensor\[Float32, CPU, Dim2\]"
    ):
        rows([x])
    for wrong in (t32([1.0]), tn.zeros((1, 2), tn.Float64, tn.CPU)):
        with pytest.raises(
            BeartypeCallHintParamViolation,
            match=r"not instance of <class \"typed_nn\.data\.tensor\.TensorLike\[Float32, CPU, Dim2\]\">",
        ):
            keep(as_any(wrong))


def test_subscriptions_stay_ordinary_generic_aliases_in_debug_mode() -> None:
    matrix32 = tn.Matrix[tn.Float32, tn.CPU]
    assert typing.get_origin(matrix32) is tn.TensorLike
    assert typing.get_args(matrix32) == (tn.Float32, tn.CPU, tn.Dim2)

    class Fixed(tn.Tensor[tn.Float32, tn.CPU, tn.Dim2]):
        pass

    assert Fixed.__mro__[1] is tn.Tensor


# --- typed_nn's own public functions -------------------------------------------------------


def test_public_functions_are_checked_by_beartype() -> None:
    """Each public function is wrapped; the wrapper reports what the function let through
    (typed_nn's own checks leave it nothing to report: shown on a function that checks
    nothing), checking numpy numbers as the Python numbers they stand for."""
    assert getattr(tn.tensor, "__wrapped__", None) is sys.modules["typed_nn.data.factories"].tensor

    def scaled(x: float, times: int = 2) -> float:
        return x * times

    checked = typed_nn.debug.public.checked(scaled)
    assert checked(np.float32(0.5), np.int64(3)) == 1.5
    with pytest.raises(
        BeartypeCallHintParamViolation,
        match=r"scaled\(\) parameter times='3' violates type hint <class 'int'>",
    ):
        checked(0.5, as_any("3"))


def test_typed_nn_own_errors_still_win_where_they_apply() -> None:
    with pytest.raises(tn.OperandError, match=r"cannot build log: operand 1 is not typed_nn data"):
        tn.ops.log(as_any("not a tensor"))
    with pytest.raises(tn.TagError, match=r"tensor: elem must be an element tag, got CPU\."):
        tn.tensor([[1.0]], as_any(tn.CPU), tn.CPU, tn.Dim2)


def test_numbers_are_accepted_where_the_hint_takes_a_wider_number() -> None:
    """The numeric tower, as the type checkers read hints: ``tn.tensor(1.0, ...)`` (numpy's
    ``ArrayLike`` declares numbers as ``complex``) and an int for a ``float`` (tester 6)."""

    @beartype_tagged
    def scale(x: float) -> float:
        return x * 2.0

    assert scale(3) == 6.0
    checked_tensor = beartype_tagged(tn.tensor)
    for number in (1.0, 3, True):
        assert checked_tensor(number, tn.Float32, tn.CPU, tn.Dim0).shape == ()


def test_nodes_built_through_checked_functions_record_the_user_line() -> None:
    line = sys._getframe().f_lineno + 1
    node = tn.ops.exp(t32([1.0]))
    assert isinstance(node, Operation)
    assert node.built_at == f"test_debug_checks.py:{line}"


def test_enable_is_idempotent() -> None:
    wrapped = tn.ops.exp
    typed_nn.debug.enable()
    assert tn.ops.exp is wrapped
    assert len(tn.evaluate.__globals__["__name__"]) > 0  # still callable: a real function


# --- NaN / Inf ---------------------------------------------------------------------------------


def test_a_nan_from_log_of_a_negative_number_names_the_line_that_built_it() -> None:
    x = t32([[-1.0, 4.0], [1.0, 2.0]])
    line = sys._getframe().f_lineno + 1
    y = tn.ops.log(x)
    loss = tn.ops.square(y) * 2.0
    with pytest.raises(
        tn.NumericError,
        match=rf"(?s)^log produced 1 NaN \(debug mode checks every node\)\.\n"
        rf"  node      : log\[Float32, CPU, Dim2\]\(2, 2\)\n"
        rf"  produced  : 1 NaN of 4 elements\n"
        rf"  operand 1 : Tensor\[Float32, CPU, Dim2\]\(2, 2\)   range \[-1, 4\]\n"
        rf"  built at  : test_debug_checks\.py:{line}\n"
        rf"hint: log is NaN below 0",
    ):
        tn.evaluate(loss)


def test_an_inf_from_a_division_by_zero_shows_both_operands_ranges() -> None:
    x = t32([1.0, 2.0])
    line = sys._getframe().f_lineno + 1
    y = x / t32([0.5, 0.0])
    with pytest.raises(
        tn.NumericError,
        match=rf"(?s)^div produced 1 Inf.*operand 1 : .*range \[1, 2\]\n"
        rf"  operand 2 : .*range \[0, 0\.5\]\n  built at  : test_debug_checks\.py:{line}\n"
        rf"hint: a division by zero",
    ):
        y.numpy()


def test_a_nan_is_also_caught_when_evaluated_through_a_plan() -> None:
    handle = tn.ops.sqrt(t32([-4.0])).eval_register()
    with pytest.raises(tn.NumericError, match=r"sqrt produced 1 NaN"):
        tn.EvalPlan.eval()
    del handle


def test_an_inf_already_in_the_data_flows_through_without_error() -> None:
    g = t32([np.inf, np.inf])
    x = t32([-1.0, 1.0])
    assert tn.ops.relu_grad(g, x).numpy().tolist() == [0.0, np.inf]


def test_a_nan_made_from_infs_already_in_the_data_is_reported() -> None:
    inf = t32([np.inf])
    with pytest.raises(tn.NumericError, match=r"(?s)sub produced 1 NaN.*range \[inf, inf\]"):
        (inf - inf).numpy()


# --- integer overflow --------------------------------------------------------------------------


def int32(values: list[int]) -> tn.Tensor[tn.Int32, tn.CPU, tn.Dim1]:
    return tn.tensor(values, tn.Int32, tn.CPU, tn.Dim1)


def test_an_int32_sum_that_wraps_around_names_the_node_and_the_exact_value() -> None:
    big = int32([2**31 - 1, 5])
    line = sys._getframe().f_lineno + 1
    total = tn.ops.reduce_sum(big)
    with pytest.raises(
        tn.NumericError,
        match=rf"(?s)^reduce_sum overflowed Int32 \(debug mode checks integer arithmetic\)\.\n"
        rf"  node      : reduce_sum\[Int32, CPU, Dim0\]\(\)\n"
        rf"  wrapped   : 1 of 1 elements\n"
        rf"  first     : -2147483644 instead of 2147483652\n"
        rf"  operand 1 : Tensor\[Int32, CPU, Dim1\]\(2\)   range \[5, 2147483647\]\n"
        rf"  built at  : test_debug_checks\.py:{line}\n"
        rf"hint: Int32 wraps around outside -2147483648 \.\. 2147483647: compute in Int64",
    ):
        total.numpy()


WRAPPING = [
    ("add", [2**31 - 1, 1], lambda x: x + 1, r"-2147483648 instead of 2147483648 at index \[0\]"),
    (
        "sub",
        [2**31 - 1, 1],
        lambda x: x - (-1),
        r"-2147483648 instead of 2147483648 at index \[0\]",
    ),
    ("mul", [2**31 - 1, 1], lambda x: x * x, r"1 instead of 4611686014132420609 at index \[0\]"),
    ("dot", [2**16, 2**16], lambda x: x @ x, r"0 instead of 8589934592\n"),
    ("negative", [1, -(2**31)], lambda x: -x, r"-2147483648 instead of 2147483648 at index \[1\]"),
    ("abs", [1, -(2**31)], abs, r"-2147483648 instead of 2147483648 at index \[1\]"),
]


@pytest.mark.parametrize(("op", "values", "build", "first"), WRAPPING, ids=[w[0] for w in WRAPPING])
def test_int32_arithmetic_that_wraps_around_is_reported(
    op: str, values: list[int], build: Callable[[Any], Any], first: str
) -> None:
    with pytest.raises(tn.NumericError, match=rf"(?s)^{op} overflowed Int32.*first     : {first}"):
        build(int32(values)).numpy()


def test_int32_arithmetic_that_fits_passes_and_int64_is_not_checked() -> None:
    x = int32([2**31 - 2, -(2**31)])
    assert (x + 1).numpy().tolist() == [2**31 - 1, -(2**31) + 1]
    assert tn.ops.reduce_sum(x).numpy() == -2
    wide = tn.tensor([2**63 - 1], tn.Int64, tn.CPU, tn.Dim1)
    assert (wide + 1).numpy().tolist() == [-(2**63)]  # numpy semantics, documented


def _rows(x: Float32[tn.TensorLike[Any, Any, Any], "n m"]) -> int:  # noqa: F722 - jaxtyping shape
    """jaxtyping checks this through ``.dtype`` and ``.shape`` (the array type is not concrete)."""
    return int(x.shape[0])


rows: Callable[[tn.TensorLike[Any, Any, Any]], int] = jaxtyped(typechecker=beartype)(_rows)


def test_jaxtyping_reads_the_dtype_of_tensors_and_lazy_nodes() -> None:
    x = tn.zeros((2, 3), tn.Float32, tn.CPU)
    assert (x.dtype, (x + x).dtype) == (np.dtype(np.float32), np.dtype(np.float32))
    assert rows(x + x) == 2
    with pytest.raises(TypeCheckError, match=r"Actual value: Tensor\[Float64, CPU, Dim2\]\(2, 3\)"):
        rows(tn.zeros((2, 3), tn.Float64, tn.CPU))


@pytest.mark.parametrize(
    ("values", "elem", "into", "first"),
    [
        ([3e9, 1.0], tn.Float64, tn.Int32, r"3000000000\.0 at index \[0\], Int32 is -2147483648"),
        ([1.0, float("nan")], tn.Float32, tn.Int64, r"nan at index \[1\], Int64 is"),
        ([1.0, float("inf")], tn.Float64, tn.Int32, r"inf at index \[1\], Int32 is"),
        ([3_000_000_000, 1], tn.Int64, tn.Int32, r"3000000000 at index \[0\], Int32 is"),
    ],
)
def test_a_cast_to_an_integer_type_that_cannot_hold_a_value_is_reported(
    values: list[float], elem: Any, into: Any, first: str
) -> None:
    """numpy gives INT_MIN for NaN and inf and wraps a large value, silently."""
    x = tn.tensor(np.array(values), elem, tn.CPU, tn.Dim1)
    with pytest.raises(
        tn.NumericError,
        match=rf"(?s)^astype to {into.__name__} met values it cannot hold.*first        : {first}",
    ):
        tn.ops.astype(x, into).numpy()


def test_a_cast_to_an_integer_type_in_range_truncates_as_numpy_does() -> None:
    x = tn.tensor(np.array([2.5, -3.7, 2.0**31 - 1]), tn.Float64, tn.CPU, tn.Dim1)
    assert tn.ops.astype(x, tn.Int32).numpy().tolist() == [2, -3, 2**31 - 1]

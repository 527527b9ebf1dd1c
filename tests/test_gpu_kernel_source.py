"""Kernel source generation and the kernel cache (pure Python: no GPU needed).

The generated expressions are also *run*: their loop bodies are plain C, compiled here with
the host's C++ compiler and compared with the numpy backend, op by op and dtype by dtype.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_fakes import RecordingKernel, have_compiler, run_on_host
from helpers import assert_close

import typed_nn as tn
from typed_nn.backends.cupy.kernel_cache import KernelCache
from typed_nn.backends.cupy.kernel_source import (
    Input,
    Ref,
    RegionSpec,
    Step,
    expression,
    kernel_source,
    supports,
)
from typed_nn.ops.declare import catalogue, implementation
from typed_nn.tags import Float32, Float64

X, Y = Ref("in", 0), Ref("in", 1)


def _unary(op: str, dtype: str) -> RegionSpec:
    return RegionSpec((Input("array", dtype),), (Step(op, (X,), dtype),))


def test_sigmoid_has_a_float_and_a_double_spelling() -> None:
    f32 = kernel_source(_unary("sigmoid", "float32"))
    f64 = kernel_source(_unary("sigmoid", "float64"))
    assert f32.in_params == "float32 in0"
    assert f32.out_params == "float32 out0"
    assert "const float t0 = 1.0f / (1.0f + expf(-in0));" in f32.operation
    assert "const double t0 = 1.0 / (1.0 + exp(-in0));" in f64.operation
    assert "expf" not in f64.operation
    assert "1.0f" not in f64.operation


def test_lower_rank_operand_is_raw_and_read_at_i_modulo_its_count() -> None:
    spec = RegionSpec(
        (Input("array", "float32"), Input("broadcast", "float32")),
        (Step("add", (X, Y), "float32"),),
    )
    src = kernel_source(spec)
    assert src.in_params == "float32 in0, raw float32 in1"
    assert "const float bc1 = in1[i % in1.size()];" in src.operation
    assert "const float t0 = in0 + bc1;" in src.operation


def test_numbers_are_scalar_parameters_not_literals() -> None:
    spec = RegionSpec(
        (Input("array", "float64"), Input("number", "float64")),
        (Step("mul", (X, Y), "float64"),),
    )
    src = kernel_source(spec)
    assert src.in_params == "float64 in0, float64 in1"
    assert "in0 * in1" in src.operation  # a new learning rate reuses the kernel


def test_steps_chain_through_registers_and_the_last_is_the_output() -> None:
    spec = RegionSpec(
        (Input("array", "float32"), Input("number", "float32")),
        (
            Step("mul", (X, Y), "float32"),
            Step("tanh", (Ref("step", 0),), "float32"),
            Step("add", (Ref("step", 1), X), "float32"),
        ),
    )
    lines = kernel_source(spec).operation.splitlines()
    assert lines == [
        "const float t0 = in0 * in1;",
        "const float t1 = tanhf(t0);",
        "const float t2 = t1 + in0;",
        "out0 = t2;",
    ]


def test_kernel_names_are_identifiers_unique_per_structure() -> None:
    a = kernel_source(_unary("exp", "float32")).name
    b = kernel_source(_unary("exp", "float64")).name
    c = kernel_source(_unary("log", "float32")).name
    assert len({a, b, c}) == 3
    assert all(re.fullmatch(r"typed_nn_[a-z_0-9]+", n) for n in (a, b, c))
    assert a == kernel_source(_unary("exp", "float32")).name


def test_supports_names_the_ops_and_dtypes_a_kernel_can_compute() -> None:
    assert supports("sigmoid", ("float32",))
    assert not supports("softmax", ("float32",))
    assert not supports("add", ("complex64",))


def test_cache_builds_one_kernel_per_structure_and_dtype() -> None:
    made: list[RecordingKernel] = []

    def factory(*source: str) -> RecordingKernel:
        made.append(RecordingKernel(*source))
        return made[-1]

    cache = KernelCache(factory)
    first = cache.get(_unary("exp", "float32"))
    assert cache.get(_unary("exp", "float32")) is first  # an equal spec built anew: a hit
    cache.get(_unary("exp", "float64"))
    cache.get(_unary("log", "float32"))
    assert (cache.hits, cache.misses, len(cache), len(made)) == (1, 3, 3, 3)
    assert first.source[2] == kernel_source(_unary("exp", "float32")).operation
    cache.clear()
    assert len(cache) == 0


# --- values, on the host ----------------------------------------------------------------------

_DOMAIN = {
    "log": (0.1, 3.0),
    "sqrt": (0.1, 3.0),
    "asin": (-0.9, 0.9),
    "acos": (-0.9, 0.9),
    "acosh": (1.1, 3.0),
    "tan": (-1.2, 1.2),
}


_EXPRESSION_OPS = sorted(name for name, d in catalogue().items() if d.cuda is not None)


def _arity(op: str) -> int:
    return 1 + max(int(d) for d in re.findall(r"\{(\d)\}", expression(op) or ""))


def _operands(op: str, dtype: str, rng: np.random.Generator) -> list[Any]:
    base = op.removesuffix("_grad")
    lo, hi = _DOMAIN.get(base, (-3.0, 3.0))
    n = _arity(op)
    values = [rng.uniform(lo, hi, 24).astype(dtype) for _ in range(n)]
    if op == "where":
        values[0] = rng.integers(0, 2, 24).astype(np.int32)
    if op in ("div",):
        values[1] = np.where(np.abs(values[1]) < 0.5, 1.5, values[1]).astype(dtype)
    if op in ("sign", "relu", "abs", "relu_grad", "abs_grad"):
        values[-1][:3] = 0
    if op == "sigmoid":
        values[0][:2] = (-100.0, 100.0)  # e^-x overflows: the result is exactly 0
    return values


def _single_op(op: str, operands: list[Any]) -> RegionSpec:
    inputs = tuple(Input("array", str(v.dtype)) for v in operands)
    dtype = str(operands[-1].dtype)
    args = tuple(Ref("in", k) for k in range(len(operands)))
    return RegionSpec(inputs, (Step(op, args, dtype),))


@pytest.mark.skipif(not have_compiler(), reason="no C++ compiler (g++) on PATH")
@pytest.mark.parametrize("elem", [Float32, Float64])
def test_every_expression_equals_the_numpy_backend(elem: type[tn.Float32], tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    dtype = str(np.dtype(elem.dtype))
    cases = []
    for op in _EXPRESSION_OPS:
        operands = _operands(op, dtype, rng)
        spec = _single_op(op, operands)
        inputs = [("array", inp.dtype, v) for inp, v in zip(spec.inputs, operands, strict=True)]
        cases.append((op, operands, (kernel_source(spec), inputs, 24)))
    results = run_on_host([case for _, _, case in cases], tmp_path)
    for (op, operands, _), got in zip(cases, results, strict=True):
        with np.errstate(all="ignore"):
            expected = implementation(op, tn.CPU)(*operands)
        assert_close(got.astype(dtype), expected, elem)


@pytest.mark.skipif(not have_compiler(), reason="no C++ compiler (g++) on PATH")
def test_integer_expressions_equal_the_numpy_backend(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    ops = ["add", "sub", "mul", "negative", "abs", "sign", "square", "maximum", "minimum", "relu"]
    cases = []
    for op in ops:
        operands = [rng.integers(-5, 6, 24).astype(np.int32) for _ in range(_arity(op))]
        spec = _single_op(op, operands)
        cases.append((kernel_source(spec), [("array", "int32", v) for v in operands], 24))
    results = run_on_host(cases, tmp_path)
    for op, got, (_, inputs, _) in zip(ops, results, cases, strict=True):
        expected = implementation(op, tn.CPU)(*(v for _, _, v in inputs))
        np.testing.assert_array_equal(got.astype(np.int32), expected, err_msg=op)


@pytest.mark.skipif(not have_compiler(), reason="no C++ compiler (g++) on PATH")
def test_broadcast_and_number_inputs_read_like_numpy(tmp_path: Path) -> None:
    spec = RegionSpec(
        (Input("array", "float32"), Input("broadcast", "float32"), Input("number", "float32")),
        (Step("mul", (X, Ref("in", 2)), "float32"), Step("add", (Ref("step", 0), Y), "float32")),
    )
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    b = np.array([10.0, 20.0, 30.0], np.float32)
    inputs = [("array", "float32", x), ("broadcast", "float32", b), ("number", "float32", 0.5)]
    (got,) = run_on_host([(kernel_source(spec), inputs, x.size)], tmp_path)
    np.testing.assert_array_equal(got.reshape(4, 3), x * np.float32(0.5) + b)

"""Float16 and BFloat16: factories, casts, accumulation in float32, formats and devices."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import typed_nn as tn
from typed_nn import CPU, GPU, BFloat16, Dim1, Dim2, Float16, Float32, ops
from typed_nn.debug import is_enabled as debug_enabled
from typed_nn.evaluate import options
from typed_nn.evaluate.executor import by_node
from typed_nn.tags import FloatTag, accumulation_dtype

HALVES = [Float16, BFloat16]
BF16 = np.dtype(ml_dtypes.bfloat16)
rng = np.random.default_rng(36)


def _eps(elem: type[FloatTag]) -> float:
    """One unit in the last place at 1.0: 2**-10 for Float16, 2**-7 for BFloat16."""
    return 2.0**-10 if elem is Float16 else 2.0**-7


def _half(values: Any, elem: type[FloatTag], dim: Any = Dim2) -> tn.Tensor[Any, Any, Any]:
    return tn.tensor(np.asarray(values, np.float32), elem, CPU, dim)


def _three_ways(expr: Any) -> list[np.ndarray[Any, Any]]:
    """``expr`` by the compiled program (fused), compiled without fusion, and node by node
    (debug mode's path)."""
    fused = tn.evaluate(expr).numpy()
    with options.using(fuse=False, specialise=False):
        plain = tn.evaluate(expr * 1.0).numpy()  # a new node: not the cached value
    (node_by_node,) = by_node([expr + 0.0])
    return [fused, plain, node_by_node.numpy()]


# --- tags and factories ---------------------------------------------------------------------


def test_tags_carry_their_dtypes() -> None:
    assert Float16.dtype == np.dtype(np.float16)
    assert BFloat16.dtype == BF16
    assert tn.tags.elem_of_dtype(BF16) is BFloat16
    assert accumulation_dtype(BF16) == np.float32
    assert accumulation_dtype(np.dtype(np.float64)) == np.float64


@pytest.mark.parametrize("elem", HALVES)
def test_factories_make_16_bit_data(elem: type[FloatTag]) -> None:
    assert tn.tensor([[1.5, 2.0]], elem, CPU, Dim2).numpy().dtype == elem.dtype
    assert tn.zeros((2, 3), elem, CPU).numpy().dtype == elem.dtype
    assert tn.ones((2,), elem, CPU).numpy().dtype == elem.dtype
    assert tn.scalar(0.1, elem, CPU).numpy() == np.asarray(0.1, elem.dtype)
    assert repr(tn.zeros((2,), elem, CPU)) == f"Tensor[{elem.__name__}, CPU, Dim1](2)"


@pytest.mark.parametrize("elem", [Float16, BFloat16])
def test_erf_and_gelu_of_16_bit_data_are_float32_s_rounded(elem: type[FloatTag]) -> None:
    """Over [-10, 10]: erf's polynomials pass float16's 65504 from |x| = 3.5 (they gave NaN);
    16-bit erf is float32's, rounded once."""
    grid = np.linspace(-10.0, 10.0, 401, dtype=np.float32)
    x = tn.tensor(grid.astype(elem.dtype), elem, CPU, Dim1)
    x32 = tn.tensor(grid.astype(elem.dtype).astype(np.float32), Float32, CPU, Dim1)
    want = ops.erf(x32).numpy().astype(elem.dtype)
    np.testing.assert_array_equal(ops.erf(x).numpy(), want)
    gelu = ops.gelu(x).numpy().astype(np.float32)
    assert np.isfinite(gelu).all()
    eps = 2.0**-10 if elem is Float16 else 2.0**-7  # 1 + erf(x) in 16 bits: cancellation
    np.testing.assert_allclose(gelu, ops.gelu(x32).numpy(), rtol=2e-2, atol=2 * eps)
    slope = tn.grad(ops.reduce_sum(ops.gelu(x)), x).numpy().astype(np.float32)
    assert np.isfinite(slope).all()


def test_import_typed_nn_leaves_ml_dtypes_until_bfloat16_is_used() -> None:
    code = (
        "import sys, typed_nn as tn\n"
        "x = tn.zeros((2,), tn.Float16, tn.CPU) + 1.0; x.numpy()\n"
        "before = 'ml_dtypes' in sys.modules\n"
        "tn.zeros((2,), tn.BFloat16, tn.CPU)\n"
        "print(before, 'ml_dtypes' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_bfloat16_without_ml_dtypes_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes fails
    monkeypatch.setattr(tn.tags, "_bfloat16", None)
    with pytest.raises(tn.MissingDependencyError, match=r"typed_nn\[bf16\]"):
        tn.zeros((2,), BFloat16, CPU)


@pytest.mark.parametrize("elem", HALVES)
def test_mixing_16_and_32_bits_is_an_error_when_built(elem: type[FloatTag]) -> None:
    h = tn.zeros((2, 3), elem, CPU)
    f = tn.zeros((2, 3), Float32, CPU)
    pattern = rf"(?s)different element types.*{elem.__name__}.*Float32.*ops.astype"
    with pytest.raises(tn.ElemTypeError, match=pattern):
        _ = h + f  # type: ignore[operator]
    w = tn.zeros((3, 2), Float32, CPU)
    with pytest.raises(tn.ElemTypeError):
        _ = h @ w  # type: ignore[operator]


# --- casts and gradients --------------------------------------------------------------------


@pytest.mark.parametrize("elem", HALVES)
def test_astype_both_ways_rounds_as_numpy(elem: type[FloatTag]) -> None:
    values = rng.normal(size=(3, 4)).astype(np.float32)
    x = tn.tensor(values, Float32, CPU, Dim2)
    down = ops.astype(x, elem)
    np.testing.assert_array_equal(down.numpy(), values.astype(elem.dtype))
    back = ops.astype(down, Float32).numpy()
    np.testing.assert_array_equal(back, values.astype(elem.dtype).astype(np.float32))
    np.testing.assert_allclose(back, values, rtol=_eps(elem))


@pytest.mark.parametrize("elem", HALVES)
def test_gradient_through_astype_is_cast_back(elem: type[FloatTag]) -> None:
    """Float32 master weights, a 16-bit forward: the gradient arrives as Float32."""
    w0 = rng.normal(size=(4, 3)).astype(np.float32)
    x0 = rng.normal(size=(5, 4)).astype(np.float32)
    w = tn.tensor(w0, Float32, CPU, Dim2)
    x = tn.tensor(x0, elem, CPU, Dim2)
    y = ops.tanh(x @ ops.astype(w, elem))
    loss = ops.reduce_mean(ops.square(y))
    g = tn.grad(loss, w)
    assert g.elem is Float32
    xr = x0.astype(elem.dtype).astype(np.float64)
    yr = np.tanh(xr @ w0.astype(elem.dtype).astype(np.float64))
    expected = xr.T @ (2 * yr * (1 - yr**2) / yr.size)
    np.testing.assert_allclose(g.numpy(), expected, rtol=0.05, atol=8 * _eps(elem) * 0.1)


# --- accumulation in float32 ----------------------------------------------------------------


def test_a_sum_of_1e5_bfloat16_ones_is_1e5() -> None:
    ones = tn.ones((100_000,), BFloat16, CPU)
    assert np.ones(100_000, BF16).sum() == 256  # numpy alone: the running sum stalls
    for total in _three_ways(ops.reduce_sum(ones)):
        assert total.dtype == BF16
        assert abs(float(total) - 1e5) <= 1e3
    assert float(ops.reduce_mean(ones).numpy()) == 1.0


def test_a_sum_of_1e5_float16_values_is_exact_to_float16() -> None:
    """Float16 cannot hold 1e5 (its largest value is 65504): the column sums of 1e5 rows of
    quarters are 25000 exactly (numpy adds such rows one by one in float16: 512)."""
    quarters = np.full((100_000, 2), 0.25, np.float16)
    assert quarters.sum(axis=0)[0] == 512
    for total in _three_ways(ops.reduce_sum(tn.tensor(quarters, Float16, CPU, Dim2), 0)):
        assert total.dtype == np.float16
        np.testing.assert_array_equal(total, np.full(2, 25_000, np.float16))  # 24992
    assert float(ops.reduce_mean(tn.ones((100_000,), Float16, CPU)).numpy()) == 1.0


@pytest.mark.parametrize("elem", HALVES)
def test_accumulating_ops_match_float32_rounded_once(elem: type[FloatTag]) -> None:
    """Each accumulating op on 16-bit data is the float32 op on the same values, rounded
    once to 16 bits (what widening does), whichever path evaluates it."""
    a0 = rng.normal(size=(64, 300)).astype(elem.dtype)
    b0 = rng.normal(size=(300, 8)).astype(elem.dtype)
    p0 = rng.dirichlet(np.ones(300), size=64).astype(elem.dtype)
    a, b, p = (_half(v, elem) for v in (a0, b0, p0))
    a32, b32, p32 = (tn.tensor(v.astype(np.float32), Float32, CPU, Dim2) for v in (a0, b0, p0))
    cases: list[tuple[Any, Any]] = [
        (ops.reduce_sum(a, 1), ops.reduce_sum(a32, 1)),
        (ops.reduce_mean(a), ops.reduce_mean(a32)),
        (ops.softmax(a), ops.softmax(a32)),
        (ops.log_softmax(a), ops.log_softmax(a32)),
        (a @ b, a32 @ b32),
        (ops.dot(a, b), ops.dot(a32, b32)),
        (ops.nll_loss(p, ops.softmax(a)), ops.nll_loss(p32, ops.astype(ops.softmax(a), Float32))),
    ]
    for half, full in cases:
        expected = full.numpy().astype(elem.dtype)
        for got in _three_ways(half):
            assert got.dtype == elem.dtype
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("elem", HALVES)
def test_gradients_of_accumulating_ops_accumulate_in_float32(elem: type[FloatTag]) -> None:
    """softmax_grad, nll_loss_grad and the products of a backward pass widen as well: a
    16-bit gradient is the float32 gradient rounded (to a few 16-bit ulps), not one whose
    sums stalled."""
    x0 = rng.normal(size=(32, 2000)).astype(elem.dtype)
    w0 = (rng.normal(size=(2000, 10)) / 40).astype(elem.dtype)
    t0 = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)].astype(elem.dtype)

    def loss_grad(e: Any) -> np.ndarray[Any, Any]:
        x, w, t = (tn.tensor(v.astype(np.float32), e, CPU, Dim2) for v in (x0, w0, t0))
        loss = ops.nll_loss(t, ops.softmax(x @ w))
        return tn.grad(loss, w).numpy().astype(np.float32)

    full = loss_grad(Float32)
    scale = float(np.abs(full).max())
    np.testing.assert_allclose(loss_grad(elem), full, rtol=0, atol=8 * _eps(elem) * scale)


@pytest.mark.parametrize("elem", HALVES)
def test_fused_elementwise_regions_give_the_plain_numbers(elem: type[FloatTag]) -> None:
    """A fused blocked pass and the node-by-node path round at the same places."""
    x = _half(rng.normal(size=(300, 700)), elem)
    b = _half(rng.normal(size=(1, 700)), elem)
    expr = ops.tanh(x * 0.7 + b) * ops.sigmoid(x * 1.3) + 0.5 * x
    fused, plain, by_node = _three_ways(expr)
    np.testing.assert_array_equal(fused, by_node)
    np.testing.assert_array_equal(plain, by_node)
    xf = x.numpy().astype(np.float64)
    bf = b.numpy().astype(np.float64)
    exact = np.tanh(xf * 0.7 + bf) / (1 + np.exp(-xf * 1.3)) + 0.5 * xf
    np.testing.assert_allclose(by_node.astype(np.float64), exact, rtol=0, atol=16 * _eps(elem))


def test_bfloat16_numbers_keep_the_element_type() -> None:
    """ml_dtypes promotes bfloat16 * 2.0 to float32: the numbers are made bfloat16 first
    (as NEP 50 makes them float16 for Float16), on every path."""
    x = _half([[1.0, -2.0, 3.0]], BFloat16)
    for got in _three_ways((1.5 - x * 2.0) / 4.0 + 1):
        assert got.dtype == BF16
        np.testing.assert_array_equal(got, np.asarray([[0.875, 2.375, -0.125]], BF16))


def test_compiled_training_step_in_bfloat16_learns() -> None:
    """A compiled step: float32 master weights, a BFloat16 forward and backward."""
    x0 = rng.normal(size=(64, 8)).astype(np.float32)
    w_true = rng.normal(size=(8, 1)).astype(np.float32)
    w = tn.zeros((8, 1), Float32, CPU)

    @tn.compile
    def step(x: tn.Matrix[BFloat16, CPU], y: tn.Matrix[BFloat16, CPU]) -> tn.Scalar[Float32, CPU]:
        err = x @ ops.astype(w, BFloat16) - y
        loss = ops.astype(ops.reduce_mean(ops.square(err)), Float32)
        w.assign(w - 0.1 * tn.grad(loss, w))
        return loss

    x = tn.tensor(x0, BFloat16, CPU, Dim2)
    y = tn.tensor(x0 @ w_true, BFloat16, CPU, Dim2)
    losses = [float(step(x, y).numpy()) for _ in range(200)]
    assert losses[-1] < 1e-3 * losses[0]
    np.testing.assert_allclose(w.numpy(), w_true, atol=0.05)


# --- formats --------------------------------------------------------------------------------


@pytest.mark.parametrize("elem", HALVES)
def test_safetensors_round_trip(elem: type[FloatTag], tmp_path: Path) -> None:
    from typed_nn.model import load_weights, save_weights

    values = rng.normal(size=(3, 5)).astype(elem.dtype)
    path = tmp_path / "w.safetensors"
    save_weights(path, {"w": _half(values, elem)})
    into = {"w": tn.zeros((3, 5), elem, CPU)}
    assert load_weights(path, into) == ("w",)
    np.testing.assert_array_equal(into["w"].numpy(), values)
    header = path.read_bytes()[8:200].decode(errors="replace")
    assert '"dtype":"' + ("F16" if elem is Float16 else "BF16") + '"' in header


@pytest.mark.parametrize("elem", HALVES)
def test_safetensors_files_are_the_reference_implementations(
    elem: type[FloatTag], tmp_path: Path
) -> None:
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    from typed_nn.model import load_weights, save_weights

    values = rng.normal(size=(4,)).astype(elem.dtype)
    path = tmp_path / "w.safetensors"
    save_weights(path, {"v": _half(values, elem, Dim1)})
    np.testing.assert_array_equal(safetensors_numpy.load_file(str(path))["v"], values)
    theirs = tmp_path / "theirs.safetensors"
    safetensors_numpy.save_file({"v": values}, str(theirs))
    into = {"v": tn.zeros((4,), elem, CPU)}
    load_weights(theirs, into)
    np.testing.assert_array_equal(into["v"].numpy(), values)


def test_dlpack_shares_float16_and_refuses_bfloat16() -> None:
    h = tn.tensor(np.arange(4.0, dtype=np.float16), Float16, CPU, Dim1)
    a = np.arange(4.0, dtype=np.float16)
    wrapped = tn.from_dlpack(a, Float16, CPU, Dim1)
    wrapped.assign(wrapped * 2.0)
    np.testing.assert_array_equal(a, [0, 2, 4, 6])
    np.testing.assert_array_equal(np.from_dlpack(h), [0, 1, 2, 3])
    b = tn.zeros((2,), BFloat16, CPU)
    with pytest.raises(tn.ElemTypeError, match="numpy's DLPack does not support bfloat16"):
        np.from_dlpack(b)
    with pytest.raises(tn.ElemTypeError, match="cannot wrap a ndarray as BFloat16 data"):
        tn.from_dlpack(np.zeros(2, np.float32), BFloat16, CPU, Dim1)


def test_bfloat16_on_the_gpu_is_refused_when_built() -> None:
    x = tn.zeros((2,), BFloat16, CPU)
    with pytest.raises(tn.ElemTypeError, match="cannot build to_device: cupy has no bfloat16"):
        ops.to_device(x, GPU)
    with pytest.raises(tn.ElemTypeError, match="cannot make zeros: cupy has no bfloat16"):
        tn.zeros((2,), BFloat16, GPU)


def test_float16_on_the_gpu_matches_the_cpu(cupy_module: Any) -> None:
    x0 = rng.normal(size=(16, 300)).astype(np.float16)
    w0 = rng.normal(size=(300, 4)).astype(np.float16)
    cpu = [tn.tensor(v, Float16, CPU, Dim2) for v in (x0, w0)]
    gpu = [ops.to_device(v, GPU) for v in cpu]

    def model(x: Any, w: Any) -> Any:
        return ops.softmax(ops.tanh(x * 0.5) @ w), ops.reduce_sum(x)

    for on_cpu, on_gpu in zip(model(*cpu), model(*gpu), strict=True):
        host = ops.to_device(on_gpu, CPU).numpy()
        assert host.dtype == np.float16
        np.testing.assert_allclose(
            host.astype(np.float32), on_cpu.numpy().astype(np.float32), rtol=2e-3, atol=2e-3
        )


@pytest.mark.parametrize("elem", HALVES)
def test_onnx_export_keeps_the_16_bit_types_and_the_float32_accumulation(
    elem: type[FloatTag], tmp_path: Path
) -> None:
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from typed_nn.onnx import export

    w = _half(rng.normal(size=(300, 6)) / 10, elem)

    def f(x: tn.Matrix[Any, CPU]) -> tuple[Any, Any]:
        return ops.softmax(ops.relu(x * 2.0) @ w), ops.reduce_sum(x)

    x = _half(rng.normal(size=(5, 300)), elem)
    path = tmp_path / "half.onnx"
    export(f, (x,), path)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    code = 10 if elem is Float16 else 16  # TensorProto.FLOAT16, BFLOAT16
    assert [o.type.tensor_type.elem_type for o in model.graph.output] == [code, code]
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    assert {a.i for n in casts for a in n.attribute} == {1, code}  # to float32 and back
    if elem is BFloat16:
        return  # onnxruntime's CPU provider has no bfloat16 MatMul or Softmax
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {"x": x.numpy()})
    for a, b in zip(got, f(x), strict=True):
        assert a.dtype == np.float16
        np.testing.assert_allclose(
            a.astype(np.float32), b.numpy().astype(np.float32), rtol=2e-3, atol=1e-3
        )


# --- dynamic loss scaling -------------------------------------------------------------------


def _scaled_step(scaler: Any, opt: Any, w: Any) -> Any:
    @tn.compile
    def step(
        x: tn.Matrix[Float16, CPU], y: tn.Matrix[Float16, CPU], numbers: tuple[float, ...]
    ) -> tn.Scalar[Float32, CPU]:
        err = x @ ops.astype(w, Float16) - y
        loss = ops.reduce_mean(ops.square(ops.astype(err, Float32)))
        (g,) = tn.grad(scaler.scale_loss(loss), (w,))
        scaler.apply(opt, [(w, g)], numbers)
        return loss

    return step


def test_loss_scaler_skips_overflowing_steps_and_adapts_its_scale() -> None:
    """Growth after ``growth_interval`` good steps; an overflow leaves the weights and the
    optimizer's state as they were, halves the scale and restarts the count; one trace."""
    from typed_nn.model import Adam, LossScaler

    w = tn.tensor(np.full((4, 1), 0.5), Float32, CPU, Dim2)
    opt = Adam(1e-2)
    scaler = LossScaler(CPU, init_scale=2.0**10, growth_interval=3)
    step = _scaled_step(scaler, opt, w)
    x = tn.tensor(np.ones((8, 4)), Float16, CPU, Dim2)
    y = tn.tensor(np.zeros((8, 1)), Float16, CPU, Dim2)
    huge = tn.tensor(np.full((8, 1), 60000.0), Float16, CPU, Dim2)  # scaled: Inf in Float16
    if debug_enabled():  # debug mode reports the overflow itself, as docs/precision.md says
        with pytest.raises(tn.NumericError, match=r"astype produced 8 Inf"):
            step(x, huge, opt.numbers())
        return
    seen = []
    for target in [y, y, y, huge, y]:
        before = (w.numpy().copy(), opt.state_tensors(w)["m"].numpy().copy())
        step(x, target, opt.numbers())
        opt.step_count += 1
        skipped = np.array_equal(w.numpy(), before[0])
        assert skipped == np.array_equal(opt.state_tensors(w)["m"].numpy(), before[1])
        seen.append((skipped, float(scaler.scale.numpy()), float(scaler.good_steps.numpy())))
    assert seen == [
        (False, 1024.0, 1.0),
        (False, 1024.0, 2.0),
        (False, 2048.0, 0.0),  # grown after 3 good steps
        (True, 1024.0, 0.0),  # overflow: skipped, backed off
        (False, 1024.0, 1.0),
    ]
    assert step.traces == 1


def test_loss_scaling_keeps_gradients_that_float16_would_lose() -> None:
    """Gradients near Float16's smallest values (6e-8) lose their digits unscaled; scaled by
    2**14 and unscaled in Float32 they are the exact gradient of the 16-bit data."""
    from typed_nn.model import SGD, LossScaler

    x0 = (rng.normal(size=(16, 4)) * 1e-2).astype(np.float16)
    y0 = (rng.normal(size=(16, 1)) * 1e-5).astype(np.float16)
    exact = 2 * x0.astype(np.float64).T @ y0.astype(np.float64) / 16  # the step from w = 0
    errors = []
    for scale in (1.0, 2.0**14):
        w = tn.zeros((4, 1), Float32, CPU)
        opt = SGD(1.0)
        step = _scaled_step(LossScaler(CPU, init_scale=scale), opt, w)
        step(tn.tensor(x0, Float16, CPU, Dim2), tn.tensor(y0, Float16, CPU, Dim2), opt.numbers())
        errors.append(float(np.abs(w.numpy() - exact).max() / np.abs(exact).max()))
    assert errors[1] < 2e-3
    assert errors[0] > 10 * errors[1]


def test_loss_scaler_eager_step_and_bad_settings() -> None:
    from typed_nn.model import SGD, LossScaler

    w = tn.tensor(np.ones((2,)), Float32, CPU, Dim1)
    opt = SGD(0.5)
    scaler = LossScaler(CPU, init_scale=8.0)
    loss = ops.reduce_sum(ops.square(w))
    (g,) = tn.grad(scaler.scale_loss(loss), (w,))
    scaler.step(opt, [(w, g)])
    np.testing.assert_array_equal(w.numpy(), [0.0, 0.0])  # w - 0.5 * 2w
    assert opt.step_count == 1
    with pytest.raises(tn.ParamError, match="0 < backoff_factor < 1"):
        LossScaler(CPU, backoff_factor=1.5)
    with pytest.raises(tn.ParamError, match="integer growth_interval >= 1"):
        LossScaler(CPU, growth_interval=0)


def test_loss_scaler_grows_only_to_a_finite_scale() -> None:
    """Grown past float32's largest value, the scale became inf and every later step was
    skipped (outside tester 9, t14); PyTorch's GradScaler keeps the last finite scale."""
    from typed_nn.model import SGD, LossScaler

    w = tn.tensor(np.full((2,), 0.5), Float32, CPU, Dim1)
    opt = SGD(1e-3)
    scaler = LossScaler(CPU, init_scale=2.0**125, growth_interval=1)
    for _ in range(4):
        loss = ops.reduce_sum(w * 1e-3)
        (g,) = tn.grad(scaler.scale_loss(loss), (w,))
        scaler.step(opt, [(w, g)])
    assert float(scaler.scale.numpy()) == 2.0**127
    np.testing.assert_allclose(w.numpy(), 0.5 - 4 * 1e-6, rtol=1e-6)  # every step taken


@pytest.mark.parametrize("elem", HALVES)
def test_torch_state_dict_round_trip(elem: type[FloatTag]) -> None:
    """16-bit parameters to PyTorch's names and layouts and back, values unchanged; with
    PyTorch installed, its nn.Linear in the same dtype loads them and computes alike."""
    from typed_nn.model import from_torch_state_dict, to_torch_state_dict, torch_mapping

    mapping = torch_mapping.linear("fc", "")
    w0 = rng.normal(size=(5, 3)).astype(elem.dtype)
    b0 = rng.normal(size=(3,)).astype(elem.dtype)
    params = {"fc/weight": _half(w0, elem), "fc/bias": _half(b0, elem, Dim1)}
    state = to_torch_state_dict(params, mapping)
    assert state["weight"].dtype == elem.dtype
    np.testing.assert_array_equal(state["weight"], w0.T)
    into: dict[str, tn.Tensor[Any, Any, Any]] = {
        "fc/weight": tn.zeros((5, 3), elem, CPU),
        "fc/bias": tn.zeros((3,), elem, CPU),
    }
    from_torch_state_dict(state, into, mapping)
    np.testing.assert_array_equal(into["fc/weight"].numpy(), w0)
    np.testing.assert_array_equal(into["fc/bias"].numpy(), b0)
    torch = pytest.importorskip("torch")
    dtype = torch.float16 if elem is Float16 else torch.bfloat16
    linear = torch.nn.Linear(5, 3, dtype=dtype)
    # PyTorch reads bfloat16 from numpy only as its bits (numpy's DLPack has no bfloat16)
    as_torch = {k: torch.from_numpy(v.view(np.int16)).view(dtype) for k, v in state.items()}
    linear.load_state_dict(as_torch)
    x0 = rng.normal(size=(4, 5)).astype(elem.dtype)
    theirs = linear(torch.from_numpy(x0.view(np.int16)).view(dtype)).detach().float().numpy()
    ours = (_half(x0, elem) @ into["fc/weight"] + into["fc/bias"]).numpy().astype(np.float32)
    np.testing.assert_allclose(ours, theirs, rtol=4 * _eps(elem), atol=4 * _eps(elem))


@pytest.mark.parametrize("elem", HALVES)
def test_checkpoint_round_trip_with_optimizer_state(elem: type[FloatTag], tmp_path: Path) -> None:
    from typed_nn.model import Adam, load_checkpoint, save_checkpoint

    w = _half(rng.normal(size=(3, 2)), elem)
    opt = Adam(1e-2)
    opt.step([(w, tn.grad(ops.reduce_sum(ops.square(w)), w))])
    save_checkpoint(tmp_path / "c.ckpt", {"w": w}, opt, epoch=3)
    w2 = tn.zeros((3, 2), elem, CPU)
    opt2 = Adam(1e-2)
    assert load_checkpoint(tmp_path / "c.ckpt", {"w": w2}, opt2).epoch == 3
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    for slot in ("m", "v"):
        mine, theirs = opt2.state_tensors(w2)[slot].numpy(), opt.state_tensors(w)[slot].numpy()
        assert mine.dtype == elem.dtype
        np.testing.assert_array_equal(mine, theirs)


def test_tensor_takes_bfloat16_arrays_as_bfloat16() -> None:
    """ml_dtypes' bfloat16 is of numpy kind "V": an array of it is BFloat16 data as it is
    (the causal attention mask of a BFloat16 model is made this way); other types refuse it."""
    values = np.array([1.5, -2.0], BF16)
    t = tn.tensor(values, BFloat16, CPU, Dim1)
    np.testing.assert_array_equal(t.numpy(), values)
    with pytest.raises(tn.ElemTypeError, match=r"cannot convert bfloat16 data to Int32"):
        tn.tensor(values, tn.Int32, CPU, Dim1)


@pytest.mark.parametrize("n", [65504, 65520, 200_000])
def test_a_float16_means_gradient_over_more_values_than_float16_counts_is_one_over_n(
    n: int,
) -> None:
    """The gradient divided by N, which past 65504 is inf in Float16: 0 for every element
    (outside tester 9, t34); times 1/N it is 1/N, a subnormal Float16."""
    x = _half(np.ones(n), Float16, Dim1)
    g = tn.evaluate(tn.grad(ops.reduce_mean(x), x)).numpy().astype(np.float64)
    np.testing.assert_allclose(g, 1.0 / n, rtol=0.01)
    target = _half(np.zeros(n), Float16, Dim1)  # d mean((x - t)^2)/dx = 2 (x - t) / N
    g = tn.evaluate(tn.grad(ops.mse_loss(target, x), x)).numpy().astype(np.float64)
    np.testing.assert_allclose(g, 2.0 / n, rtol=0.01)


def test_16_bit_normalisations_compute_in_float32() -> None:
    """A spread of 300 squares past Float16's 65504: LayerNorm gave all zeros, BatchNorm zeros
    and an inf running variance (outside tester 9, t04/t05/t11)."""
    from typed_nn import nn
    from typed_nn.policies import PMixedFloat16

    rng = np.random.default_rng(0)
    values = rng.normal(size=(4, 64)) * 300.0
    want = (values - values.mean(-1, keepdims=True)) / values.std(-1, keepdims=True)
    x = _half(values, Float16)
    for norm in (nn.LayerNorm(64, precision=PMixedFloat16), nn.LayerNorm(64, elem=Float16)):
        got = tn.evaluate(norm(x)).numpy().astype(np.float64)
        np.testing.assert_allclose(got, want, atol=4e-3)
    images = rng.normal(size=(8, 3, 4, 4)) * 300.0
    bn = nn.BatchNorm(3, elem=Float16)
    y = tn.evaluate(bn(_half(images, Float16, tn.Dim4))).numpy().astype(np.float64)
    mean, var = images.mean((0, 2, 3)), images.var((0, 2, 3))
    np.testing.assert_allclose(
        y, (images - mean[:, None, None]) / np.sqrt(var[:, None, None]), atol=4e-3
    )
    running = bn.running_var.numpy().astype(np.float64)
    n = images.size // 3
    np.testing.assert_allclose(running, 0.9 + 0.1 * var * n / (n - 1), rtol=2e-3)


def test_a_compiled_functions_float_argument_reads_as_bfloat16_as_eagerly() -> None:
    """ml_dtypes' bfloat16 computes with a Python number in float32: the call's number is
    rounded to bfloat16 first, as eager evaluation's constants are (outside tester 9, t32)."""
    x = _half([1.0, 3.0, 1000.0], BFloat16, Dim1)
    functions: list[Any] = [lambda a, s: a / s, lambda a, s: a - s, lambda a, s: a * s + 1.0]
    for fn in functions:
        compiled = tn.compile(fn)
        for s in (1 / 3, 1.00390625 + 2**-9, 0.1):
            np.testing.assert_array_equal(compiled(x, s).numpy(), tn.evaluate(fn(x, s)).numpy())


def test_a_float16_cross_entropy_with_ignored_labels_divides_in_float32() -> None:
    """The kept terms' sum (800,000 here) passes 65504: rounded to Float16 before the division
    it was inf (outside tester 9, t35)."""
    rows = 40_000
    logits = np.zeros((rows, 2), np.float32)
    logits[:, 1] = 20.0  # each kept row's loss is 20
    labels = np.zeros(rows, np.int64)
    labels[::2] = -100
    x = _half(logits, Float16)
    y = tn.tensor(labels, tn.Int64, CPU, Dim1)
    got = float(ops.cross_entropy(x, y, ignore_index=-100).numpy())
    assert abs(got - 20.0) < 0.05


@pytest.mark.parametrize("elem", HALVES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_16_bit_gelu_is_computed_in_float32(elem: type[FloatTag], approximate: Any) -> None:
    """1 + erf(x / sqrt 2) cancels for x <= -3: rounded at each step it was 45 % off there and
    0 below -4 (outside tester 9, t03)."""
    values = np.linspace(-6.0, 3.0, 37)
    x = _half(values, elem, Dim1)
    got = tn.evaluate(ops.gelu(x, approximate)).numpy()
    want = ops.gelu(tn.tensor(values, tn.Float64, CPU, Dim1), approximate).numpy()
    # within one 16-bit ulp of the float64 value (its rounding, as PyTorch's, up to ties)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=_eps(elem), atol=1e-6)


@pytest.mark.parametrize("elem", HALVES)
def test_a_whole_16_bit_module_is_built_from_draws_rounded_once(elem: type[FloatTag]) -> None:
    """numpy's generator draws float32 and float64 only: building nn.Linear(elem=Float16)
    failed inside it (outside tester 9, t09)."""
    from typed_nn import nn

    tn.manual_seed(0)
    layer = nn.Linear(64, 3, elem=elem)
    tn.manual_seed(0)
    wide = nn.Linear(64, 3)
    w = tn.evaluate(layer.weight).numpy()
    rounded = tn.evaluate(wide.weight).numpy().astype(elem.dtype).astype(np.float64)
    np.testing.assert_allclose(w.astype(np.float64), rounded, rtol=_eps(elem))  # 1/8 clamped
    assert np.all(np.abs(w.astype(np.float32)) < 1 / 8)  # U(-1/8, 1/8), kept below the bound
    draws = tn.evaluate(ops.normal(tn.Generator(1, CPU), (1000,), elem)).numpy()
    assert draws.dtype == elem.dtype
    assert abs(float(draws.astype(np.float32).std()) - 1.0) < 0.1


def test_a_pytorch_bfloat16_tensor_is_data_for_tn_tensor() -> None:
    torch = pytest.importorskip("torch")
    data = torch.tensor([[1.5, -2.25]], dtype=torch.bfloat16)
    x = tn.tensor(data, BFloat16, CPU, Dim2)
    assert x.numpy().dtype == BF16
    np.testing.assert_array_equal(x.numpy().astype(np.float32), [[1.5, -2.25]])


def test_a_pytorch_bfloat16_state_dict_loads() -> None:
    """numpy cannot read torch's bfloat16: load_state_dict failed with a raw TypeError
    (outside tester 9, t20); it reads the values exactly, through float32."""
    torch = pytest.importorskip("torch")
    from typed_nn import nn

    theirs = torch.nn.Linear(4, 3).to(torch.bfloat16)
    ours = nn.Linear(4, 3, elem=BFloat16)
    nn.load_state_dict(ours, theirs.state_dict())
    want = theirs.weight.detach().float().numpy()
    np.testing.assert_array_equal(ours.weight.numpy().astype(np.float32), want)

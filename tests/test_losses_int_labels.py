"""Losses on logits: ``cross_entropy`` on integer labels, ``binary_cross_entropy_with_logits``;
``stop_gradient``; the ``gelu`` and ``silu`` activations.

Values and gradients against a numpy mirror written here (every reduction, smoothing,
ignore_index, ranks 2 and 3, Float32 and Float64) and against PyTorch where it is installed;
under ``tn.compile``; on the GPU backend (the cupy emulator, and a real GPU where present);
and every error by its text.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
import pytest
from helpers import Array, tagged, tolerance

import typed_nn as tn
import typed_nn.debug
from typed_nn import ops
from typed_nn.evaluate import last_program, options

U: Any = ops
"""The ops without static types: the cases pick ranks and options in tables."""

rng = np.random.default_rng(39)
ELEMS = [tn.Float32, tn.Float64]
REDUCTIONS = ["mean", "sum", "none"]
OPTIONS = [(0.0, None), (0.2, None), (0.0, 1), (0.1, -100)]
"""(label_smoothing, ignore_index) pairs: plain, smoothed, a class ignored, PyTorch's padding."""


def close(actual: Any, desired: Any, elem: Any) -> None:
    tol = tolerance(elem)
    np.testing.assert_allclose(actual, desired, rtol=tol["rtol"], atol=tol["atol"])


def torch_or_skip() -> Any:
    return pytest.importorskip("torch", reason="PyTorch is not installed: numpy mirror only")


# --- the numpy mirror ---------------------------------------------------------------------------


def log_softmax(x: Array) -> Array:
    shifted = x - x.max(-1, keepdims=True)
    result: Array = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return result


def ce_mirror(
    x: Array, y: Array, reduction: str, smoothing: float, ignore: int | None
) -> tuple[Array, Array]:
    """(loss, d loss / d x for a cotangent of ones of the loss's shape), in float64."""
    x = x.astype(np.float64)
    logp = log_softmax(x)
    classes = x.shape[-1]
    keep = np.ones(y.shape, bool) if ignore is None else y != ignore
    safe = np.where(keep, y, 0)
    nll = -np.take_along_axis(logp, safe[..., None], -1)[..., 0]
    terms = np.where(keep, (1 - smoothing) * nll - smoothing * logp.mean(-1), 0.0)
    target = np.eye(classes)[safe] * (1 - smoothing) + smoothing / classes
    grad = (np.exp(logp) - target) * keep[..., None]
    if reduction == "none":
        return terms, grad
    if reduction == "sum":
        return np.asarray(terms.sum()), grad
    return np.asarray(terms.sum() / keep.sum()), grad / keep.sum()


def labels_for(shape: tuple[int, ...], classes: int, ignore: int | None) -> Array:
    y = rng.integers(0, classes, shape)
    if ignore is not None:
        y.flat[1] = ignore  # one ignored position (at least one kept beside it)
    return y


def case(rank: int, elem: Any, ignore: int | None) -> tuple[Array, Array]:
    shape = (4, 5) if rank == 2 else (3, 4, 5)
    x = (rng.standard_normal(shape) * 3).astype(elem.dtype)
    return x, labels_for(shape[:-1], shape[-1], ignore)


def int_labels(y: Array, elem: Any = tn.Int64, device: Any = tn.CPU) -> Any:
    return tagged(y.astype(elem.dtype), elem, device)


# --- cross_entropy: values and gradients ---------------------------------------------------------


@pytest.mark.parametrize("elem", ELEMS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(("smoothing", "ignore"), OPTIONS)
def test_cross_entropy_matches_numpy(
    elem: Any, rank: int, reduction: str, smoothing: float, ignore: int | None
) -> None:
    x, y = case(rank, elem, ignore)
    logits = tagged(x, elem)
    loss = U.cross_entropy(
        logits,
        int_labels(y, tn.Int32 if rank == 3 else tn.Int64),
        reduction=reduction,
        label_smoothing=smoothing,
        ignore_index=ignore,
    )
    want, want_grad = ce_mirror(x, y, reduction, smoothing, ignore)
    assert loss.shape == want.shape
    assert loss.elem is elem
    got = loss.numpy()
    assert got.dtype == elem.dtype
    close(got, want, elem)
    ones = tagged(np.ones(loss.shape), elem)
    grad = tn.vjp(loss, logits, ones).numpy()
    assert grad.dtype == elem.dtype
    close(grad, want_grad, elem)


@pytest.mark.parametrize("elem", ELEMS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(("smoothing", "ignore"), OPTIONS)
def test_cross_entropy_matches_pytorch(
    elem: Any, rank: int, reduction: str, smoothing: float, ignore: int | None
) -> None:
    """PyTorch takes (N, C, T) for rank 3: its logits are ours with the class dim moved."""
    torch = torch_or_skip()
    x, y = case(rank, elem, ignore)
    logits = tagged(x, elem)
    loss = U.cross_entropy(
        logits,
        int_labels(y),
        reduction=reduction,
        label_smoothing=smoothing,
        ignore_index=ignore,
    )
    c = rng.standard_normal(loss.shape).astype(elem.dtype)
    tx = torch.tensor(np.moveaxis(x, -1, 1) if rank == 3 else x, requires_grad=True)
    kwargs = {"ignore_index": ignore} if ignore is not None else {}
    tl = torch.nn.functional.cross_entropy(
        tx, torch.tensor(y), reduction=reduction, label_smoothing=smoothing, **kwargs
    )
    (tl * torch.tensor(c)).sum().backward()
    want_grad = tx.grad.numpy()
    want_grad = np.moveaxis(want_grad, 1, -1) if rank == 3 else want_grad
    close(loss.numpy(), tl.detach().numpy(), elem)
    got_grad = tn.vjp(loss, logits, tagged(c, elem)).numpy()
    close(got_grad, want_grad, elem)


def test_cross_entropy_is_stable_for_large_logits() -> None:
    x = np.array([[1e4, 0.0, -1e4], [-1e38, 1e38, 0.0]], np.float32)
    y = np.array([1, 1])
    logits = tagged(x, tn.Float32)
    loss = ops.cross_entropy(logits, int_labels(y), reduction="none")
    np.testing.assert_allclose(loss.numpy(), [1e4, 0.0], rtol=1e-6)
    grad = tn.grad(ops.reduce_sum(loss), logits).numpy()
    np.testing.assert_allclose(grad, [[1, -1, 0], [0, 0, 0]], atol=1e-6)


def test_every_label_ignored_gives_nan_mean_and_zero_sum_as_pytorch() -> None:
    x = tagged(rng.standard_normal((2, 3)), tn.Float64)
    y = int_labels(np.array([-100, -100]))
    mean = ops.cross_entropy(x, y, ignore_index=-100)
    if typed_nn.debug.is_enabled():  # debug mode's NaN check names the 0 / 0
        with pytest.raises(tn.NumericError, match=r"div produced 1 NaN"):
            mean.numpy()
    else:
        with np.errstate(invalid="ignore"):
            assert math.isnan(float(mean.numpy()))
    assert float(ops.cross_entropy(x, y, reduction="sum", ignore_index=-100).numpy()) == 0.0


def test_an_ignored_label_may_be_a_class() -> None:
    """ignore_index=0 (a padding class) drops the positions labelled 0 only."""
    x, y = case(3, tn.Float64, None)
    y[0, :2] = 0
    loss = U.cross_entropy(tagged(x, tn.Float64), int_labels(y), ignore_index=0).numpy()
    np.testing.assert_allclose(loss, ce_mirror(x, y, "mean", 0.0, 0)[0], rtol=1e-12)


def test_cross_entropy_second_order_matches_finite_differences() -> None:
    """The gradient is itself differentiable (a Hessian-vector product along v)."""
    x, y = case(2, tn.Float64, 1)
    v = rng.standard_normal(x.shape)

    def grad_at(a: Array) -> Array:
        logits = tagged(a, tn.Float64)
        loss = U.cross_entropy(logits, int_labels(y), label_smoothing=0.1, ignore_index=1)
        result: Array = tn.grad(loss, logits).numpy()
        return result

    logits = tagged(x, tn.Float64)
    loss = U.cross_entropy(logits, int_labels(y), label_smoothing=0.1, ignore_index=1)
    g = tn.grad(loss, logits)
    hvp = tn.grad(ops.reduce_sum(g * tagged(v, tn.Float64)), logits).numpy()
    eps = 1e-5
    want = (grad_at(x + eps * v) - grad_at(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hvp, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_compiled_step_replays_with_new_labels(reduction: str) -> None:
    """A char-LM shaped step: (N, T, C) logits from a weight, (N, T) labels as an argument."""
    w = tagged(rng.standard_normal((6, 5)), tn.Float32)
    Ids = tn.Matrix[tn.Int64, tn.CPU]

    @tn.compile
    def step(h: tn.Tensor3[tn.Float32, tn.CPU], ids: Ids) -> Any:
        loss = U.cross_entropy(h @ w, ids, reduction=reduction, ignore_index=-100)
        total = loss if reduction != "none" else ops.reduce_sum(loss)
        return loss, tn.grad(total, w)

    for _ in range(3):
        h = rng.standard_normal((2, 3, 6)).astype(np.float32)
        y = labels_for((2, 3), 5, -100)
        loss, grad = step(tagged(h, tn.Float32), int_labels(y))
        want, want_logit_grad = ce_mirror(h @ w.numpy(), y, reduction, 0.0, -100)
        np.testing.assert_allclose(loss.numpy(), want, rtol=2e-5, atol=1e-6)
        want_grad = np.einsum("ntd,ntc->dc", h, want_logit_grad)
        np.testing.assert_allclose(grad.numpy(), want_grad, rtol=2e-5, atol=1e-5)


def test_the_gradient_builds_no_one_hot_of_the_labels() -> None:
    """The backward scatters the per-position gradients (label_pick_grad) into the softmax
    gradient; no node turns the labels into a one-hot matrix."""
    logits = tagged(rng.standard_normal((4, 5)), tn.Float32)
    grad = tn.grad(ops.cross_entropy(logits, int_labels(np.array([0, 4, 2, 2]))), logits)
    seen: set[str] = set()
    stack: list[Any] = [grad]
    while stack:
        node = stack.pop()
        if isinstance(node, tn.ops.Operation):
            seen.add(node.op.name)
            stack.extend(node.operands)
    assert {"label_pick_grad", "log_softmax_grad"} <= seen
    assert not seen & {"one_hot", "nll_loss_grad", "astype"}, seen
    np.testing.assert_allclose(tn.evaluate(grad).numpy().sum(axis=1), 0.0, atol=1e-6)


# --- binary cross-entropy on logits ------------------------------------------------------


def bce_mirror(x: Array, y: Array, w: Array | None) -> tuple[Array, Array]:
    """(terms, d terms / d x) in float64."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    sig = 1 / (1 + np.exp(-x))
    if w is None:
        return np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x))), sig - y
    weight = 1 + (w - 1) * y
    terms = (1 - y) * x + weight * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))
    return terms, (1 - y) - weight * (1 - sig)


@pytest.mark.parametrize("elem", ELEMS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_with_logits(elem: Any, reduction: str, weighted: bool) -> None:
    x = (rng.standard_normal((3, 4)) * 4).astype(elem.dtype)
    x[0, 0], x[0, 1] = 80.0, -80.0  # no overflow either way
    y = rng.uniform(0, 1, (3, 4)).astype(elem.dtype)
    w = rng.uniform(0.5, 3, (4,)).astype(elem.dtype) if weighted else None
    logits = tagged(x, elem)
    loss = U.binary_cross_entropy_with_logits(
        logits,
        tagged(y, elem),
        reduction=reduction,
        pos_weight=None if w is None else tagged(w, elem),
    )
    terms, d = bce_mirror(x, y, w)
    scale = {"none": 1.0, "sum": 1.0, "mean": 1 / terms.size}[reduction]
    want = terms if reduction == "none" else np.asarray(terms.sum() * scale)
    close(loss.numpy(), want, elem)
    grad = tn.vjp(loss, logits, tagged(np.ones(loss.shape), elem)).numpy()
    close(grad, d * scale, elem)
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    tw = None if w is None else torch.tensor(w)
    tl = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor(x), torch.tensor(y), reduction=reduction, pos_weight=tw
    )
    close(loss.numpy(), tl.numpy(), elem)


# --- stop_gradient ---------------------------------------------------------------------------


def test_stop_gradient_is_its_operand_and_a_constant_for_grad() -> None:
    x = tagged(rng.standard_normal((3, 4)), tn.Float64)
    held = ops.stop_gradient(x)
    assert (held.shape, held.elem, held.device) == ((3, 4), tn.Float64, tn.CPU)
    np.testing.assert_array_equal(held.numpy(), x.numpy())
    loss = ops.reduce_sum(ops.square(x) * ops.stop_gradient(ops.exp(x)))
    want = 2 * x.numpy() * np.exp(x.numpy())  # exp(x) is a constant factor
    np.testing.assert_allclose(tn.grad(loss, x).numpy(), want, rtol=1e-12)
    ints = int_labels(np.array([1, 2]))
    np.testing.assert_array_equal(ops.stop_gradient(ints).numpy(), [1, 2])


def test_stop_gradient_costs_no_step_and_its_kernel_is_a_view() -> None:
    x = tagged(rng.standard_normal((3, 4)), tn.Float32)
    tn.evaluate(ops.stop_gradient(ops.exp(x)) * 2.0)
    if not typed_nn.debug.is_enabled():  # debug mode runs node by node: no program
        assert "stop_gradient(x) -> x" in last_program().fired  # type: ignore[union-attr]
    a = np.ones((2, 3), np.float32)
    view = tn.ops.declare.implementation("stop_gradient", tn.CPU)(a)
    assert np.shares_memory(view, a)
    with options.using(rewrite=False):
        got = tn.evaluate(ops.stop_gradient(ops.exp(x)) * 2.0).numpy()
    np.testing.assert_allclose(got, np.exp(x.numpy()) * 2.0, rtol=1e-6)


def test_stop_gradient_inside_compile() -> None:
    w = tagged(np.array([1.0, 2.0]), tn.Float64)

    @tn.compile
    def step(x: tn.Vector[tn.Float64, tn.CPU]) -> Any:
        return tn.grad(ops.reduce_sum(w * ops.stop_gradient(w) * x), w)

    np.testing.assert_array_equal(step(tagged(np.array([3.0, 4.0]), tn.Float64)).numpy(), [3, 8])


# --- gelu, silu, erf ---------------------------------------------------------------------------


def test_erf_matches_math_erf_to_rounding() -> None:
    x = np.concatenate([np.linspace(-9, 9, 20001), [0.0, 1e-300, -1e-8, 0.5, 1.0, 8.0, 30.0]])
    want = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(ops.erf(tagged(x, tn.Float64)).numpy(), want, rtol=5e-16, atol=3e-16)
    got32 = ops.erf(tagged(x.astype(np.float32), tn.Float32)).numpy()
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, want, rtol=1e-6, atol=2e-7)


@pytest.mark.parametrize("elem", ELEMS, ids=lambda e: e.__name__)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_pytorch(elem: Any, approximate: str) -> None:
    torch = torch_or_skip()
    a = (rng.standard_normal((4, 6)) * 3).astype(elem.dtype)
    x = tagged(a, elem)
    y = U.gelu(x, approximate)
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.nn.functional.gelu(tx, approximate=approximate)
    ty.sum().backward()
    close(y.numpy(), ty.detach().numpy(), elem)
    close(tn.grad(ops.reduce_sum(y), x).numpy(), tx.grad.numpy(), elem)


@pytest.mark.parametrize("elem", ELEMS, ids=lambda e: e.__name__)
def test_silu_matches_pytorch(elem: Any) -> None:
    torch = torch_or_skip()
    a = (rng.standard_normal((4, 6)) * 3).astype(elem.dtype)
    x = tagged(a, elem)
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.nn.functional.silu(tx)
    ty.sum().backward()
    close(ops.silu(x).numpy(), ty.detach().numpy(), elem)
    close(tn.grad(ops.reduce_sum(ops.silu(x)), x).numpy(), tx.grad.numpy(), elem)


def test_gelu_and_silu_against_their_formulas() -> None:
    a = np.linspace(-6, 6, 49)
    x = tagged(a, tn.Float64)
    phi = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in a])
    np.testing.assert_allclose(ops.gelu(x).numpy(), a * phi, rtol=1e-14, atol=1e-16)
    inner = math.sqrt(2 / math.pi) * (a + 0.044715 * a**3)
    tanh_form = 0.5 * a * (1 + np.tanh(inner))
    np.testing.assert_allclose(ops.gelu(x, "tanh").numpy(), tanh_form, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(ops.silu(x).numpy(), a / (1 + np.exp(-a)), rtol=1e-14)
    d_gelu = phi + a * np.exp(-(a**2) / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(tn.grad(ops.reduce_sum(ops.gelu(x)), x).numpy(), d_gelu, rtol=1e-13)


# --- errors ------------------------------------------------------------------------------------


LOGITS = tagged(np.zeros((3, 4), np.float32), tn.Float32)


def test_a_label_out_of_range_names_its_value_and_position() -> None:
    with pytest.raises(
        tn.IndexRangeError,
        match=r"label out of range: 4 at position \(1,\) is not a class in 0 \.\. 3\.\n"
        r"  labels +: 3 values, min 0, max 4\n  classes +: 4 \(the last dim of the logits\)",
    ):
        ops.cross_entropy(LOGITS, int_labels(np.array([0, 4, 1]))).numpy()
    seq = tagged(np.zeros((2, 3, 4), np.float32), tn.Float32)
    with pytest.raises(tn.IndexRangeError, match=r"-1 at position \(1, 0\) is not a class"):
        ops.cross_entropy(seq, int_labels(np.array([[0, 1, 2], [-1, 0, 0]]))).numpy()
    with pytest.raises(tn.IndexRangeError, match=r"hint: labels are class numbers 0 \.\. C - 1"):
        ops.cross_entropy(LOGITS, int_labels(np.array([0, -100, 1])), ignore_index=-1).numpy()


def test_a_label_out_of_range_names_the_line_that_built_the_loss() -> None:
    """The check runs in the kernel, when the values are read: the node and its line are
    the evaluation's (eagerly, compiled, and in debug mode alike)."""
    labels = int_labels(np.array([0, 4, 1]))
    loss = ops.cross_entropy(LOGITS, labels)  # the line named
    line = f"test_losses_int_labels.py:{inspect.currentframe().f_lineno - 1}"  # type: ignore[union-attr]
    located = rf"(?s)  node +: label_pick\[Float32, CPU, Dim1\]\(3\)\n  built at : {line}\nhint:"
    with pytest.raises(tn.IndexRangeError, match=located):
        loss.numpy()
    compiled = tn.compile(lambda x, y: ops.cross_entropy(x, y))
    with pytest.raises(tn.IndexRangeError, match=r"(?s)label out of range: 4.*  built at : "):
        compiled(LOGITS, labels)


def test_float_labels_are_refused_when_built() -> None:
    with pytest.raises(
        tn.ElemTypeError,
        match=r"cannot build cross_entropy: the labels are not an integer tensor\.\n"
        r"  labels   : Tensor\[Float32, CPU, Dim1\]\(3\)\n"
        r"  accepted : Int64 \(or Int32\) class numbers",
    ):
        U.cross_entropy(LOGITS, tagged(np.zeros(3), tn.Float32))


def test_labels_of_another_shape_are_refused_when_built() -> None:
    with pytest.raises(
        tn.ShapeError,
        match=r"cannot build cross_entropy: the labels' shape is not the logits' shape "
        r"without the last \(class\) dim\.\n.*\n.*\n  expected : labels of shape \(3\)",
    ):
        U.cross_entropy(LOGITS, int_labels(np.zeros(4, np.int64)))
    with pytest.raises(tn.RankError, match=r"the labels' shape is not the logits' shape"):
        U.cross_entropy(LOGITS, int_labels(np.zeros((3, 4), np.int64)))


def test_float_logits_only() -> None:
    with pytest.raises(
        tn.ElemTypeError, match=r"cannot build cross_entropy: the logits are not a float tensor"
    ):
        U.cross_entropy(int_labels(np.zeros((3, 4))), int_labels(np.zeros(3)))


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"reduction": "avg"}, r"cross_entropy: reduction must be 'mean', 'sum' or 'none'\.\n"),
        ({"label_smoothing": 1.5}, r"cross_entropy: label_smoothing must be a number in \[0, 1\]"),
        (
            {"label_smoothing": -0.1},
            r"label_smoothing must be a number in \[0, 1\]\.\n  received : -0\.1",
        ),
        ({"ignore_index": 1.0}, r"cross_entropy: ignore_index must be an int or None"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, Any], pattern: str) -> None:
    with pytest.raises(tn.ParamError, match=pattern):
        U.cross_entropy(LOGITS, int_labels(np.zeros(3)), **kwargs)


def test_binary_cross_entropy_errors() -> None:
    name = "binary_cross_entropy_with_logits"
    with pytest.raises(tn.ShapeError, match=rf"cannot build {name}: logits and targets differ"):
        U.binary_cross_entropy_with_logits(LOGITS, tagged(np.zeros(4), tn.Float32))
    with pytest.raises(tn.ElemTypeError, match=r"the targets are not a float tensor"):
        U.binary_cross_entropy_with_logits(LOGITS, int_labels(np.zeros((3, 4))))
    with pytest.raises(tn.ParamError, match=rf"{name}: reduction must be 'mean', 'sum' or 'none'"):
        U.binary_cross_entropy_with_logits(LOGITS, LOGITS, reduction="max")
    with pytest.raises(tn.OperandError, match=rf"cannot build {name}: pos_weight is not typed_nn"):
        U.binary_cross_entropy_with_logits(LOGITS, LOGITS, pos_weight=[1.0])


def test_gelu_and_label_pick_errors() -> None:
    with pytest.raises(tn.ParamError, match=r"gelu: approximate must be 'none' or 'tanh'"):
        U.gelu(LOGITS, "fast")
    with pytest.raises(tn.OperandError, match=r"cannot build gelu: x is not typed_nn data"):
        U.gelu(np.zeros(3))
    g = tagged(np.zeros(2, np.float32), tn.Float32)
    with pytest.raises(tn.ShapeError, match=r"label_pick_grad: classes must be an int >= 1, got 0"):
        U.label_pick_grad(g, int_labels(np.zeros(2)), 0)
    with pytest.raises(tn.ShapeError, match=r"label_pick_grad: the gradient is not shaped like"):
        U.label_pick_grad(g, int_labels(np.zeros(3)), 4)
    with pytest.raises(tn.IndexRangeError, match=r"label out of range: 5 at position \(0,\)"):
        U.label_pick_grad(g, int_labels(np.array([5, 0])), 4).numpy()


# --- GPU -----------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize(("smoothing", "ignore"), OPTIONS)
def test_cross_entropy_on_gpu_equals_cpu(
    cupy_module: Any, smoothing: float, ignore: int | None
) -> None:
    x, y = case(3, tn.Float32, ignore)
    cpu, gpu = tagged(x, tn.Float32), tagged(x, tn.Float32, tn.GPU)
    for logits, labels in ((cpu, int_labels(y)), (gpu, int_labels(y, tn.Int64, tn.GPU))):
        loss = U.cross_entropy(logits, labels, label_smoothing=smoothing, ignore_index=ignore)
        if logits is cpu:
            want, want_grad = loss.numpy(), tn.grad(loss, logits).numpy()
        else:
            got = tn.evaluate(loss)
            assert type(got.array).__module__.startswith("cupy")
            np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=1e-6)
            np.testing.assert_allclose(tn.grad(loss, logits).numpy(), want_grad, atol=1e-6)


@pytest.mark.gpu
def test_out_of_range_labels_on_gpu_give_nan_without_a_host_sync(
    cupy_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    logits = tagged(np.zeros((3, 4), np.float32), tn.Float32, tn.GPU)
    labels = int_labels(np.array([0, 7, 1]), tn.Int64, tn.GPU)
    pick = tn.ops.declare.implementation("label_pick", tn.GPU)
    syncs: list[bool] = []
    with monkeypatch.context() as patch:
        patch.setattr(
            cupy_module._core.syncdetect, "_declare_synchronize", lambda: syncs.append(True)
        )
        picked = pick(logits.array, labels.array)
    assert syncs == []
    assert np.isnan(cupy_module.asnumpy(picked)).tolist() == [False, True, False]
    # the backward in one pass (evaluate/rewrite.py) likewise: the bad label's row is NaN
    fused = tn.ops.declare.implementation("log_softmax_pick_grad", tn.GPU)
    y = cupy_module.asarray(np.full((3, 4), -np.log(4.0), np.float32))
    with monkeypatch.context() as patch:
        patch.setattr(
            cupy_module._core.syncdetect, "_declare_synchronize", lambda: syncs.append(True)
        )
        grad = fused(cupy_module.asarray(np.float32(1.0 / 3)), labels.array, y)
    assert syncs == []
    rows = np.isnan(cupy_module.asnumpy(grad)).all(axis=1).tolist()
    assert rows == [False, True, False]
    loss = ops.cross_entropy(logits, labels)
    if typed_nn.debug.is_enabled():  # debug mode's NaN check names the node
        with pytest.raises(tn.NumericError, match=r"label_pick produced 1 NaN"):
            loss.numpy()
    else:
        assert math.isnan(float(loss.numpy()))


@pytest.mark.gpu
def test_embedding_on_gpu_equals_cpu_and_out_of_range_ids_give_nan_rows_without_a_sync(
    cupy_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typed_nn.layers.embedding import embedding_lookup

    table = rng.standard_normal((5, 3)).astype(np.float32)
    ids = np.array([[0, 4], [2, 2]])
    results = []
    for device in (tn.CPU, tn.GPU):
        w, idx = tagged(table, tn.Float32, device), int_labels(ids, tn.Int64, device)
        rows = ops.embedding(w, idx)
        g = tn.grad(ops.reduce_sum(ops.square(rows)), w)
        results.append([rows.numpy(), g.numpy()])
    for cpu, gpu in zip(*results, strict=True):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-6)
    w = tagged(table, tn.Float32, tn.GPU)
    bad = int_labels(np.array([1, 9, -1]), tn.Int64, tn.GPU)
    syncs: list[bool] = []
    with monkeypatch.context() as patch:
        patch.setattr(
            cupy_module._core.syncdetect, "_declare_synchronize", lambda: syncs.append(True)
        )
        picked = tn.ops.declare.implementation("embedding", tn.GPU)(w.array, bad.array)
        grad = tn.ops.declare.implementation("embedding_grad", tn.GPU)(picked, bad.array, 5)
    assert syncs == []
    assert np.isnan(cupy_module.asnumpy(picked)).all(axis=1).tolist() == [False, True, True]
    # -1 and 9 scatter NaN into the nearest row, 0 and 4: the weight's gradient shows them
    assert np.isnan(cupy_module.asnumpy(grad)).any(axis=1).tolist() == [
        True,
        False,
        False,
        False,
        True,
    ]
    # nn.Embedding's and EmbeddingLayer's eager check reads host indices only: no copy here
    assert embedding_lookup("Embedding", w, bad).shape == (3, 3)


@pytest.mark.gpu
def test_gelu_silu_and_bce_on_gpu_equal_cpu(cupy_module: Any) -> None:
    a = (rng.standard_normal((5, 7)) * 3).astype(np.float32)
    t = rng.uniform(0, 1, (5, 7)).astype(np.float32)
    results = []
    for device in (tn.CPU, tn.GPU):
        x, y = tagged(a, tn.Float32, device), tagged(t, tn.Float32, device)
        value = ops.gelu(x) + ops.gelu(x, "tanh") * 2.0 + ops.silu(x) * 3.0 + ops.erf(x)
        bce = ops.binary_cross_entropy_with_logits(x, y)
        grad = tn.grad(ops.reduce_sum(value) + bce, x)
        results.append([value.numpy(), bce.numpy(), grad.numpy()])
    for cpu, gpu in zip(*results, strict=True):
        np.testing.assert_allclose(gpu, cpu, rtol=2e-5, atol=2e-6)


def test_embedding_with_its_arguments_swapped_says_so() -> None:
    """Integer weight, float indices: the hint said to convert the weight to float."""
    ids = tn.tensor(np.array([0, 1]), tn.Int64, tn.CPU, tn.Dim1)
    table = tagged(np.eye(3), tn.Float32)
    with pytest.raises(
        tn.ElemTypeError,
        match=r"(?s)the weight is integer data and the indices float.*hint: the arguments are "
        r"swapped: embedding\(weight, indices\)",
    ):
        ops.embedding(ids, table)  # type: ignore[arg-type, type-var]  # statically an error too
    assert ops.embedding(table, ids).shape == (2, 3)


def test_a_kernels_own_message_layout_is_kept_under_the_node_and_its_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A registered kernel's IndexRangeError may be laid out any way: kept as it is, with
    the node and the line that built it below (it became a ValueError when parsed)."""
    from typed_nn.backends.numpy import embedding

    def refused(indices: Any, rows: int) -> None:
        raise tn.IndexRangeError("index out of range\nsee the indices above")

    monkeypatch.setattr(embedding, "_check_range", refused)
    w = tagged(np.ones((4, 2)), tn.Float64)
    ids = int_labels(np.array([0, 1]))
    with pytest.raises(
        tn.IndexRangeError,
        match=r"^index out of range\nsee the indices above\n  node +: embedding\[.*\n  built at : ",
    ):
        ops.embedding(w, ids).numpy()

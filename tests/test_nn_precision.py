"""Mixed precision in modules (typed_nn/nn/precision.py): parameters stored in Float32 and
computed in BFloat16 or Float16, gradients and optimizer state in Float32, loss scaling over
a module, and the digits MLP and a character LM trained in 16 bits against Float32."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import ml_dtypes
import numpy as np
import pytest

import typed_nn as tn
from typed_nn import CPU, BFloat16, Dim1, Dim2, Float16, Float32, nn, ops, optim
from typed_nn.debug import is_enabled as debug_enabled
from typed_nn.model import LossScaler
from typed_nn.policies import (
    ComputeIn,
    PComputeElemIs,
    PMixedBFloat16,
    PMixedFloat16,
    PParamElemIs,
)
from typed_nn.tags import dim_of_rank

CE = TypeVar("CE", bound=tn.FloatTag)
BF16 = np.dtype(ml_dtypes.bfloat16)
Ids = tn.Matrix[tn.Int64, tn.CPU]


def _round(a: Any, elem: type[tn.FloatTag]) -> np.ndarray[Any, Any]:
    """``a`` rounded to ``elem`` and back to float32 (what a 16-bit value holds)."""
    dtype = BF16 if elem is BFloat16 else np.dtype(np.float16)
    return np.asarray(a, np.float32).astype(dtype).astype(np.float32)


# --- one module ---------------------------------------------------------------------------


@pytest.mark.parametrize("elem", [BFloat16, Float16])
def test_linear_computes_in_16_bits_from_float32_weights(elem: type[tn.FloatTag]) -> None:
    """The output is the 16-bit product of the input and the weights rounded to 16 bits
    (accumulated in float32); the gradients are Float32, the cotangent cast back."""
    tn.manual_seed(0)
    fc = nn.Linear(5, 3, precision=PComputeElemIs(elem))
    x0 = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    x = tn.tensor(x0, elem, CPU, Dim2)
    y = fc(x)
    assert y.elem is elem
    assert fc.weight.elem is Float32
    w, b = fc.weight.numpy(), fc.bias.numpy()
    product = _round(_round(x0, elem) @ _round(w, elem).T, elem)
    np.testing.assert_array_equal(
        y.numpy().astype(np.float32), _round(product + _round(b, elem), elem)
    )
    grads = tn.grad(ops.reduce_sum(ops.astype(y, Float32)), fc)
    assert grads.weight.elem is Float32
    # d sum / d w = column sums of x (in 16 bits: x rounded, summed in float32)
    expected = np.tile(_round(x0, elem).sum(0), (3, 1))
    np.testing.assert_allclose(grads.weight.numpy(), expected, rtol=1e-2)


def test_unmixed_modules_are_as_before_and_the_runtime_default() -> None:
    """Without precision= nothing is cast; ``nn.Linear[Float32, CPU]`` is
    ``nn.Linear[Float32, CPU, Float32]`` at run time too (PEP 696's default)."""
    fc = nn.Linear(3, 2)
    assert fc.compute_elem is None
    assert nn.Linear[Float32, CPU] == nn.Linear[Float32, CPU, Float32]
    same = nn.Linear(3, 2, precision=PComputeElemIs(Float32))  # computing in elem: no casts
    assert same.compute_elem is None
    x = tn.ones((2, 3), Float32, CPU)
    assert "astype" not in repr(same(x))


def test_mixed_input_and_bad_policies_are_clear_errors() -> None:
    fc = nn.Linear(3, 2, precision=PMixedBFloat16)
    x32: Any = tn.ones((2, 3), Float32, CPU)  # a static error too (tests/static/bad_precision.py)
    with pytest.raises(
        tn.ElemTypeError,
        match=r"cannot apply Linear: it computes in BFloat16, the input is Float32(.|\n)*"
        r"ops\.astype\(x, tn\.BFloat16\)",
    ):
        fc(x32)
    bad: Any = PParamElemIs(Float32)
    with pytest.raises(
        tn.ParamError,
        match=r"cannot create Linear: precision= takes a PrecisionPolicy object setting "
        r"compute_elem(.|\n)*PParamElemIs\(Float32\)(.|\n)*the parameters' type is elem=",
    ):
        nn.Linear(3, 2, precision=bad)


def _catalogue(precision: Any) -> list[tuple[Any, Callable[[type[tn.FloatTag]], Any]]]:
    """(module, its input in a type) for every catalogue module with parameters."""
    r = np.random.default_rng(3)

    def data(shape: tuple[int, ...]) -> Callable[[type[tn.FloatTag]], Any]:
        values = r.standard_normal(shape).astype(np.float32)
        return lambda e: tn.tensor(values, e, CPU, dim_of_rank(len(shape)))

    ids = tn.tensor(r.integers(0, 7, (2, 5)), tn.Int64, CPU, Dim2)
    tn.manual_seed(1)
    return [
        (nn.Linear(4, 3, precision=precision), data((2, 5, 4))),
        (nn.Conv2d(2, 3, 3, padding=1, precision=precision), data((2, 2, 5, 5))),
        (nn.BatchNorm(3, precision=precision), data((4, 3))),
        (nn.LayerNorm(4, precision=precision), data((2, 5, 4))),
        (nn.Embedding(7, 4, precision=precision), lambda e: ids),
        (nn.MultiHeadAttention(8, 2, causal=True, precision=precision), data((2, 5, 8))),
        (nn.LSTM(4, 3, precision=precision), data((5, 2, 4))),
        (nn.GRU(4, 3, batch_first=True, precision=precision), data((2, 5, 4))),
    ]


def _close(a: Any, b: Any, tolerance: float, what: str) -> None:
    """``a`` within ``tolerance`` of ``b`` relative to ``b``'s largest magnitude (at least
    1: a gradient summing values that cancel is ~0 in Float32, a few roundings in 16 bits)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    error = float(np.abs(a - b).max()) / max(float(np.abs(b).max()), 1.0)
    assert error <= tolerance, (what, error, tolerance)


@pytest.mark.parametrize("elem", [BFloat16, Float16])
def test_every_catalogue_module_computes_in_the_policy_type(elem: type[tn.FloatTag]) -> None:
    """Each module of the catalogue, mixed: its output in ``elem`` and its gradients in
    Float32, both within 2.5 units in the last place of ``elem`` (relative to the largest
    value) of the same module computing in Float32 (measured: at most 1.7 for BFloat16, 1.6
    for Float16, both GRU's gradients)."""
    tolerance = 2.5 * (2.0**-7 if elem is BFloat16 else 2.0**-10)
    for (mixed, feed), (full, _) in zip(
        _catalogue(PComputeElemIs(elem)), _catalogue(PComputeElemIs(Float32)), strict=True
    ):
        name = type(mixed).__name__
        out = mixed(feed(elem))
        ref = full(feed(Float32))
        out, ref = (out[0], ref[0]) if isinstance(out, tuple) else (out, ref)
        assert out.elem is elem, name
        _close(out.numpy(), ref.numpy(), tolerance, name)
        g16 = tn.grad(ops.reduce_sum(ops.square(ops.astype(out, Float32))), mixed)
        g32 = tn.grad(ops.reduce_sum(ops.square(ref)), full)
        for (path, a), (_, b) in zip(
            nn.named_parameters(g16), nn.named_parameters(g32), strict=True
        ):
            assert a.elem is Float32, f"{name}.{path}"
            _close(a.numpy(), b.numpy(), tolerance, f"{name}.{path}")


def test_batch_norm_keeps_float32_statistics() -> None:
    bn = nn.BatchNorm(3, precision=PMixedBFloat16)
    x = tn.tensor(np.arange(12.0).reshape(4, 3), BFloat16, CPU, Dim2)
    y = bn(x)
    assert y.elem is BFloat16
    assert bn.running_mean.elem is Float32
    np.testing.assert_allclose(bn.running_mean.numpy(), [0.45, 0.55, 0.65], rtol=1e-6)


# --- training: optimizer state and loss scaling ---------------------------------------------


class DigitsMLP(nn.Module, Generic[CE]):
    """The CLI's digits classifier shape (64 -> hidden -> 10), computing in ``CE``."""

    def __init__(self, hidden: int, precision: ComputeIn[CE]) -> None:
        self.fc1 = nn.Linear(64, hidden, precision=precision)
        self.fc2 = nn.Linear(hidden, 10, precision=precision)

    def __call__(self, x: tn.Matrix[CE, tn.CPU]) -> tn.Matrix[CE, tn.CPU]:
        return self.fc2(ops.relu(self.fc1(x)))


def test_adam_state_of_a_mixed_model_is_float32() -> None:
    model = DigitsMLP(8, PMixedBFloat16)
    opt = optim.Adam(model, lr=1e-2)
    x = tn.ones((4, 64), BFloat16, CPU)
    labels = tn.tensor([0, 1, 2, 3], tn.Int64, CPU, Dim1)
    opt.step(tn.grad(ops.cross_entropy(ops.astype(model(x), Float32), labels), model))
    weights = [w for w in nn.parameters(model) if isinstance(w, tn.Tensor)]
    state = [t for w in weights for t in opt.rule.state_tensors(w).values()]
    assert state
    assert all(t.elem is Float32 for t in state)
    assert all(p.elem is Float32 for p in nn.parameters(model))


def _scaled_step(model: Any, opt: Any, scaler: LossScaler[Any]) -> Any:
    @tn.compile
    def step(x: Any, labels: Any) -> Any:
        loss = ops.cross_entropy(ops.astype(model(x), Float32), labels)
        scaler.step(opt, tn.grad(scaler.scale_loss(loss), model))
        return loss

    return step


@pytest.mark.parametrize("compiled", [True, False])
def test_loss_scaler_over_a_module_skips_an_overflow(compiled: bool) -> None:
    """``scaler.step(opt, grads)`` with a module: a good step is the unscaled Adam step; a
    step whose Float16 gradients overflow changes no weight, no Adam moment and not the step
    count, and halves the scale; compiled, one trace."""
    tn.manual_seed(0)
    model = DigitsMLP(8, PMixedFloat16)
    tn.manual_seed(0)
    twin = DigitsMLP(8, PMixedFloat16)
    opt, twin_opt = optim.Adam(model, lr=1e-2), optim.Adam(twin, lr=1e-2)
    scaler = LossScaler(CPU, init_scale=1.0, growth_interval=100)  # the first step: unscaled
    x = tn.tensor(np.random.default_rng(0).random((16, 64)), Float16, CPU, Dim2)
    labels = tn.tensor(np.arange(16) % 10, tn.Int64, CPU, Dim1)

    def eager(x: Any, labels: Any) -> Any:
        loss = ops.cross_entropy(ops.astype(model(x), Float32), labels)
        scaler.step(opt, tn.grad(scaler.scale_loss(loss), model))
        return loss

    step: Any = _scaled_step(model, opt, scaler) if compiled else eager
    step(x, labels)
    twin_opt.step(tn.grad(ops.cross_entropy(ops.astype(twin(x), Float32), labels), twin))
    for (_, a), (_, b) in zip(nn.named_parameters(model), nn.named_parameters(twin), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)
    assert opt.step_count == 1
    if debug_enabled():  # debug mode reports the overflow itself (docs/precision.md)
        return
    scaler.scale.array[...] = 2.0**30  # the cotangent overflows Float16
    before = [t.numpy().copy() for t in opt.step_tensors()]
    step(x, labels)
    after = [t.numpy() for t in opt.step_tensors()]
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    assert opt.step_count == 1
    assert float(scaler.scale.numpy()) == 2.0**29
    if compiled:
        assert step.traces == 1


# --- training to Float32's accuracy ---------------------------------------------------------


def _train_digits(precision: ComputeIn[Any], elem: type[tn.FloatTag]) -> tuple[float, float]:
    """150 Adam steps of batch 128 over the CLI's digits split: (test accuracy, last loss)."""
    from typed_nn.train.data import load_digits

    split = load_digits()
    tn.manual_seed(0)
    model = DigitsMLP(32, precision)
    opt = optim.Adam(model, lr=1e-2)
    scaler = LossScaler(CPU, init_scale=2.0**12, growth_interval=50) if elem is Float16 else None

    @tn.compile
    def step(x: Any, labels: Any) -> tn.Scalar[Float32, CPU]:
        loss = ops.cross_entropy(ops.astype(model(x), Float32), labels)
        if scaler is None:
            opt.step(tn.grad(loss, model))
        else:
            scaler.step(opt, tn.grad(scaler.scale_loss(loss), model))
        return loss

    rng = np.random.default_rng(0)
    features, labels = split.train.features, split.train.labels
    for _ in range(150):
        i = rng.choice(len(labels), 128, replace=False)
        loss = step(
            tn.tensor(features[i], elem, CPU, Dim2), tn.tensor(labels[i], tn.Int64, CPU, Dim1)
        )
    assert step.traces == 1
    with tn.inference():
        logits = model(tn.tensor(split.test.features, elem, CPU, Dim2)).numpy()
    accuracy = float(np.mean(logits.astype(np.float32).argmax(1) == split.test.labels))
    return accuracy, float(loss.numpy())


DIGITS_TOLERANCE = 0.02
"""16-bit compute's test accuracy may trail Float32's by this much (measured: 0.956 in
Float32, 0.956 in BFloat16, 0.953 in Float16 with loss scaling)."""


def test_digits_mlp_in_16_bits_reaches_its_float32_accuracy() -> None:
    pytest.importorskip("sklearn")
    full, _ = _train_digits(PComputeElemIs(Float32), Float32)
    assert full > 0.93
    for precision, elem in ((PMixedBFloat16, BFloat16), (PMixedFloat16, Float16)):
        accuracy, loss = _train_digits(precision, elem)
        assert accuracy >= full - DIGITS_TOLERANCE, (elem.__name__, accuracy, full)
        assert loss < 0.3, (elem.__name__, loss)


class CharLM(nn.Module, Generic[CE]):
    """docs/modules.md's character LM, computing in ``CE``."""

    def __init__(self, vocab: int, d: int, precision: ComputeIn[CE]) -> None:
        self.emb = nn.Embedding(vocab, d, precision=precision)
        self.attn = nn.MultiHeadAttention(d, 4, causal=True, precision=precision)
        self.norm = nn.LayerNorm(d, precision=precision)
        self.head = nn.Linear(d, vocab, precision=precision)

    def __call__(self, ids: Ids) -> tn.Tensor3[CE, tn.CPU]:
        h = self.emb(ids)
        return self.head(self.norm(h + self.attn(h)))


TEXT = np.tile(np.random.default_rng(0).integers(0, 16, 23), 40)
"""A text the model can learn: 23 random characters of a 16-letter alphabet, repeated."""


def _lm_batch(starts: Any) -> tuple[Ids, Ids]:
    chunk = np.stack([TEXT[s : s + 17] for s in starts])
    ids = tn.tensor(chunk[:, :-1], tn.Int64, CPU, Dim2)
    return ids, tn.tensor(chunk[:, 1:], tn.Int64, CPU, Dim2)


def _train_lm(precision: ComputeIn[Any], scaled: bool) -> float:
    """60 AdamW steps of 8 windows of 16 characters: the loss on 16 fixed windows."""
    tn.manual_seed(0)
    lm = CharLM(16, 32, precision)
    opt = optim.AdamW(lm, lr=1e-2)
    scaler = LossScaler(CPU, init_scale=2.0**10) if scaled else None

    @tn.compile
    def step(ids: Ids, targets: Ids) -> tn.Scalar[Float32, CPU]:
        loss = ops.cross_entropy(ops.astype(lm(ids), Float32), targets)
        if scaler is None:
            opt.step(tn.grad(loss, lm))
        else:
            scaler.step(opt, tn.grad(scaler.scale_loss(loss), lm))
        return loss

    rng = np.random.default_rng(1)
    for _ in range(60):
        step(*_lm_batch(rng.integers(0, len(TEXT) - 17, 8)))
    assert step.traces == 1
    ids, targets = _lm_batch(np.arange(0, 400, 25))
    with tn.inference():
        return float(ops.cross_entropy(ops.astype(lm(ids), Float32), targets).numpy())


LM_TOLERANCE = 0.03
"""16-bit compute's held-out loss may exceed Float32's by this much (nats; measured: 0.258
in Float32, 0.256 in BFloat16, 0.258 in Float16 with loss scaling, from 2.85 at the start)."""


def test_char_lm_in_16_bits_reaches_its_float32_loss() -> None:
    full = _train_lm(PComputeElemIs(Float32), scaled=False)
    assert full < 0.5
    for precision, scaled in ((PMixedBFloat16, False), (PMixedFloat16, True)):
        loss = _train_lm(precision, scaled)
        assert loss <= full + LM_TOLERANCE, (precision, loss, full)

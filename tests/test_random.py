"""Random numbers: ``tn.Generator`` and the draws ``ops.normal / uniform / bernoulli / randint /
permutation``: the distributions (moments and ranges at n = 1e5, against numpy's Philox),
reproducibility, fresh numbers at every compiled call (the same sequence as eager code),
lazy draws that keep the numbers of their own draw, the reparameterisation gradient, the GPU,
and every error by its text."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import ops

N = 100_000
SIGMA = 6.0
"""Bounds of the moment checks, in standard errors: a false alarm is a 1e-9 event, a seeded
test cannot flake; a wrong distribution misses them by far more."""
V32 = tn.Vector[tn.Float32, tn.CPU]


def philox_numbers(seed: int, counter: int) -> np.random.Generator:
    """The stream of draw ``counter`` of a generator seeded ``seed``, as documented: numpy's
    Philox keyed by (seed, 0), started at block ``counter * 2**64``."""
    key = np.array([seed, 0], np.uint64)
    start = np.array([0, counter, 0, 0], np.uint64)
    return np.random.Generator(np.random.Philox(counter=start, key=key))


# --- distributions ----------------------------------------------------------------------------


@pytest.mark.parametrize("elem", [tn.Float32, tn.Float64])
def test_normal_has_its_mean_and_std_and_is_numpys_philox_stream(elem: Any) -> None:
    gen = tn.Generator(11)
    x = ops.normal(gen, (N,), elem, mean=2.0, std=3.0).numpy()
    assert x.dtype == elem.dtype
    assert x.shape == (N,)
    assert abs(x.mean() - 2.0) < SIGMA * 3.0 / np.sqrt(N)
    assert abs(x.std() - 3.0) < SIGMA * 3.0 / np.sqrt(2 * N)
    z = ops.normal(gen, (4, 5), elem).numpy()  # the generator's second draw: counter 1
    expected = philox_numbers(11, 1).standard_normal((4, 5), dtype=elem.dtype)
    np.testing.assert_array_equal(z, expected)


def test_uniform_lies_in_its_half_open_interval_with_its_moments() -> None:
    gen = tn.Generator(3)
    u = ops.uniform(gen, (N,), tn.Float64, low=-2.0, high=6.0).numpy()
    assert u.min() >= -2.0
    assert u.max() < 6.0
    assert abs(u.mean() - 2.0) < SIGMA * 8.0 / np.sqrt(12 * N)
    assert abs(u.var() - 64.0 / 12) < 0.1
    unit = ops.uniform(gen, (N,)).numpy()
    assert unit.dtype == np.float32
    assert unit.min() >= 0.0
    assert unit.max() < 1.0
    # float32 rounding of low + (high - low) * u never reaches high
    narrow = ops.uniform(gen, (N,), low=1.0, high=1.0 + 2**-20).numpy()
    assert narrow.max() < np.float32(1.0 + 2**-20)


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 1.0])
def test_bernoulli_is_one_with_probability_p(p: float) -> None:
    b = ops.bernoulli(tn.Generator(5), (N,), p, tn.Int64).numpy()
    assert b.dtype == np.int64
    assert set(np.unique(b)) <= {0, 1}
    assert abs(b.mean() - p) <= SIGMA * np.sqrt(p * (1 - p) / N)


def test_randint_draws_every_value_of_its_range_evenly() -> None:
    r = ops.randint(tn.Generator(8), (N,), -3, 7).numpy()
    assert r.dtype == np.int64
    counts = np.bincount(r + 3, minlength=10)
    assert r.min() == -3
    assert r.max() == 6
    assert len(counts) == 10
    assert np.all(np.abs(counts - N / 10) < SIGMA * np.sqrt(N * 0.1 * 0.9))
    small = ops.randint(tn.Generator(8), (5, 4), 0, 2, tn.Int32).numpy()
    assert small.dtype == np.int32
    assert small.shape == (5, 4)


def test_permutation_is_a_permutation_and_shuffles() -> None:
    gen = tn.Generator(2)
    p = ops.permutation(gen, 1000).numpy()
    assert p.dtype == np.int64
    np.testing.assert_array_equal(np.sort(p), np.arange(1000))
    assert not np.array_equal(p, np.arange(1000))
    assert not np.array_equal(ops.permutation(gen, 1000).numpy(), p)
    assert ops.permutation(gen, 0).numpy().shape == (0,)
    data = tn.tensor(np.arange(12.0).reshape(6, 2), tn.Float64, tn.CPU, tn.Dim2)
    order = ops.permutation(gen, 6)
    np.testing.assert_array_equal(ops.embedding(data, order).numpy(), data.numpy()[order.numpy()])


# --- the stream: reproducible, fresh, lazy draws keep their numbers ----------------------------


def test_the_same_seed_gives_the_same_sequence_and_each_draw_is_fresh() -> None:
    a, b = tn.Generator(7), tn.Generator(7)
    first = [ops.normal(g, (50,)).numpy() for g in (a, a, a)]
    again = [ops.normal(g, (50,)).numpy() for g in (b, b, b)]
    for x, y in zip(first, again, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(first[1], first[2])
    assert not np.array_equal(ops.normal(tn.Generator(8), (50,)).numpy(), first[0])
    assert a.state.numpy().tolist() == [7, 3]  # [seed, draws so far]


def test_successive_draws_share_no_numbers() -> None:
    """Each draw owns its own Philox block range: draw c + 1 is no shifted copy of draw c."""
    gen = tn.Generator(0)
    x = ops.uniform(gen, (4096,), tn.Float64).numpy()
    y = ops.uniform(gen, (4096,), tn.Float64).numpy()
    assert not set(x.tolist()) & set(y.tolist())


def test_a_lazy_draw_keeps_the_numbers_of_its_own_draw() -> None:
    gen = tn.Generator(4)
    a = ops.normal(gen, (6,))
    b = ops.normal(gen, (6,))
    later = tn.evaluate(b).numpy()
    first = tn.evaluate(a).numpy()
    ref = tn.Generator(4)
    np.testing.assert_array_equal(first, ops.normal(ref, (6,)).numpy())
    np.testing.assert_array_equal(later, ops.normal(ref, (6,)).numpy())
    np.testing.assert_array_equal(a.numpy(), first)  # evaluated again: the same numbers
    c, d = ops.normal(tn.Generator(4), (6,)), ops.normal(tn.Generator(4), (6,))
    np.testing.assert_array_equal(tn.evaluate(c - d).numpy(), np.zeros(6, np.float32))


def test_manual_seed_restarts_a_generator_and_the_default_ones() -> None:
    gen = tn.Generator(1)
    x = ops.uniform(gen, (8,)).numpy()
    ops.uniform(gen, (8,))
    assert gen.manual_seed(1) is gen
    np.testing.assert_array_equal(ops.uniform(gen, (8,)).numpy(), x)
    default = tn.default_generator()
    assert tn.default_generator(tn.CPU) is default
    try:
        tn.manual_seed(1)
        np.testing.assert_array_equal(ops.uniform(default, (8,)).numpy(), x)
        tn.manual_seed(1)
        np.testing.assert_array_equal(ops.uniform(tn.default_generator(), (8,)).numpy(), x)
    finally:
        tn.manual_seed(0)
    assert default.state.numpy().tolist() == [0, 0]


def test_a_saved_state_written_back_resumes_the_stream() -> None:
    gen = tn.Generator(9)
    ops.normal(gen, (3,))
    saved = gen.state.numpy().copy()
    expected = [ops.normal(gen, (3,)).numpy() for _ in range(2)]
    gen.state.assign(tn.tensor(saved, tn.Int64, tn.CPU, tn.Dim1))
    for want in expected:
        np.testing.assert_array_equal(ops.normal(gen, (3,)).numpy(), want)


# --- inside tn.compile --------------------------------------------------------------------------


def test_a_compiled_function_draws_fresh_numbers_the_eager_sequence() -> None:
    gen = tn.Generator(5)

    @tn.compile
    def noisy(x: V32) -> tuple[Any, Any]:
        return x + ops.normal(gen, (3,)), ops.randint(gen, (4,), 0, 1000)

    x = tn.zeros((3,), tn.Float32, tn.CPU)
    calls = [tuple(r.numpy() for r in noisy(x)) for _ in range(4)]
    assert noisy.traces == 1
    assert gen.state.numpy().tolist() == [5, 8]  # two draws per call, advanced in the program
    eager = tn.Generator(5)
    for normal, ints in calls:  # the k-th draw of call i reads counter 2i + k, as eagerly
        np.testing.assert_array_equal(normal, ops.normal(eager, (3,)).numpy())
        np.testing.assert_array_equal(ints, ops.randint(eager, (4,), 0, 1000).numpy())
    assert not np.array_equal(calls[0][0], calls[1][0])
    ops.normal(gen, (3,))  # eager and compiled draws share one stream
    np.testing.assert_array_equal(
        noisy(x)[0].numpy(), (ops.normal(eager, (3,)), ops.normal(eager, (3,)))[1].numpy()
    )
    gen.manual_seed(5)  # in place: the compiled function reads the restarted state
    np.testing.assert_array_equal(noisy(x)[0].numpy(), calls[0][0])


def test_the_reparameterised_sample_differentiates_inside_a_compiled_step() -> None:
    gen = tn.Generator(6)
    mu = tn.tensor(np.array([0.5, -1.0, 2.0]), tn.Float64, tn.CPU, tn.Dim1)
    sigma = tn.tensor(np.array([1.0, 0.5, 0.1]), tn.Float64, tn.CPU, tn.Dim1)

    @tn.compile
    def step() -> tuple[Any, Any, Any]:
        eps = ops.normal(gen, (3,), tn.Float64)
        z = mu + sigma * eps
        g_mu, g_sigma = tn.grad(ops.reduce_sum(z * z), (mu, sigma))
        return eps, g_mu, g_sigma

    seen = []
    for _ in range(3):
        eps, g_mu, g_sigma = (r.numpy() for r in step())
        z = mu.numpy() + sigma.numpy() * eps
        np.testing.assert_allclose(g_mu, 2 * z, rtol=1e-12)
        np.testing.assert_allclose(g_sigma, 2 * z * eps, rtol=1e-12)
        seen.append(eps)
    assert not np.array_equal(seen[0], seen[1])


def test_the_reparameterisation_gradient_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    gen = tn.Generator(12)
    mu = tn.tensor(np.linspace(-1, 1, 6).reshape(2, 3), tn.Float64, tn.CPU, tn.Dim2)
    log_sigma = tn.tensor(np.linspace(-0.5, 0.5, 6).reshape(2, 3), tn.Float64, tn.CPU, tn.Dim2)
    eps = ops.normal(gen, (2, 3), tn.Float64)
    z = mu + ops.exp(log_sigma) * eps
    loss = ops.reduce_sum(ops.tanh(z))
    g_mu, g_ls = tn.grad(loss, (mu, log_sigma))
    t_mu = torch.tensor(mu.numpy(), requires_grad=True)
    t_ls = torch.tensor(log_sigma.numpy(), requires_grad=True)
    torch.tanh(t_mu + torch.exp(t_ls) * torch.tensor(eps.numpy())).sum().backward()
    np.testing.assert_allclose(g_mu.numpy(), t_mu.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g_ls.numpy(), t_ls.grad.numpy(), rtol=1e-12)


# --- the GPU ---------------------------------------------------------------------------------


def test_gpu_draws_equal_the_cpu_draws_of_the_same_seed(cupy_module: Any) -> None:
    cpu, gpu = tn.Generator(21), tn.Generator(21, tn.GPU)
    assert gpu.state.device is tn.GPU
    pairs: list[tuple[Any, Any]] = [
        (ops.normal(cpu, (3, 4)), ops.normal(gpu, (3, 4))),
        (ops.uniform(cpu, (5,), tn.Float64), ops.uniform(gpu, (5,), tn.Float64)),
        (ops.bernoulli(cpu, (7,), 0.3), ops.bernoulli(gpu, (7,), 0.3)),
        (ops.randint(cpu, (6,), 0, 9), ops.randint(gpu, (6,), 0, 9)),
        (ops.permutation(cpu, 8), ops.permutation(gpu, 8)),
    ]
    for on_cpu, on_gpu in pairs:
        assert on_gpu.device is tn.GPU
        np.testing.assert_array_equal(on_gpu.numpy(), on_cpu.numpy())

    @tn.compile
    def draw() -> Any:
        return ops.normal(gpu, (4,)) * 2.0

    first, second = draw().numpy(), draw().numpy()
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, ops.normal(cpu, (4,)).numpy() * 2.0)
    np.testing.assert_array_equal(second, ops.normal(cpu, (4,)).numpy() * 2.0)
    assert gpu.state.numpy().tolist() == cpu.state.numpy().tolist()


# --- errors ------------------------------------------------------------------------------------


def test_a_generator_draws_on_its_own_device_only() -> None:
    gen: Any = tn.Generator(0)
    with pytest.raises(
        tn.DeviceError,
        match=r"^cannot draw normal on GPU: the generator lives on CPU\.\n"
        r"  generator +: CPU\n  device    : GPU\n.*\nhint: use a generator of that device: "
        r"tn\.Generator\(seed, tn\.GPU\)\.",
    ):
        ops.normal(gen, (2,), tn.Float32, tn.GPU)
    assert gen.state.numpy().tolist() == [0, 0]  # a refused draw does not advance


def test_bad_arguments_are_refused_by_name() -> None:
    gen: Any = tn.Generator(0)
    u: Any = ops  # the calls below are wrong on purpose: checked at run time
    t: Any = tn
    cases: list[tuple[type[Exception], str, Any]] = [
        (
            tn.OperandError,
            r"^cannot draw normal: the first argument must be a tn\.Generator\.\n"
            r"  received +: 3 \(int\)",
            lambda: u.normal(3, (2,)),
        ),
        (
            tn.ShapeError,
            r"^uniform needs a shape tuple of non-negative ints, got \[2, 3\]",
            lambda: u.uniform(gen, [2, 3]),
        ),
        (
            tn.ShapeError,
            r"^normal needs a shape tuple of non-negative ints, got \(-1,\)",
            lambda: u.normal(gen, (-1,)),
        ),
        (
            tn.ParamError,
            r"^cannot draw bernoulli: p must be a number in \[0, 1\]\.\n"
            r"  p +: 1\.5 \(float\)",
            lambda: u.bernoulli(gen, (2,), 1.5),
        ),
        (
            tn.ParamError,
            r"^cannot draw bernoulli: p must be",
            lambda: u.bernoulli(gen, (2,), -0.1),
        ),
        (
            tn.ParamError,
            r"^cannot draw randint: high must be an int > low \(5\)\.\n"
            r"  high +: 5 \(int\)",
            lambda: u.randint(gen, (2,), 5, 5),
        ),
        (
            tn.ParamError,
            r"^cannot draw randint: low must be an int\.",
            lambda: u.randint(gen, (2,), 0.5, 3),
        ),
        (
            tn.ParamError,
            r"^cannot draw uniform: high must be a finite number > low \(1\.0\)\.",
            lambda: u.uniform(gen, (2,), low=1.0, high=0.0),
        ),
        (
            tn.ParamError,
            r"^cannot draw normal: std must be a finite number >= 0\.",
            lambda: u.normal(gen, (2,), std=-1.0),
        ),
        (
            tn.ParamError,
            r"^cannot draw normal: mean must be a finite number\.",
            lambda: u.normal(gen, (2,), mean=float("nan")),
        ),
        (
            tn.ParamError,
            r"^cannot draw randint of Int32: \[0, 4294967296\) does not fit it\.\n"
            r"  low +: 0\n  high +: 4294967296\n  Int32 +: -2147483648 \.\. 2147483647",
            lambda: u.randint(gen, (2,), 0, 2**32, tn.Int32),
        ),
        (
            tn.ElemTypeError,
            r"^cannot draw randint of Float32: its element must be Int32 or "
            r"Int64\.\n  elem +: Float32\n.*\nhint: pass elem=Int32, or cast the result with "
            r"ops\.astype\.",
            lambda: u.randint(gen, (2,), 0, 3, tn.Float32),
        ),
        (
            tn.ElemTypeError,
            r"^cannot draw normal of Int64: its element must be Float32 or "
            r"Float64\.",
            lambda: u.normal(gen, (2,), tn.Int64),
        ),
        (
            tn.TagError,
            r"^uniform: elem must be an element tag, got float",
            lambda: u.uniform(gen, (2,), float),
        ),
        (
            tn.ParamError,
            r"^cannot draw permutation: n must be an int >= 0\.\n  n +: -1 \(int\)",
            lambda: u.permutation(gen, -1),
        ),
        (
            tn.ParamError,
            r"^Generator: the seed must be an int in 0 \.\. 2\*\*63 - 1\.\n"
            r"  received +: -1 \(int\)",
            lambda: t.Generator(-1),
        ),
        (tn.ParamError, r"^manual_seed: the seed must be an int", lambda: t.manual_seed(1.5)),
        (tn.TagError, r"^Generator: device must be a device tag", lambda: t.Generator(0, "cpu")),
    ]
    for error, text, call in cases:
        with pytest.raises(error, match=text):
            call()
    assert gen.state.numpy().tolist() == [0, 0]  # nothing refused advanced the generator


def test_a_state_of_the_wrong_type_is_refused_by_the_op() -> None:
    state = tn.tensor(np.array([1.0, 2.0]), tn.Float64, tn.CPU, tn.Dim1)
    with pytest.raises(
        tn.ElemTypeError,
        match=r"^cannot build dropout_mask: the state is not an Int64 vector \[seed, counter\]\.\n"
        r"  state +: Tensor\[Float64, CPU, Dim1\]\(2\)",
    ):
        ops.dropout_mask(state, (2,), 0.5, tn.Float32)  # type: ignore[arg-type]

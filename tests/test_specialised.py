"""Specialised numpy kernels give exactly the plain kernels' numbers, and step aside when
they do not apply or another implementation is registered in place of the plain one."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import t32, tagged

import typed_nn as tn
from typed_nn import ops
from typed_nn.backends.numpy.nn import group_sums, t_log_p
from typed_nn.evaluate import hooks, last_program, options, stats
from typed_nn.evaluate.cache import invalidate_caches
from typed_nn.ops import declare
from typed_nn.ops.declare import Site, implementation, inline_kernel, specialisation
from typed_nn.tags import CPU

rng = np.random.default_rng(7)
Array = Any


def _site(op_args: list[Array | float], params: tuple[Any, ...], result: Array) -> Site:
    operands = tuple((a.shape, a.dtype) if isinstance(a, np.ndarray) else None for a in op_args)
    return Site(operands, params, result.shape, result.dtype)


def _same_as_plain(op: str, args: list[Array | float], params: tuple[Any, ...]) -> None:
    """The specialised kernel's result equals the plain one's, bit for bit (NaNs too)."""
    want = np.asarray(implementation(op, CPU)(*args, *params))
    special = specialisation(op, CPU, _site(args, params, want))
    assert special is not None
    if special.writes:
        out = np.full(want.shape, np.nan, want.dtype)
        got = _run(special, *args, out=out)
        assert got is out
    else:
        got = _run(special, *args)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_array_equal(
        np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8)
    )


def _into_same_as_plain(op: str, args: list[Array], params: tuple[Any, ...]) -> None:
    """The kernel written into a buffer (``out=``, as a plan calls it) gives its fresh
    result's bits."""
    plain = implementation(op, CPU)
    want = np.asarray(plain(*args, *params))
    out = np.full(want.shape, np.nan, want.dtype)
    assert plain(*args, *params, out=out) is out
    np.testing.assert_array_equal(_bits(out), _bits(want))


def _bits(x: Array) -> Array:
    return np.ascontiguousarray(x).reshape(-1).view(np.uint8)


def _run(special: declare.Specialised, *args: Array | float, out: Array | None = None) -> Array:
    """Call the kernel; an inline body is written into a function as a plan writes it."""
    if not isinstance(special.fn, declare.Inline):
        return special.fn(*args) if out is None else special.fn(*args, out=out)
    operands = [f"x{i}" for i in range(len(args))]
    body = special.fn.lines(operands, None if out is None else "out", lambda key: key)
    last = "return out" if out is not None else f"return {body.pop()}"
    source = f"def kernel({', '.join([*operands, 'out'])}):\n" + "".join(
        f"    {line}\n" for line in [*body, last]
    )
    namespace = dict(special.fn.names)
    exec(source, namespace)
    return namespace["kernel"](*args, out)


def _normal(*shape: int, dtype: Any = np.float32) -> Array:
    return rng.normal(size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("a", "b"), [((5, 7), (7, 3)), ((7,), (7, 3)), ((5, 7), (7,))])
def test_dot_is_matmul_into_the_buffer(dtype: Any, a: tuple[int, ...], b: tuple[int, ...]) -> None:
    _same_as_plain("dot", [_normal(*a, dtype=dtype), _normal(*b, dtype=dtype)], (1,))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int64])
def test_dot_into_a_buffer_numpy_dot_refuses_or_of_a_broadcast_operand(dtype: Any) -> None:
    """``np.dot`` (the short way to a BLAS type's product) takes only an aligned C array
    ``out``: into a column block, a transposed or an unaligned buffer the product is
    ``np.matmul``'s, the plain kernel's too; an operand of stride 0 (which ``np.dot``
    copies) gives the plain kernel's bits."""
    a, b = (10 * _normal(5, 7)).astype(dtype), (10 * _normal(7, 3)).astype(dtype)
    plain = implementation("dot", CPU)
    want = np.asarray(plain(a, b, 1))
    special = specialisation("dot", CPU, _site([a, b], (1,), want))
    assert special is not None
    item = np.dtype(dtype).itemsize
    for make in (
        lambda: np.zeros((5, 6), dtype)[:, :3],
        lambda: np.zeros((3, 5), dtype).T,
        lambda: np.ndarray((5, 3), dtype, buffer=bytearray(15 * item + 1), offset=1),
    ):
        assert not make().flags.carray
        np.testing.assert_array_equal(_bits(_run(special, a, b, out=make())), _bits(want))
        np.testing.assert_array_equal(_bits(plain(a, b, 1, out=make())), _bits(want))
    row = np.broadcast_to((10 * _normal(7)).astype(dtype), (5, 7))  # stride 0: dot copies it
    out = np.zeros(want.shape, dtype)
    np.testing.assert_array_equal(_bits(_run(special, row, b, out=out)), _bits(plain(row, b, 1)))


def test_a_product_assigned_into_an_unaligned_tensor() -> None:
    """np.dot refuses an unaligned ``out`` (review: it was an EvaluationError after writes
    began); eager and compiled."""
    memory = np.ndarray((6, 4), np.float64, buffer=bytearray(6 * 4 * 8 + 1), offset=1)
    memory[...] = 0.0
    w = tn.tensor(memory, tn.Float64, tn.CPU, tn.Dim2, copy=False)
    a, b = _normal(6, 5, dtype=np.float64), _normal(5, 4, dtype=np.float64)
    w.assign(tagged(a, tn.Float64) @ tagged(b, tn.Float64))
    np.testing.assert_allclose(memory, a @ b, rtol=1e-12)
    w.assign(w * 0.0)

    def step() -> None:
        w.assign(tagged(a, tn.Float64) @ tagged(b, tn.Float64))

    tn.compile(step)()
    np.testing.assert_allclose(memory, a @ b, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tensor_contractions_are_tensordots_gemm_into_the_buffer(dtype: Any) -> None:
    a = _normal(2, 3, 4, dtype=dtype)
    _same_as_plain("dot", [a, _normal(3, 4, 5, dtype=dtype)], (2,))
    _same_as_plain("dot", [a, _normal(4, 2, 5, dtype=dtype)], (1,))
    # a weight gradient: transposed activations (their contracted dims merge into a view)
    # by a cotangent, and by a cotangent whose contracted dims do not merge (copied)
    x, g = _normal(8, 6, 5, dtype=dtype), _normal(8, 6, 7, dtype=dtype)
    _same_as_plain("dot", [np.transpose(x, (2, 0, 1)), g], (2,))
    _same_as_plain(
        "dot", [np.transpose(x, (2, 0, 1)), np.transpose(_normal(8, 7, 6), (0, 2, 1))], (2,)
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("b", [(4, 5), (4,)])
def test_dot_of_a_stack_of_rows_is_one_gemm_into_the_buffer(dtype: Any, b: tuple[int, ...]) -> None:
    a = _normal(2, 3, 4, dtype=dtype)
    _same_as_plain("dot", [a, _normal(*b, dtype=dtype)], (1,))
    _same_as_plain("dot", [np.transpose(a, (1, 0, 2)), _normal(*b, dtype=dtype)], (1,))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_stack_into_the_buffer(axis: int) -> None:
    _into_same_as_plain("stack", [_normal(3, 4), _normal(4, 3).T, _normal(3, 4)], (axis,))


def test_concat_or_stack_of_mixed_dtypes_into_a_buffer_of_their_common_dtype() -> None:
    items = [_normal(2, 3), _normal(2, 3, dtype=np.float64)]
    for op in ("concat", "stack"):
        _into_same_as_plain(op, items, (0,))


@pytest.mark.parametrize(("axis", "start", "length"), [(0, 1, 2), (1, 0, 3), (2, 2, 2)])
def test_narrow_is_the_same_view(axis: int, start: int, length: int) -> None:
    x = _normal(4, 5, 6)
    _same_as_plain("narrow", [x], (axis, start, length))
    special = specialisation("narrow", CPU, _site([x], (axis, start, length), x))
    assert special is not None
    assert np.shares_memory(_run(special, x), x)


@pytest.mark.parametrize("index", [0, 2, -1])
def test_slice_is_the_same_view(index: int) -> None:
    x = _normal(3, 4, 5)
    _same_as_plain("slice", [x], (index,))
    special = specialisation("slice", CPU, _site([x], (index,), x[index]))
    assert special is not None
    assert np.shares_memory(_run(special, x), x)


def _plan_same_as_plain(op: str, args: list[Array]) -> None:
    """A lone element-wise node of a compiled plan (a region of one) gives its plain
    kernel's bits, NaNs and signed zeros too, call after call."""
    tensors = [tagged(a, tn.Float32 if a.dtype == np.float32 else tn.Float64) for a in args]
    f = tn.compile(lambda: getattr(ops, op)(*tensors))
    with np.errstate(all="ignore"):  # as a plan runs it (executor._run): e^1e4 is inf
        want = implementation(op, CPU)(*args)
        for _ in range(2):
            got = f().numpy()
            assert (got.shape, got.dtype) == (want.shape, want.dtype)
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_lone_sigmoid_in_a_plan_keeps_the_plain_kernels_limits(dtype: Any) -> None:
    x = np.concatenate([_normal(5, 7, dtype=dtype) * 10, [[-1e4, -100, -88, 0, 88, 100, 1e4]]])
    _plan_same_as_plain("sigmoid", [x.astype(dtype)])


@pytest.mark.parametrize("order", [(1, 0), (2, 1, 0), (0, 2, 1), (1, 2, 0)])
def test_permute_is_the_same_view(order: tuple[int, ...]) -> None:
    x = _normal(*[2, 3, 4][: len(order)])
    _same_as_plain("permute", [x], (order,))
    special = specialisation("permute", CPU, _site([x], (order,), np.transpose(x, order)))
    assert special is not None
    assert np.shares_memory(_run(special, x), x)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concat_into_the_buffer(axis: int) -> None:
    # items of different lengths, one column-major (a strided operand is copied the same way)
    parts = [_normal(*[2, 3, 4][:axis], n, *[2, 3, 4][axis + 1 :]) for n in (1, 3, 2)]
    parts[1] = np.asfortranarray(parts[1])
    _into_same_as_plain("concat", parts, (axis,))


@pytest.mark.parametrize(("dims", "keep"), [((0,), False), ((1,), True), ((0, 2), False)])
def test_reduce_sum_into_the_buffer(dims: tuple[int, ...], keep: bool) -> None:
    _same_as_plain("reduce_sum", [_normal(6, 5, 4)], (dims, keep))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("shape", "dims"), [((40, 7), (0,)), ((5, 8, 7), (0, 1)), ((2, 0, 4), (0, 1)), ((0, 3), (0,))]
)
def test_column_sums_into_the_buffer_are_the_plain_kernels_blas_product(
    shape: tuple[int, ...], dims: tuple[int, ...], dtype: Any
) -> None:
    """Sums over the leading dims into a vector: ``ones·x`` written into the plan, the same
    bits as the plain kernel's (no rows too: zeros)."""
    _same_as_plain("reduce_sum", [_normal(*shape, dtype=dtype)], (dims, False))


def test_reduce_sum_to_a_scalar_keeps_the_plain_kernel() -> None:
    x = _normal(3, 4)
    want = implementation("reduce_sum", CPU)(x, (0, 1), False)
    assert specialisation("reduce_sum", CPU, _site([x], ((0, 1), False), want)) is None


@pytest.mark.parametrize(
    ("shape", "k"), [((8, 10), 1), ((3, 4, 5), 2), ((6,), 1), ((2, 3, 64), 1), ((4, 7), 1)]
)
def test_softmax_into_the_buffer(shape: tuple[int, ...], k: int) -> None:
    x = _normal(*shape) * 30  # large logits: the max shift matters
    _same_as_plain("softmax", [x], (k,))


@pytest.mark.parametrize(("shape", "k"), [((8, 10), 1), ((3, 4, 5), 2), ((2, 3, 64), 1)])
def test_softmax_grad_into_the_buffer(shape: tuple[int, ...], k: int) -> None:
    y = implementation("softmax", CPU)(_normal(*shape), k)
    _into_same_as_plain("softmax_grad", [_normal(*shape), y], (k,))


def _awkward_rows(rows: int, width: int, dtype: Any) -> Array:
    """Logits with the rows softmax's maximum must get right: a causal mask's ``-inf``
    (the first rows all negative but one), a fully masked row, equal rows, huge values,
    ``+inf``, ``NaN``, signed zeros; the rest normal."""
    x = (_normal(rows, width) * 30).astype(dtype)
    x[:width] += np.triu(np.full((width, width), -np.inf, dtype), 1)[:rows] - 5
    x[-1] = -np.inf
    x[-2] = 3.0
    x[-3] = np.finfo(dtype).max
    x[-4, 0] = np.finfo(dtype).min
    x[-5, 1] = np.inf
    x[-6, 2] = np.nan
    x[-7] = -0.0
    x[-7, 1] = 0.0
    x[-8] = -(2.0 ** np.arange(width, dtype=dtype))  # all negative, largest the first
    return x


@pytest.mark.parametrize(
    ("rows", "width"),
    [(2048, 64), (300, 64), (32, 10), (128, 16), (40, 17), (16, 100), (200, 3)],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_with_masked_equal_huge_and_nan_rows(rows: int, width: int, dtype: Any) -> None:
    """Every way the specialised kernel takes the row maximum (a transposed copy for short
    rows, bit patterns for many rows, numpy's reduce) gives the plain kernel's numbers."""
    x = _awkward_rows(rows, width, dtype)
    with np.errstate(all="ignore"):
        _same_as_plain("softmax", [x], (1,))
        _same_as_plain("softmax", [x.reshape(2, rows // 2, width)], (1,))
        y = implementation("softmax", CPU)(x, 1)
    some_finite, some_nan = np.any(np.isfinite(x), axis=1), np.any(np.isnan(x), axis=1)
    finite = some_finite & ~some_nan & ~np.any(np.isposinf(x), axis=1)
    np.testing.assert_allclose(y[finite].sum(axis=1), 1.0, rtol=1e-5)
    assert np.isnan(y[~finite]).all()
    assert (y[-2] == y[-2, 0]).all()  # equal logits, equal probabilities
    assert y[-8, 0] == y[-8].max() > 0.7  # all negative: the largest is found, no overflow
    assert (np.diff(y[-8]) <= 0).all()


def test_a_rows_softmax_and_its_gradient_do_not_depend_on_the_rows_beside_it() -> None:
    x, g = _normal(300, 64) * 10, _normal(300, 64)
    y = implementation("softmax", CPU)(x, 1)
    dx = implementation("softmax_grad", CPU)(g, y, 1)
    for rows in (slice(0, 1), slice(3, 7), slice(5, 300)):
        np.testing.assert_array_equal(implementation("softmax", CPU)(x[rows], 1), y[rows])
        np.testing.assert_array_equal(
            implementation("softmax_grad", CPU)(g[rows], y[rows], 1), dx[rows]
        )


def test_softmax_grad_of_transposed_and_broadcast_cotangents() -> None:
    y = implementation("softmax", CPU)(_normal(6, 5), 1)
    g = _normal(5, 6).T  # not contiguous: the sums are taken over a contiguous copy
    _into_same_as_plain("softmax_grad", [g, y], (1,))
    want = implementation("softmax_grad", CPU)(np.ascontiguousarray(g), y, 1)
    np.testing.assert_array_equal(implementation("softmax_grad", CPU)(g, y, 1), want)
    row = _normal(5)
    np.testing.assert_array_equal(
        implementation("softmax_grad", CPU)(row, y, 1),
        implementation("softmax_grad", CPU)(np.tile(row, (6, 1)), y, 1),
    )


def _nll_grad_args(t: Array) -> list[Array | float]:
    y = implementation("softmax", CPU)(_normal(*t.shape, dtype=t.dtype), 1)
    return [np.asarray(1.5, t.dtype), t, y]


def _softmax2(x: Array) -> Array:
    return np.asarray(implementation("softmax", CPU)(_normal(*x.shape), 2))


def _nll_grad_by_formula(args: list[Array | float], k: int) -> None:
    """softmax_nll_grad's kernel, fresh and into a buffer, gives the bits of its general
    formula ``g / S * (y * T - t)`` (its short way for rows summing to 1 too)."""
    g, t, y = args
    group = group_sums(t, k)
    want = np.multiply(y, group)
    want -= t
    want *= (g / np.add.reduce(group, axis=None)).astype(want.dtype)
    got = implementation("softmax_nll_grad", CPU)(g, t, y, k)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    _into_same_as_plain("softmax_nll_grad", [g, t, y], (k,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_nll_grad_with_one_hot_and_soft_targets(dtype: Any) -> None:
    one_hot = np.eye(10, dtype=dtype)[rng.integers(0, 10, 32)]
    _nll_grad_by_formula(_nll_grad_args(one_hot), 1)
    soft = rng.random((32, 10)).astype(dtype)
    _nll_grad_by_formula(_nll_grad_args(soft), 1)
    args = _nll_grad_args(one_hot)
    _nll_grad_by_formula([0.25, *args[1:]], 1)  # g a number


def test_softmax_nll_grad_rows_summing_to_one_take_the_short_way_to_the_same_bits() -> None:
    # rows whose targets sum to exactly 1 skip y * T and the total's sum: the same numbers
    t = np.zeros((8, 4), np.float32)
    t[:, 0], t[:, 1] = 0.25, 0.75
    args = _nll_grad_args(t)
    _nll_grad_by_formula(args, 1)
    y = np.asarray(args[2]).copy()
    y[0, 0], y[1, 1], y[2, 2] = np.inf, np.nan, -0.0
    _nll_grad_by_formula([args[0], t, y], 1)
    t[5, 1] = 0.5  # one row sums to 0.75: the general way
    _nll_grad_by_formula([args[0], t, y], 1)
    transposed = np.ascontiguousarray(t.T).T
    _nll_grad_by_formula([args[0], transposed, y], 1)  # not contiguous: summed over a copy
    t4 = np.zeros((2, 3, 4), np.float32)
    t4[0, 0, 0] = t4[1, 2, 3] = 1.0  # groups of two dims, each summing to 1
    _nll_grad_by_formula([np.asarray(1.5, np.float32), t4, _softmax2(t4)], 2)


def test_softmax_nll_grad_with_all_zero_targets_is_nan_not_an_exception() -> None:
    with np.errstate(all="ignore"):
        _nll_grad_by_formula(_nll_grad_args(np.zeros((4, 3), np.float32)), 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_grad_keeps_g_or_gives_plus_zero_even_for_inf_and_nan(dtype: Any) -> None:
    g = np.array([[np.inf, -np.inf, np.nan, 1.0, -0.0, 2.0]], dtype)
    x = np.array([[-1.0, 0.0, -2.0, 1.0, 3.0, -1.0]], dtype)
    _same_as_plain("relu_grad", [g, x], ())
    got = implementation("relu_grad", CPU)(g, x)
    assert got.tolist() == [[0.0, 0.0, 0.0, 1.0, -0.0, 0.0]]
    assert np.signbit(got[0]).tolist() == [False, False, False, False, True, False]
    _same_as_plain("relu_grad", [_normal(5, 4, dtype=dtype), _normal(5, 4, dtype=dtype)], ())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_lone_relu_in_a_plan(dtype: Any) -> None:
    x = _normal(6, 5, dtype=dtype)
    x[0, :3] = [np.nan, -0.0, np.inf]
    _plan_same_as_plain("relu", [x])


def test_relu_grad_of_a_broadcast_gradient() -> None:
    _same_as_plain("relu_grad", [_normal(4), _normal(3, 4)], ())


def _specialised_calls() -> list[str]:
    program = last_program()
    assert program is not None
    calls = re.findall(r"v(\d+) = S\d+\(", program.source)
    inline = re.findall(r"\bI(\d+)_", program.source)  # a body written in place of the call
    return sorted(set(calls) | set(inline))


def test_plans_use_specialised_kernels_and_the_switch_turns_them_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(hooks, "node_checks", [])  # compiled plans, also in debug mode
    x, w = t32(rng.normal(size=(4, 3))), t32(rng.normal(size=(3, 2)))
    expr = ops.softmax(ops.dot(x, w))
    want = tn.evaluate(expr).numpy()
    assert len(_specialised_calls()) == 2  # dot and softmax
    invalidate_caches()
    with options.using(specialise=False):
        plain = tn.evaluate(expr).numpy()
        assert _specialised_calls() == []
    np.testing.assert_array_equal(plain, want)


def test_a_replaced_plain_kernel_is_not_specialised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hooks, "node_checks", [])
    x = _normal(4, 3)
    site = _site([x], (1,), x)
    assert specialisation("softmax", CPU, site) is not None
    monkeypatch.setitem(
        declare._IMPLS["softmax"], "CPU", [declare.Kernel(0, lambda a, k: np.zeros_like(a))]
    )
    assert specialisation("softmax", CPU, site) is None
    got = tn.evaluate(ops.softmax(t32(x))).numpy()
    np.testing.assert_array_equal(got, np.zeros((4, 3), np.float32))


def test_relu_grad_given_other_buffers_views_them_afresh() -> None:
    # the kernel keeps the integer views of the last g and out it was given
    g1, g2, x = _normal(5, 4), _normal(5, 4), _normal(5, 4)
    plain = implementation("relu_grad", CPU)
    site = _site([g1, x], (), g1)
    special = specialisation("relu_grad", CPU, site)
    assert special is not None
    out1, out2 = np.empty_like(g1), np.empty_like(g1)
    for g, out in [(g1, out1), (g2, out1), (g2, out2), (g1, out1)]:
        assert _run(special, g, x, out=out) is out
        np.testing.assert_array_equal(out, plain(g, x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nll_loss_unmasked_and_with_a_zero_probability(dtype: Any) -> None:
    args = _nll_grad_args(np.eye(10, dtype=dtype)[rng.integers(0, 10, 32)])
    t, y = np.asarray(args[1]), np.asarray(args[2]).copy()
    soft = rng.random((32, 10)).astype(dtype)
    y0 = y.copy()
    y0[0, :] = 0.0  # ln 0 where the target is 0 (and where it is not): the masked form
    for truth, pred in ((t, y), (soft, y), (t, y0)):
        with np.errstate(all="ignore"):
            _into_same_as_plain("nll_loss", [truth, pred], ())
            got = implementation("nll_loss", CPU)(truth, pred)
            masked = -t_log_p(truth, pred).sum() / truth.sum()
        np.testing.assert_allclose(got, masked, rtol=1e-6)


def _evaluated(roots: list[Any]) -> list[Array]:
    handles = [r.eval_register() for r in roots]
    tn.EvalPlan.eval()
    return [h.data().numpy() for h in handles]


def test_small_kernels_are_written_into_the_plan_and_give_the_plain_bits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(hooks, "node_checks", [])  # compiled plans, also in debug mode
    x, w = t32(rng.normal(size=(6, 4))), t32(rng.normal(size=(4, 5)))
    h = ops.relu(ops.dot(x, w))
    parts = [
        ops.softmax(h),
        ops.sigmoid(ops.transpose(h)),
        ops.reduce_sum(h, dims=(0,)),  # column sums: BLAS's ones·h
        ops.reduce_sum(h, dims=(1,)) * 2.0,  # row sums: np.add.reduce
        ops.narrow(h, 1, 1, 3),
        ops.permute(ops.reshape(h, (2, 3, 5)), (1, 0, 2)),
    ]
    losses = [ops.reduce_sum(p * p) for p in parts]
    loss = losses[0] + losses[1] + losses[2] + losses[3] + losses[4] + losses[5]
    roots = [*parts, *tn.grad(loss, [x, w])]  # relu_grad too
    got = _evaluated(roots)
    program = last_program()
    assert program is not None
    source = program.source
    for name in ("maximum", "add_reduce", "matmul", "subtract", "reciprocal", "index", "order"):
        assert f"_{name}" in source, name  # inline bodies and ufunc passes, not calls
    assert ".T" in source
    invalidate_caches()
    with options.using(specialise=False):
        want = _evaluated(roots)
    for a, b in zip(got, want, strict=True):
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
        np.testing.assert_array_equal(
            np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8)
        )


def test_a_failing_inline_kernel_reruns_node_by_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hooks, "node_checks", [])
    plain = implementation("relu", CPU)

    def failing(site: Site) -> declare.Specialised:
        return inline_kernel("{out}[...] = {0}.no_such_attribute", writes=True)

    monkeypatch.setitem(
        declare._IMPLS["relu"], "CPU", [declare.Kernel(0, plain, True, None, failing)]
    )
    x, w = _normal(3, 4), _normal(4, 2)
    fallbacks = stats.fallbacks
    got = tn.evaluate(ops.dot(ops.relu(t32(x)), t32(w))).numpy()
    program = last_program()
    assert program is not None
    assert "no_such_attribute" in program.source
    assert stats.fallbacks == fallbacks + 1
    np.testing.assert_array_equal(got, np.maximum(x, 0) @ w)


def test_an_inline_kernel_failing_where_the_plain_one_fails_names_the_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(hooks, "node_checks", [])

    def plain(x: Array) -> Array:
        return 1 / 0

    def make(site: Site) -> declare.Specialised:
        return inline_kernel("{out}[...] = 1 / 0", writes=True)

    monkeypatch.setitem(declare._IMPLS["relu"], "CPU", [declare.Kernel(0, plain, specialiser=make)])
    with pytest.raises(tn.EvaluationError, match=r"evaluating relu failed: ZeroDivisionError"):
        tn.evaluate(ops.dot(ops.relu(t32(_normal(3, 4))), t32(_normal(4, 2))))


def test_an_inline_kernel_failing_after_writes_began_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(hooks, "node_checks", [])
    plain = implementation("relu", CPU)

    def failing(site: Site) -> declare.Specialised:
        return inline_kernel("{out}[...] = {0}.no_such_attribute", writes=True)

    monkeypatch.setitem(
        declare._IMPLS["relu"], "CPU", [declare.Kernel(0, plain, True, None, failing)]
    )
    out = t32(np.zeros((3, 4), np.float32))
    with pytest.raises(tn.EvaluationError, match=r"failed while writing its targets in place"):
        tn.evaluate(ops.relu(t32(_normal(3, 4))), out=out)


def test_a_large_relu_grad_keeps_no_pooled_buffer_between_calls() -> None:
    """A pooled buffer is free only while the pool holds its one reference: a kernel that
    kept the last buffers it was given would make every call take a new one."""
    from typed_nn.evaluate.pool import buffer_pool

    w = t32(rng.normal(size=(128, 4)))

    @tn.compile
    def f(g: tn.Matrix[tn.Float32, tn.CPU], x: tn.Matrix[tn.Float32, tn.CPU]) -> Any:
        return ops.relu_grad(g, x) @ w  # 256 x 128 float32: 128 KiB, from the pool

    g, x = t32(rng.normal(size=(256, 128))), t32(rng.normal(size=(256, 128)))
    want = np.where(x.numpy() > 0, g.numpy(), 0) @ w.numpy()
    np.testing.assert_allclose(f(g, x).numpy(), want, rtol=1e-5, atol=1e-5)
    held = buffer_pool().held()
    for _ in range(3):
        np.testing.assert_allclose(f(g, x).numpy(), want, rtol=1e-5, atol=1e-5)
    assert buffer_pool().held() == held

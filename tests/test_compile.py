"""tn.compile: trace once per signature, replay the Step; assigns, closures, numbers, static
arguments, retracing, and the errors of functions it cannot compile."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from helpers import t32, t64, train_with_assigns

import typed_nn as tn
from typed_nn import ops

RNG = np.random.default_rng(0)


def softmax_np(z: Any) -> Any:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_a_compiled_training_step_equals_the_numpy_step_with_a_changing_learning_rate() -> None:
    w = t32(RNG.normal(size=(3, 4)))
    b = tn.zeros((4,), tn.Float32, tn.CPU)

    @tn.compile
    def step(x: tn.Matrix[tn.Float32, tn.CPU], y: tn.Matrix[tn.Float32, tn.CPU], lr: float) -> Any:
        loss = ops.nll_loss(y, ops.softmax(x @ w + b))
        g_w, g_b = tn.grad(loss, (w, b))
        w.assign(w - lr * g_w)
        b.assign(b - lr * g_b)
        return loss

    xs = RNG.normal(size=(5, 3)).astype(np.float32)
    ys = np.eye(4, dtype=np.float32)[RNG.integers(0, 4, 5)]
    x, y = t32(xs), t32(ys)
    w_np, b_np = w.numpy().astype(np.float64), b.numpy().astype(np.float64)
    for i in range(4):
        lr = 0.1 * (i + 1)
        loss = step(x, y, lr)
        p = softmax_np(xs @ w_np + b_np)
        g = (p - ys) / ys.sum()
        np.testing.assert_allclose(loss.numpy(), -(ys * np.log(p)).sum() / ys.sum(), rtol=1e-5)
        w_np, b_np = w_np - lr * xs.T @ g, b_np - lr * g.sum(axis=0)
        np.testing.assert_allclose(w.numpy(), w_np, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.numpy(), b_np, rtol=1e-5, atol=1e-6)
    assert step.traces == 1


def test_new_arrays_of_the_same_signature_replay_and_new_shapes_retrace() -> None:
    f = tn.compile(lambda x, y: ops.exp(x) * y + 1.0)
    for _ in range(3):
        a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(3,))
        np.testing.assert_allclose(f(t64(a), t64(b)).numpy(), np.exp(a) * b + 1.0)
    assert f.traces == 1
    a, b = RNG.normal(size=(4, 3)), RNG.normal(size=(3,))
    np.testing.assert_allclose(f(t64(a), t64(b)).numpy(), np.exp(a) * b + 1.0)
    f(t32(a), t32(b))  # another element type: another signature
    assert f.traces == 3


def test_results_stay_valid_after_the_next_call() -> None:
    f = tn.compile(lambda x: x * 2.0 + 1.0)
    first = f(t64([1.0, 2.0]))
    second = f(t64([10.0, 20.0]))
    np.testing.assert_array_equal(first.numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(second.numpy(), [21.0, 41.0])


def test_closed_over_tensors_are_read_live_at_every_call() -> None:
    w = t64([1.0, 2.0])
    f = tn.compile(lambda x: x * w)
    np.testing.assert_array_equal(f(t64([1.0, 1.0])).numpy(), [1.0, 2.0])
    w.assign(w * 10.0)
    np.testing.assert_array_equal(f(t64([1.0, 1.0])).numpy(), [10.0, 20.0])
    assert f.traces == 1


SCALE = t64([1.0, 2.0])


def _scaled(x: Any) -> Any:
    return x * SCALE


def test_a_global_rebound_to_another_tensor_is_traced_again() -> None:
    global SCALE
    f = tn.compile(_scaled)
    np.testing.assert_array_equal(f(t64([1.0, 1.0])).numpy(), [1.0, 2.0])
    SCALE = t64([5.0, 6.0])
    np.testing.assert_array_equal(f(t64([1.0, 1.0])).numpy(), [5.0, 6.0])
    assert f.traces == 2


def test_a_closure_cell_rebound_to_another_tensor_is_traced_again() -> None:
    w = t64([1.0, 2.0])
    f = tn.compile(lambda x: x + w)
    f(t64([0.0, 0.0]))
    w = t64([7.0, 8.0, 9.0])  # another shape too: never stale numbers
    np.testing.assert_array_equal(f(t64([0.0, 0.0, 0.0])).numpy(), [7.0, 8.0, 9.0])


def test_assigns_read_like_eager_code_and_write_after_every_read() -> None:
    m, w = t64([0.0, 0.0]), t64([1.0, 1.0])

    @tn.compile
    def momentum(g: Any) -> Any:
        m.assign(m * 0.5 + g)  # later reads of m see the new value, as in eager code
        w.assign(w - m)
        return w * 1.0  # the new w (reads after the assign)

    out = momentum(t64([1.0, 2.0]))
    np.testing.assert_array_equal(m.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(w.numpy(), [0.0, -1.0])
    np.testing.assert_array_equal(out.numpy(), [0.0, -1.0])
    momentum(t64([1.0, 2.0]))
    np.testing.assert_array_equal(m.numpy(), [1.5, 3.0])
    np.testing.assert_array_equal(w.numpy(), [-1.5, -4.0])


def test_an_argument_can_be_assigned() -> None:
    @tn.compile
    def scale(t: Any, k: float) -> None:
        t.assign(t * k)

    a, b = t64([1.0, 2.0]), t64([3.0, 4.0])
    scale(a, 2.0)
    scale(b, 3.0)
    np.testing.assert_array_equal(a.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(b.numpy(), [9.0, 12.0])


def test_the_structure_of_the_result_is_kept() -> None:
    w = t64([1.0, 2.0])

    @tn.compile
    def parts(x: Any) -> Any:
        return {"sum": ops.reduce_sum(x), "pair": (x * 2.0, [x + 1.0]), "x": x, "w": w}

    x = t64([3.0, 4.0])
    out = parts(x)
    assert set(out) == {"sum", "pair", "x", "w"}
    np.testing.assert_array_equal(out["sum"].numpy(), 7.0)
    np.testing.assert_array_equal(out["pair"][0].numpy(), [6.0, 8.0])
    np.testing.assert_array_equal(out["pair"][1][0].numpy(), [4.0, 5.0])
    assert out["x"] is x  # an argument returned as it is
    assert out["w"] is w
    assert tn.compile(lambda x: None)(x) is None


def test_ints_select_the_program_and_static_names_other_values() -> None:
    f = tn.compile(lambda x, k: ops.softmax(x, k=k))
    x = t64(RNG.normal(size=(2, 3, 4)))
    f(x, 1)
    f(x, 2)
    assert f.traces == 2
    g = tn.compile(lambda x, s: x * s, static=("s",))
    np.testing.assert_array_equal(g(t64([1.0]), 2.0).numpy(), [2.0])
    np.testing.assert_array_equal(g(t64([1.0]), 3.0).numpy(), [3.0])
    assert g.traces == 2


def test_float_arguments_equal_at_trace_time_stay_separate_inputs() -> None:
    f = tn.compile(lambda x, a, b: x * a + x * b)  # a == b must not merge the two products
    x = t64([1.0, 2.0])
    np.testing.assert_array_equal(f(x, 1.0, 1.0).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(f(x, 1.0, 3.0).numpy(), [4.0, 8.0])
    np.testing.assert_array_equal(f(x, 0.0, 0.0).numpy(), [0.0, 0.0])


def test_compiled_functions_called_inside_a_trace_become_part_of_it() -> None:
    inner = tn.compile(lambda x: x * 2.0)
    outer = tn.compile(lambda x: inner(x) + 1.0)
    np.testing.assert_array_equal(outer(t64([1.0])).numpy(), [3.0])
    assert inner.traces == 0


def test_retracing_past_the_limit_warns_once_and_names_the_argument() -> None:
    f = tn.compile(lambda x, n: x * float(n), max_traces=2)
    x = t64([1.0])
    f(x, 1)
    f(x, 2)
    with pytest.warns(tn.RetraceWarning, match=r"(?s)traced 3 times.*changing : n"):
        f(x, 3)
    f(x, 4)  # warned once only (warnings are errors in this suite)
    np.testing.assert_array_equal(f(x, 5).numpy(), [5.0])


def test_a_tuple_of_tensors_retracing_says_to_pass_them_apart() -> None:
    """A tuple is compared by value: new tensors in it every call are a new trace each; the
    warning said 'give the argument a fixed shape' (its shapes were fixed)."""
    f = tn.compile(lambda xs: xs[0] + xs[1], max_traces=2)
    f((t64([1.0]), t64([2.0])))
    f((t64([1.0]), t64([2.0])))
    with pytest.warns(
        tn.RetraceWarning,
        match=r"(?s)changing : xs.*hint: pass the tensors of xs as separate arguments or \*args",
    ):
        f((t64([1.0]), t64([2.0])))
    g = tn.compile(lambda *xs: xs[0] + xs[1])
    for _ in range(3):
        g(t64([1.0]), t64([2.0]))
    assert g.traces == 1


def test_keyword_arguments_and_defaults_bind_like_the_function() -> None:
    f = tn.compile(lambda x, scale=2.0: x * scale)
    x = t64([1.0])
    np.testing.assert_array_equal(f(x).numpy(), [2.0])
    np.testing.assert_array_equal(f(x, scale=4.0).numpy(), [4.0])
    assert f.traces == 1


# --- what cannot be compiled: typed errors ---


def test_evaluating_inside_a_traced_function_is_an_error() -> None:
    f = tn.compile(lambda x: tn.evaluate(x * 2.0))
    with pytest.raises(
        tn.CompileError,
        match=r"(?s)cannot evaluate inside a function tn\.compile traces.*t\.assign",
    ):
        f(t64([1.0]))
    g = tn.compile(lambda x: float((x * 2.0).numpy()[0]))
    with pytest.raises(tn.CompileError, match="frozen into the compiled step"):
        g(t64([1.0]))


def test_returning_something_else_than_data_is_an_operand_error() -> None:
    f = tn.compile(lambda x: (x, "loss"))
    with pytest.raises(tn.OperandError, match=r"(?s)returns str, not typed_nn data.*'loss'"):
        f(t64([1.0]))


def test_returning_a_tensor_it_assigns_is_an_error() -> None:
    w = t64([1.0])

    def update(x: Any) -> Any:
        w.assign(w + x)
        return w

    with pytest.raises(tn.CompileError, match="returns a tensor it also assigns"):
        tn.compile(update)(t64([1.0]))


def test_static_names_must_be_parameters() -> None:
    with pytest.raises(tn.CompileError, match=r"(?s)static names no parameter.*static     : lr"):
        tn.compile(lambda x: x, static=("lr",))


def test_lazy_and_unhashable_arguments_are_errors() -> None:
    f = tn.compile(lambda x, opts: x)
    x = t64([1.0])
    with pytest.raises(
        tn.OperandError, match=r"(?s)argument 'x' is a lazy expression.*tn\.evaluate"
    ):
        f(x * 2.0, 1)
    with pytest.raises(
        tn.CompileError, match=r"(?s)argument 'opts' is neither a tensor nor hashable.*list"
    ):
        f(x, [1, 2])


# --- a step that fails leaves every target unchanged ---


class _FailingPool:
    """The buffer pool, failing its ``n``-th allocation once."""

    def __init__(self, pool: Any, n: int) -> None:
        self.pool, self.n, self.fired = pool, n, False

    def empty(self, shape: Any, dtype: Any) -> Any:
        self.n -= 1
        if self.n == 0:
            self.fired = True
            raise MemoryError("injected")
        return self.pool.empty(shape, dtype)


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam"])
@pytest.mark.parametrize("n", [1, 3, 6])
def test_an_allocation_failing_mid_step_changes_no_target(
    kind: str, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    from typed_nn.evaluate import executor, hooks
    from typed_nn.evaluate.pool import buffer_pool as real

    monkeypatch.setattr(hooks, "node_checks", [])  # the compiled program, also in debug mode
    clean = train_with_assigns(kind, 3)

    @contextlib.contextmanager
    def failing() -> Any:
        failing_pool = _FailingPool(real(), n)
        monkeypatch.setattr(executor, "buffer_pool", lambda: failing_pool)
        with (
            tn.evaluate.options.using(pool=True)
            if hasattr(tn.evaluate, "options")
            else contextlib.nullcontext()
        ):
            yield
        monkeypatch.setattr(executor, "buffer_pool", real)

    got = train_with_assigns(kind, 3, failing)
    for a, b in zip(got, clean, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam"])
def test_a_kernel_failing_mid_step_changes_no_target(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    from typed_nn.evaluate import hooks
    from typed_nn.ops.declare import _IMPLS, implement, implementation

    monkeypatch.setattr(hooks, "node_checks", [])  # the compiled program, also in debug mode
    clean = train_with_assigns(kind, 3)
    plain = implementation("tanh_grad", tn.CPU)  # the first layer's gradient: late in the step
    calls = [0]
    armed = [False]

    def flaky(g: Any, y: Any) -> Any:
        if armed[0]:
            armed[0] = False
            raise FloatingPointError("injected")
        calls[0] += 1
        return plain(g, y)

    implement("tanh_grad", tn.CPU, priority=50)(flaky)

    @contextlib.contextmanager
    def failing() -> Any:
        armed[0] = True
        yield

    try:
        got = train_with_assigns(kind, 3, failing)
    finally:
        _IMPLS["tanh_grad"]["CPU"] = [e for e in _IMPLS["tanh_grad"]["CPU"] if e.fn is not flaky]
    assert not armed[0], "the injected failure did not happen"
    for a, b in zip(got, clean, strict=True):
        np.testing.assert_array_equal(a, b)


# --- what a trace would freeze is an error; what it must not freeze is not frozen ---


@pytest.mark.parametrize(
    ("fn", "what"),
    [
        (lambda x, lr: x * (-lr), "__neg__"),
        (lambda x, lr: lr * 2.0 * x, "__mul__"),
        (lambda x, lr: x * (2.0 * lr), "__rmul__"),
        (lambda x, lr: x / (lr + 1.0), "__add__"),
        (lambda x, lr: x * float(lr), "__float__"),
        (lambda x, lr: x if lr > 0.5 else -x, "__gt__"),
        (lambda x, lr: x * (1.0 if lr else 0.0), "__bool__"),
    ],
)
def test_python_arithmetic_on_a_float_argument_is_an_error(fn: Any, what: str) -> None:
    with pytest.raises(
        tn.CompileError, match=rf"(?s)float argument in Python.*\({what}\).*-\(lr \* g\)"
    ):
        tn.compile(fn)(t64([1.0]), 3.0)


def test_a_float_argument_with_integer_data_is_an_element_error() -> None:
    """Not the "Python arithmetic" error (the user wrote none): the number may be any float
    at the next call; an int argument is a static value."""
    x = tn.tensor(np.arange(4), tn.Int64, tn.CPU, tn.Dim1)
    with pytest.raises(
        tn.ElemTypeError,
        match=r"(?s)cannot build mul: a float argument of a compiled function is not an Int64 "
        r"value.*hint: .*pass an int",
    ):
        tn.compile(lambda x, a: x * a)(x, 2.0)
    np.testing.assert_array_equal(tn.compile(lambda x, a: x * a)(x, 3).numpy(), [0, 3, 6, 9])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, lr: x * math.sqrt(lr),
        lambda x, lr: x * math.exp(lr),
        lambda x, lr: x * math.pow(lr, 2),
        lambda x, lr: x * np.sqrt(lr),
        lambda x, lr: x * np.float32(lr),
    ],
)
def test_a_float_argument_read_by_math_or_numpy_is_an_error(fn: Any) -> None:
    """``math.sqrt(lr)`` reads a float's value past its operators: it was frozen at the
    trace's value (every later call scaled by sqrt of the first lr)."""
    with pytest.raises(tn.CompileError, match=r"float argument"):
        tn.compile(fn)(t64([1.0, 1.0]), 4.0)


def test_a_float_argument_as_data_computes_at_every_call() -> None:
    f = tn.compile(lambda x, lr: x * ops.sqrt(lr * tn.ones((), tn.Float64, tn.CPU)))
    np.testing.assert_array_equal(f(t64([1.0, 1.0]), 4.0).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(f(t64([1.0, 1.0]), 100.0).numpy(), [10.0, 10.0])
    assert f.traces == 1


def test_float_arguments_combined_with_tensors_stay_run_time_numbers() -> None:
    f = tn.compile(lambda x, lr: -(lr * x) + x * lr * 2.0 + lr / (x + 1.0))
    x = t64([1.0, 3.0])
    for lr in (1.0, 3.0, 0.5):
        np.testing.assert_allclose(f(x, lr).numpy(), lr * x.numpy() + lr / (x.numpy() + 1.0))
    assert f.traces == 1


def test_numpy_floats_are_run_time_numbers_too() -> None:
    f = tn.compile(lambda x, lr: x * lr)
    x = t32([1.0, 2.0])
    np.testing.assert_array_equal(f(x, np.float64(2.0)).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(f(x, np.float32(3.0)).numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(f(x, 0.5).numpy(), [0.5, 1.0])
    assert f.traces == 1


def test_reading_a_tensors_values_inside_a_trace_is_an_error() -> None:
    f = tn.compile(lambda x: x * float(x.numpy().sum()))
    with pytest.raises(tn.CompileError, match="cannot read a tensor's values inside a function"):
        f(t64([1.0, 1.0]))
    g = tn.compile(lambda x: x * x[0].value())
    with pytest.raises(tn.CompileError, match="frozen into the compiled step"):
        g(t64([1.0, 1.0]))


def test_an_argument_that_is_the_assigned_tensor_gets_a_program_of_its_own() -> None:
    @tn.compile
    def sym(t: Any, u: Any) -> None:
        t.assign(0.5 * (ops.transpose(u) + t))

    rng = np.random.default_rng(3)
    b = rng.normal(size=(300, 300))
    sym(t64(np.zeros((300, 300))), t64(b))  # traced with two tensors apart
    a = t64(b.copy())
    sym(a, a)  # the same tensor for both: its transpose is read while it is written
    np.testing.assert_allclose(a.numpy(), 0.5 * (b.T + b))
    assert sym.traces == 2


def test_a_closed_over_target_passed_as_an_argument_is_traced_again() -> None:
    rng = np.random.default_rng(4)
    w = t64(rng.normal(size=(300, 300)))

    @tn.compile
    def update(u: Any) -> None:
        w.assign(0.5 * (ops.transpose(u) + w))

    update(t64(np.zeros((300, 300))))
    before = w.numpy().copy()
    update(w)  # u is w itself now
    np.testing.assert_allclose(w.numpy(), 0.5 * (before.T + before))
    assert update.traces == 2


def test_concurrent_calls_of_one_compiled_function_give_each_its_own_numbers() -> None:
    import threading

    f = tn.compile(lambda x, k: ops.exp(x * k) + k * x)
    x = t64(RNG.normal(size=(64, 64)) * 0.1)
    bad: list[float] = []

    def worker(seed: int) -> None:
        for i in range(100):
            k = float(seed * 1000 + i) / 1000.0
            got = f(x, k).numpy()
            if not np.allclose(got, np.exp(x.numpy() * k) + k * x.numpy()):
                bad.append(k)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_a_trace_in_one_thread_changes_no_node_built_in_another() -> None:
    import threading

    w = t64([0.0, 1.0])
    started, release = threading.Event(), threading.Event()
    built: list[Any] = []

    def slow(x: Any) -> None:
        w.assign(w - x)  # while this trace runs, w reads as w - x in this thread only
        started.set()
        release.wait(5)

    thread = threading.Thread(target=lambda: tn.compile(slow)(t64([1.0, 1.0])))
    thread.start()
    started.wait(5)
    built.append(w * 10.0)
    release.set()
    thread.join()
    np.testing.assert_array_equal(built[0].numpy(), [-10.0, 0.0])  # w was updated once


def test_the_retrace_warning_names_the_callers_line_and_a_trace_counts_as_an_analysis() -> None:
    from typed_nn.evaluate import stats

    f = tn.compile(lambda x, n: x * float(n), max_traces=1)
    x = t64([1.0])
    before = stats.analyses
    f(x, 1)
    assert stats.analyses == before + 1
    with pytest.warns(tn.RetraceWarning) as record:
        f(x, 2)
    assert record[0].filename == __file__


def test_rows_of_an_argument_are_read_from_each_calls_array() -> None:
    f = tn.compile(lambda x: x[0] * 2.0 + x[-1][1])
    for _ in range(3):
        a = RNG.normal(size=(3, 2))
        np.testing.assert_allclose(f(t64(a)).numpy(), a[0] * 2.0 + a[-1][1])
    assert f.traces == 1


def test_gradients_of_many_losses_share_one_seed_and_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typed_nn.evaluate import hooks, stats

    monkeypatch.setattr(hooks, "node_checks", [])  # the optimised evaluator, also in debug mode
    w = t64(RNG.normal(size=(4, 3)))
    xs = [t64(RNG.normal(size=(4,))) for _ in range(8)]
    want = sum(np.outer(x.numpy(), 1 - np.tanh(x.numpy() @ w.numpy()) ** 2) for x in xs)

    def kernel_calls(gradient: Any) -> int:
        """Kernel calls of the compiled sum of the per-sample gradients (leaves by object)."""

        def total() -> Any:
            grads = [gradient(ops.reduce_sum(ops.tanh(x @ w))) for x in xs]
            out = grads[0]
            for g in grads[1:]:
                out = out + g
            return out

        f = tn.compile(total)
        f()
        stats.reset()
        stats.counting = True
        try:
            np.testing.assert_allclose(f().numpy(), want, rtol=1e-10)
        finally:
            stats.counting = False
        return sum(stats.kernel_calls.values())

    shared = kernel_calls(lambda loss: tn.grad(loss, w))
    own = kernel_calls(lambda loss: tn.vjp(loss, w, tn.scalar(1.0, tn.Float64, tn.CPU)))
    assert shared < own  # one seed: the eight backward passes run as one batch


def test_a_replayed_step_invalidates_cached_results_of_what_it_wrote() -> None:
    """A lazy result evaluated between two replays was taken from the cache, stale."""
    w = tn.tensor(np.ones(3), tn.Float64, tn.CPU, tn.Dim1)
    total = ops.reduce_sum(w * 2.0)

    def step(lr: float) -> None:
        w.assign(w - lr)

    compiled = tn.compile(step)
    compiled(0.5)  # traced
    assert float(tn.evaluate(total).numpy()) == 3.0
    compiled(0.5)  # replayed
    assert float(tn.evaluate(total).numpy()) == 0.0


def test_every_kind_of_parameter_binds_as_in_a_plain_call() -> None:
    """Keyword-only parameters, ``*args``, ``**kwargs``, a ``functools.partial`` with a keyword
    and a method: each had been passed back to ``fn`` by position (stray TypeErrors, a tuple
    for ``*args``). Tensors among them are arguments; floats are run-time numbers."""
    import functools

    x = tn.tensor(np.ones(2), tn.Float64, tn.CPU, tn.Dim1)
    y = tn.tensor(np.full(2, 2.0), tn.Float64, tn.CPU, tn.Dim1)

    @tn.compile
    def keyword_only(a: Any, *, scale: float, shift: Any) -> Any:
        return a * scale + shift

    assert keyword_only(x, scale=2.0, shift=y).numpy().tolist() == [4.0, 4.0]
    assert keyword_only(y, scale=3.0, shift=x).numpy().tolist() == [7.0, 7.0]
    assert keyword_only.traces == 1  # another tensor, another float: the same program

    @tn.compile
    def variadic(a: Any, *rest: Any, **named: Any) -> Any:
        total = a
        for r in rest:
            total = total + r
        return total * named.get("k", 1.0)

    assert variadic(x).numpy().tolist() == [1.0, 1.0]
    assert variadic(x, y, y).numpy().tolist() == [5.0, 5.0]
    assert variadic(x, y, k=0.5).numpy().tolist() == [1.5, 1.5]
    assert variadic(x, k=y).numpy().tolist() == [2.0, 2.0]
    partial = tn.compile(functools.partial(lambda a, b, c: a + b * c, c=3.0))
    assert partial(x, y).numpy().tolist() == [7.0, 7.0]

    class Scaler:
        def __init__(self, by: float) -> None:
            self.by = by

        @tn.compile
        def __call__(self, a: Any) -> Any:
            return a * self.by

    assert Scaler(2.0)(x).numpy().tolist() == [2.0, 2.0]
    assert Scaler(5.0)(x).numpy().tolist() == [5.0, 5.0]  # another object: another trace
    loose: Any = keyword_only  # what the checkers refuse, at run time
    with pytest.raises(tn.CompileError, match=r"cannot call compiled .*keyword_only: missing"):
        loose(x, scale=2.0)

"""Evaluation: MetaNN's two phases, result caching, out=, per-thread plans, error reporting."""

from __future__ import annotations

import copy
import sys
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import t32, untyped

import typed_nn as tn
from typed_nn import CPU, Float32, Float64, ops
from typed_nn.evaluate import executor, hooks
from typed_nn.ops import declare

Calls = Counter[str]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Counts calls of every CPU implementation (by op name) while the test runs."""
    counter: Calls = Counter()

    def counting(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def impl(*args: Any) -> Any:
            counter[name] += 1
            return fn(*args)

        return impl

    for name, per_device in list(declare._IMPLS.items()):
        impls = per_device.get("CPU")
        if impls:
            wrapped = [declare.Kernel(k.priority, counting(name, k.fn)) for k in impls]
            monkeypatch.setitem(per_device, "CPU", wrapped)
    return counter


def replace_impl(monkeypatch: pytest.MonkeyPatch, name: str, fn: Callable[..., Any]) -> None:
    monkeypatch.setitem(declare._IMPLS[name], "CPU", [declare.Kernel(0, fn)])


def test_two_phase_evaluation() -> None:
    a = t32([1.0, 2.0])
    b = t32([3.0, 4.0])
    h1 = (a + b).eval_register()
    h2 = (a * b).eval_register()
    assert not h1.is_evaluated()
    assert "pending" in repr(h1)
    tn.EvalPlan.eval()
    assert h1.is_evaluated()
    assert "evaluated" in repr(h2)
    np.testing.assert_array_equal(h1.data().numpy(), [4.0, 6.0])
    np.testing.assert_array_equal(h2.data().numpy(), [3.0, 8.0])
    assert h1.source == a + b


def test_data_before_eval_raises() -> None:
    h = (t32([1.0]) + 1.0).eval_register()
    with pytest.raises(
        tn.NotEvaluatedError,
        match=r"(?s)Data is not evaluated\..*registered : add\[Float32, CPU, Dim1\]\(1\).*"
        r"hint: call tn\.EvalPlan\.eval\(\)",
    ):
        h.data()
    tn.EvalPlan.eval()
    assert h.data().numpy()[0] == 2.0


def test_registering_non_data_raises() -> None:
    with pytest.raises(tn.OperandError, match=r"cannot register ndarray: it is not typed_nn data"):
        untyped.EvalPlan.current().add(np.zeros(2))


def test_pending_counts_registered_values() -> None:
    plan = tn.EvalPlan.current()
    tn.EvalPlan.eval()
    assert plan.pending() == 0
    (t32([1.0]) + 1.0).eval_register()
    t32([1.0]).eval_register()  # a principal tensor is ready at once
    assert plan.pending() == 1
    tn.EvalPlan.eval()
    assert plan.pending() == 0


def test_results_are_cached_and_copies_share_them(calls: Calls) -> None:
    a = t32(np.arange(6).reshape(2, 3))
    expr = ops.exp(a) + a * 2.0
    first = tn.evaluate(expr)
    assert calls == Counter({"exp": 1, "mul": 1, "add": 1})
    assert tn.evaluate(expr) is first
    assert tn.evaluate(copy.copy(expr)) is first
    assert tn.evaluate(copy.deepcopy(expr)) is first
    assert calls == Counter({"exp": 1, "mul": 1, "add": 1})
    assert tn.evaluate(expr) == first


def test_a_node_registered_twice_is_computed_once(calls: Calls) -> None:
    expr = ops.sin(t32([0.5, 1.0]))
    h1 = expr.eval_register()
    h2 = expr.eval_register()
    tn.EvalPlan.eval()
    assert calls["sin"] == 1
    assert h1.data() is h2.data()


def test_a_shared_subexpression_is_computed_once(calls: Calls) -> None:
    x = t32([0.1, 0.2, 0.3])
    shared = ops.exp(x)
    left = shared * 2.0
    right = shared + shared
    h1, h2 = left.eval_register(), right.eval_register()
    tn.EvalPlan.eval()
    assert calls["exp"] == 1
    np.testing.assert_allclose(h1.data().numpy(), h2.data().numpy())


def test_evaluated_subexpression_is_reused_by_later_graphs(calls: Calls) -> None:
    x = t32([0.1, 0.2])
    shared = ops.exp(x)
    tn.evaluate(shared)
    tn.evaluate(shared * 3.0)
    assert calls["exp"] == 1
    assert calls["mul"] == 1


def test_evaluate_out_writes_into_the_given_memory() -> None:
    x = t32([1.0, 2.0])
    out = tn.zeros((2,), Float32, CPU)
    memory = out.array
    result = tn.evaluate(x * 3.0 + 1.0, out=out)
    assert result is out
    assert out.array is memory
    np.testing.assert_array_equal(memory, [4.0, 7.0])


def test_evaluate_out_of_a_tensor_copies_it() -> None:
    x = t32([1.0, 2.0])
    out = tn.zeros((2,), Float32, CPU)
    tn.evaluate(x, out=out)
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0])
    assert out != x


def test_assign_invalidates_results_computed_from_old_values(calls: Calls) -> None:
    w = t32([1.0, 2.0])
    expr = w * 2.0
    before = tn.evaluate(expr)
    np.testing.assert_array_equal(before.numpy(), [2.0, 4.0])
    w.assign(w + 10.0)
    np.testing.assert_array_equal(w.numpy(), [11.0, 12.0])
    after = tn.evaluate(expr)
    np.testing.assert_array_equal(after.numpy(), [22.0, 24.0])
    assert calls["mul"] == 2


def test_mshadow_style_update_in_place() -> None:
    w = t32([1.0, -2.0, 3.0])
    g = t32([0.5, 0.5, 0.5])
    eta, lam = 0.1, 0.01
    expected = -eta * (g.numpy() + lam * w.numpy())
    w.assign(-eta * (g + lam * w))
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize(
    ("out", "error", "what"),
    [
        (tn.zeros((3,), Float32, CPU), tn.ShapeError, "shape"),
        (tn.zeros((2,), Float64, CPU), tn.ElemTypeError, "element"),
    ],
)
def test_evaluate_out_must_match(
    out: tn.Tensor[Any, Any, Any], error: type[Exception], what: str
) -> None:
    text = rf"(?s)cannot write a value into a tensor \(t.assign\(value\), .*: the {what} differs\."
    with pytest.raises(error, match=text + r".*tensor   : Tensor.*test_evaluate.py:\d+"):
        tn.evaluate(t32([1.0, 2.0]) + 1.0, out=out)
    with pytest.raises(error, match=text + r".*built at : .*test_evaluate.py:\d+"):
        out.assign(t32([1.0, 2.0]) * 2.0)


def test_a_write_that_differs_in_several_ways_names_them_all() -> None:
    w = tn.zeros((3, 4), Float32, CPU)
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s): the shape and element differ\..*hint: give the value the tensor's shape "
        r"\(3, 4\) and element Float32; or write into a tensor made like the value: "
        r"tn\.zeros\(\(7,\), tn\.Float64, tn\.CPU\)\.",
    ):
        w.assign(tn.zeros((7,), Float64, CPU))  # type: ignore[arg-type]


def test_evaluate_out_must_be_a_principal_tensor() -> None:
    x = t32([1.0, 2.0])
    with pytest.raises(tn.OperandError, match=r"evaluate\(\.\.\., out=\) needs a principal tensor"):
        untyped.evaluate(x + 1.0, out=x + 2.0)


def test_plans_are_per_thread() -> None:
    main_handle = (t32([1.0]) + 1.0).eval_register()
    seen: dict[str, Any] = {}

    def worker() -> None:
        plan = tn.EvalPlan.current()
        seen["plan"] = plan
        seen["pending_before"] = plan.pending()
        h = (t32([5.0]) * 2.0).eval_register()
        tn.EvalPlan.eval()  # evaluates this thread's plan only
        seen["value"] = h.data().numpy()[0]
        seen["main_evaluated"] = main_handle.is_evaluated()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen["plan"] is not tn.EvalPlan.current()
    assert seen["pending_before"] == 0
    assert seen["value"] == 10.0
    assert seen["main_evaluated"] is False
    assert not main_handle.is_evaluated()
    tn.EvalPlan.eval()
    assert main_handle.data().numpy()[0] == 2.0


def test_many_threads_evaluate_independently() -> None:
    results: dict[int, float] = {}

    def worker(i: int) -> None:
        x = t32([float(i)])
        for _ in range(50):
            h = (x * 2.0 + 1.0).eval_register()
            tn.EvalPlan.eval()
        results[i] = float(h.data().numpy()[0])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: 2.0 * i + 1.0 for i in range(8)}


def test_error_in_an_implementation_names_the_op_and_the_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: Any) -> Any:
        raise ValueError("boom")

    replace_impl(monkeypatch, "sqrt", broken)
    x = t32([4.0])
    line = sys._getframe().f_lineno + 1
    node = ops.sqrt(x)
    assert isinstance(node, tn.ops.Operation)
    with pytest.raises(
        tn.EvaluationError,
        match=rf"(?s)evaluating sqrt failed: ValueError: boom.*node      : sqrt\[Float32, CPU, Dim1\]\(1\).*"
        rf"operand 1 : Tensor\[Float32, CPU, Dim1\]\(1\).*built at  : test_evaluate\.py:{line}",
    ) as info:
        tn.evaluate(node * 2.0)
    assert isinstance(info.value.__cause__, ValueError)
    assert node.built_at == f"test_evaluate.py:{line}"


def test_a_by_node_program_is_planned_once_and_checks_each_evaluations_own_nodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[Any, float]] = []
    checks = [lambda node, result: seen.append((node, float(result.numpy()[0])))]
    monkeypatch.setattr(hooks, "node_checks", checks)  # debug mode's path: by node
    replace_impl(monkeypatch, "sqrt", lambda x: np.sqrt(x) if (x >= 0).all() else 1 / 0)
    executor.clear_plan_cache()
    first, second = ops.sqrt(t32([4.0])), ops.sqrt(t32([9.0]))
    assert tn.evaluate(first * 2.0).numpy()[0] == 4.0
    assert tn.evaluate(second * 2.0).numpy()[0] == 6.0
    assert len(executor._plans()) == 1  # one structure, one program
    assert [(node is first or node is second, value) for node, value in seen] == [
        (True, 2.0),
        (False, 4.0),
        (True, 3.0),
        (False, 6.0),
    ]
    line = sys._getframe().f_lineno + 1
    third = ops.sqrt(t32([-1.0]))
    with pytest.raises(
        tn.EvaluationError,
        match=rf"(?s)evaluating sqrt failed: ZeroDivisionError.*built at  : test_evaluate\.py:{line}",
    ):
        tn.evaluate(third * 2.0)
    assert len(executor._plans()) == 1


def test_an_implementation_returning_the_wrong_dtype_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replace_impl(monkeypatch, "exp", lambda x: np.exp(x).astype(np.float64))
    with pytest.raises(
        tn.EvaluationError,
        match=r"(?s)the CPU implementation of exp returned the wrong result\..*received : float64\(2,?\)",
    ):
        tn.evaluate(ops.exp(t32([1.0, 2.0])))


def test_missing_implementation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(declare._IMPLS, "cos", {})
    with pytest.raises(tn.NoImplementationError, match=r"op 'cos' has no implementation on CPU\."):
        tn.evaluate(ops.cos(t32([1.0])))


def test_a_failed_evaluation_leaves_the_plan_usable(monkeypatch: pytest.MonkeyPatch) -> None:
    replace_impl(monkeypatch, "tan", lambda x: 1 / 0)
    with pytest.raises(tn.EvaluationError, match=r"ZeroDivisionError"):
        tn.evaluate(ops.tan(t32([1.0])))
    assert tn.EvalPlan.current().pending() == 0
    np.testing.assert_array_equal(tn.evaluate(t32([1.0]) + 1.0).numpy(), [2.0])


def test_scalar_results_are_tensors() -> None:
    v = t32([1.0, 2.0])
    s = tn.evaluate(v @ v)
    assert type(s) is tn.Tensor
    assert isinstance(s.array, np.ndarray)
    assert s.value() == 5.0
    assert tn.evaluate(ops.exp(tn.scalar(0.0, Float32, CPU))).value() == 1.0
    assert tn.evaluate((v + 1.0)[1]).value() == 3.0


def test_numpy_shortcut() -> None:
    x = t32([[1.0, 2.0]])
    np.testing.assert_array_equal((x + x).numpy(), [[2.0, 4.0]])
    assert (x + x).numpy().dtype == np.float32


def test_evaluate_into_a_read_only_out_is_a_read_only_error() -> None:
    out = tn.evaluate(tn.zeros((2,), tn.Float32, tn.CPU) + 1.0)
    with pytest.raises(
        tn.ReadOnlyError, match=r"^cannot evaluate into out: the tensor's memory is read-only\."
    ):
        tn.evaluate(tn.zeros((2,), tn.Float32, tn.CPU) * 2.0, out=out)


def test_evaluating_what_is_not_typed_nn_data_says_what_to_pass() -> None:
    with pytest.raises(tn.OperandError, match=r"^cannot evaluate: x must be typed_nn data"):
        tn.evaluate(1.0)  # type: ignore[arg-type]
    t = tn.zeros((2, 2), tn.Float32, tn.CPU)
    with pytest.raises(
        tn.OperandError,
        match=r"(?s)^cannot write a value into a tensor \(t\.assign\(value\).*received : 1\.5 "
        r"\(float\).*hint: to fill it with a number: "
        r"t\.assign\(tn\.zeros\(\(2, 2\), tn\.Float32, tn\.CPU\) \+ 1\.5\)\.",
    ):
        t.assign(1.5)  # type: ignore[arg-type]
    with pytest.raises(
        tn.OperandError,
        match=r"(?s)received : numpy\.ndarray \(2, 2\) of float64\n.*"
        r"hint: copy it into Float32: tn\.tensor\(x, tn\.Float32, tn\.CPU, tn\.Dim2\)\.",
    ):
        t.assign(np.ones((2, 2)))  # type: ignore[arg-type]
    np.testing.assert_array_equal(t.numpy(), np.zeros((2, 2)))
    counts = tn.zeros((2,), tn.Int32, tn.CPU)
    with pytest.raises(
        tn.OperandError,
        match=r"hint: to fill it with a number: t\.assign\(tn\.zeros\(\(2,\), tn\.Int32, "
        r"tn\.CPU\) \+ 2\) \(Int32 holds whole numbers\)\.",
    ):
        counts.assign(np.float32(1.5))  # type: ignore[arg-type]

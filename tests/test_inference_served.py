"""Inside ``tn.inference(compiled=True)`` a module call that repeats its signature runs as a
compiled program (typed_nn/evaluate/served.py): the same numbers as building and evaluating its graph,
evaluated tensors back, and the calls a trace cannot serve run as written."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import nn, ops
from typed_nn.data.tensor import Tensor
from typed_nn.debug import is_enabled as debug_enabled
from typed_nn.errors import RetraceWarning
from typed_nn.evaluate import served
from typed_nn.ops.node import Operation

Batch = tn.Matrix[tn.Float32, tn.CPU]

SERVED = not debug_enabled()
"""Debug mode checks every node of every call: calls run as written there."""


def _x(rows: int = 2, seed: int = 0) -> Batch:
    data = np.random.default_rng(seed).normal(size=(rows, 4)).astype(np.float32)
    return tn.tensor(data, tn.Float32, tn.CPU, tn.Dim2)


def _mlp() -> nn.Sequential:
    tn.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.relu, nn.Dropout(0.5), nn.Linear(8, 3))


def _served(m: nn.Module) -> int:
    """How many traces the module's served calls made."""
    return sum(s.compiled.traces for s in vars(m).get("_tn_served", {}).values())


def test_a_repeated_call_is_compiled_and_gives_the_graphs_numbers() -> None:
    model, x = _mlp().eval(), _x()
    want = tn.evaluate(model(x)).numpy()
    with tn.inference(compiled=True):
        first = model(x)
        assert _served(model) == 0
        later = [model(x) for _ in range(3)]
        assert _served(model) == SERVED  # the first of a signature ran as written
    assert all(type(y) is Tensor for y in (first, *later))  # values either way
    for y in (first, *later):
        np.testing.assert_array_equal(y.numpy(), want)
    assert _served(model) == SERVED


def test_another_shape_is_first_built_then_compiled_and_other_blocks_keep_graphs() -> None:
    model = _mlp().eval()
    with tn.inference(compiled=True):
        model(_x(2)), model(_x(2))
        assert type(model(_x(5))) is Tensor  # the first of its shape: as written, evaluated
        assert _served(model) == SERVED
        assert type(model(_x(5))) is Tensor
        assert _served(model) == 2 * SERVED
        with tn.inference():  # the innermost block decides: a template re-evaluated later
            assert not isinstance(model(_x(2)), Tensor)
        assert type(model(_x(2))) is Tensor
    with tn.inference():
        assert not isinstance(model(_x(2)), Tensor)
    assert not isinstance(model(_x(2)), Tensor)  # outside any block
    assert _served(model) == 2 * SERVED


def test_compiled_must_be_a_bool() -> None:
    with pytest.raises(tn.ParamError) as caught:
        tn.inference(compiled=1)  # type: ignore[arg-type]
    assert str(caught.value).startswith(
        "cannot open tn.inference(): compiled must be a bool.\n"
        "  allowed  : a bool\n"
        "  received : 1 (int)\n"
        "hint: with tn.inference(compiled=True): ..."
    )


def test_dropout_in_training_mode_draws_the_same_stream_as_the_graph() -> None:
    served, built = _mlp(), _mlp()
    x = _x(16)
    with tn.inference(compiled=True):
        got = [tn.evaluate(served(x)).numpy() for _ in range(4)]
    with tn.inference():
        want = [tn.evaluate(built(x)).numpy() for _ in range(4)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    assert not np.array_equal(got[2], got[3])  # a fresh mask at every call


def test_a_mode_change_and_a_replaced_parameter_are_seen() -> None:
    model, x = _mlp(), _x(16)
    with tn.inference(compiled=True):
        model(x), model(x)
        model.eval()
        np.testing.assert_array_equal(model(x).numpy(), tn.evaluate(model(x)).numpy())
        layer = model[0]
        assert isinstance(layer, nn.Linear)
        layer.weight = tn.zeros((8, 4), tn.Float32, tn.CPU)
        y = model(x).numpy()
    np.testing.assert_array_equal(y, tn.evaluate(model(x)).numpy())


class ReadsAValue(nn.Module):
    def __init__(self) -> None:
        self.fc = nn.Linear(4, 3)

    def __call__(self, x: Batch) -> Batch:
        scale = float(tn.evaluate(ops.reduce_sum(x)).numpy())  # a value: no trace can hold it
        return self.fc(x) * scale


class Counts(nn.Module):
    def __init__(self) -> None:
        self.fc = nn.Linear(4, 3)
        self.calls = 0

    def __call__(self, x: Batch) -> Batch:
        self.calls += 1  # Python that must run at every call
        return self.fc(x)


def test_a_module_that_reads_a_value_runs_as_written() -> None:
    tn.manual_seed(0)
    m, x = ReadsAValue(), _x()
    want = tn.evaluate(m(x)).numpy()
    with tn.inference(compiled=True):
        got = [tn.evaluate(m(x)).numpy() for _ in range(3)]
    for g in got:
        np.testing.assert_array_equal(g, want)
    assert [s.refused for s in vars(m).get("_tn_served", {}).values()] == [True] * SERVED


def test_a_module_that_sets_a_field_counts_every_call_once() -> None:
    tn.manual_seed(0)
    m, x = Counts(), _x()
    want = tn.evaluate(m(x)).numpy()
    with tn.inference(compiled=True):
        for _ in range(4):
            np.testing.assert_array_equal(tn.evaluate(m(x)).numpy(), want)
    assert m.calls == 5
    assert [s.refused for s in vars(m).get("_tn_served", {}).values()] == [True] * SERVED


def test_a_lazy_expression_kept_on_a_field_is_refused_in_and_out_of_the_block() -> None:
    class KeepsHidden(nn.Module):
        def __init__(self) -> None:
            self.fc = nn.Linear(4, 3)
            self.last: Batch | None = None

        def __call__(self, x: Batch) -> Batch:
            self.last = ops.relu(self.fc(x))
            return self.last

    tn.manual_seed(0)
    m, x = KeepsHidden(), _x()
    for block in (tn.inference(compiled=True), tn.inference(compiled=True), tn.inference()):
        with block, pytest.raises(tn.ModuleError) as caught:
            m(x)
        assert str(caught.value) == (
            "cannot set KeepsHidden.last: a lazy expression would be a parameter of the "
            "module (its tensors are its parameters: trained, saved, loaded).\n"
            "  received : relu[Float32, CPU, Dim2](2, 3)\n"
            "  accepted : a principal tensor\n"
            "hint: to inspect an intermediate value, return it from __call__; to make it a "
            "parameter, evaluate it first: tn.evaluate(expr)."
        )
    assert m.last is None


def test_signatures_that_keep_coming_back_warn_once_and_run_as_written() -> None:
    tn.manual_seed(0)
    model = nn.Linear(4, 3)
    assert model.bias is not None
    weight, bias = model.weight.numpy(), model.bias.numpy()
    lengths = range(1, served.SIGNATURES + 5)  # more than it keeps compiled
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tn.inference(compiled=True):
            for _ in range(3):
                for n in lengths:
                    x = _x(n)
                    np.testing.assert_allclose(
                        tn.evaluate(model(x)).numpy(), x.numpy() @ weight.T + bias, rtol=1e-6
                    )
    texts = [str(w.message) for w in caught if w.category is RetraceWarning]
    assert len(texts) == SERVED
    if SERVED:
        assert texts[0].startswith(
            f"Linear's calls in tn.inference(compiled=True) were traced again "
            f"{served.SIGNATURES} times: their signature keeps changing.\n"
        )
        assert "hint: they run as written from now on" in texts[0]
        assert not isinstance(model(_x(1)), Tensor)


def test_keyword_and_non_tensor_arguments_run_as_written() -> None:
    model, x = _mlp().eval(), _x()
    with tn.inference(compiled=True):
        for _ in range(3):
            assert type(model(x=x)) is Tensor  # values, as every call in the block gives
            assert type(model(x * 1.0)) is Tensor  # a lazy expression
    assert _served(model) == 0


def test_a_result_of_a_call_run_as_written_is_its_calls_value() -> None:
    """The first call of a signature returned its lazy graph, which read the input again after
    a write into it; later calls returned values (outside tester 5, r9)."""
    model, x = _mlp().eval(), _x()
    assert isinstance(x, Tensor)
    with tn.inference(compiled=True):
        results = [model(x) for _ in range(3)]
    want = [r.numpy().copy() for r in results]
    x.assign(x * 0.0)
    for r, w in zip(results, want, strict=True):
        np.testing.assert_array_equal(r.numpy(), w)


def test_other_threads_are_not_in_the_block() -> None:
    model, x = _mlp().eval(), _x()
    kinds: list[type] = []
    with tn.inference(compiled=True):
        model(x), model(x)
        worker = threading.Thread(target=lambda: kinds.append(type(model(x))))
        worker.start()
        worker.join()
    assert kinds == [Operation]


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m))])
def test_a_served_module_copies_and_pickles_without_its_programs(clone: object) -> None:
    tn.manual_seed(0)
    model, x = nn.Linear(4, 3), _x()
    with tn.inference(compiled=True):
        model(x), model(x)
    assert callable(clone)
    twin = clone(model)
    assert "_tn_served" not in vars(twin)
    with tn.inference(compiled=True):
        np.testing.assert_array_equal(twin(x).numpy(), model(x).numpy())


def test_module_calls_are_wrapped_only_once_a_program_asks() -> None:
    """A program that never opens a compiled block pays nothing per module call."""
    code = (
        "import typed_nn as tn\n"
        "from typed_nn import nn\n"
        "class Mine(nn.Module):\n"
        "    def __call__(self, x: object) -> object:\n"
        "        return x\n"
        "assert not hasattr(nn.Linear.__call__, '__tn_served__')\n"
        "assert not hasattr(Mine.__call__, '__tn_served__')\n"
        "with tn.inference():\n"
        "    pass\n"
        "assert not hasattr(nn.Linear.__call__, '__tn_served__')\n"
        "with tn.inference(compiled=True):\n"
        "    pass\n"
        "class Later(nn.Module):\n"
        "    def __call__(self, x: object) -> object:\n"
        "        return x\n"
        "for cls in (nn.Linear, nn.Sequential, Mine, Later):\n"
        "    assert hasattr(cls.__call__, '__tn_served__'), cls\n"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, env={**os.environ, "TYPED_NN_DEBUG": ""}
    )

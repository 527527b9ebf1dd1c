"""A compiled function over a module sees fields set after its trace: a parameter replaced
by another tensor, a submodule swapped (also inside a list or dict field), a configuration
number changed. The trace held the
old objects and values, so the function traces again; numbers agree with plain evaluation."""

from __future__ import annotations

import copy
import pickle
import warnings
from collections.abc import Callable

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import nn
from typed_nn.errors import RetraceWarning


def _x() -> tn.Matrix[tn.Float32, tn.CPU]:
    return tn.tensor(np.arange(3, dtype=np.float32)[None], tn.Float32, tn.CPU, tn.Dim2)


def _plain(m: nn.Linear[tn.Float32, tn.CPU], x: tn.Matrix[tn.Float32, tn.CPU]) -> np.ndarray:
    return tn.evaluate(m(x)).numpy()


class Scaled(nn.Module):
    def __init__(self) -> None:
        self.inner = nn.Linear(3, 2)
        self.scale = 2.0
        self.extra: float | None = 1.0
        self.offset = tn.zeros((2,), tn.Float32, tn.CPU)

    def __call__(self, x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Matrix[tn.Float32, tn.CPU]:
        return self.inner(x) * self.scale


@pytest.mark.parametrize("passed", [True, False], ids=["argument", "closed-over"])
def test_a_replaced_parameter_is_read_after_the_trace(passed: bool) -> None:
    tn.manual_seed(0)
    m, x = nn.Linear(3, 2), _x()
    f = tn.compile(lambda m, x: m(x)) if passed else None
    g = tn.compile(lambda x: m(x))

    def call() -> np.ndarray:
        return (f(m, x) if f is not None else g(x)).numpy()

    np.testing.assert_array_equal(call(), _plain(m, x))
    m.weight = tn.tensor(np.ones((2, 3), np.float32), tn.Float32, tn.CPU, tn.Dim2)
    np.testing.assert_array_equal(call(), _plain(m, x))
    assert m.bias is not None
    np.testing.assert_array_equal(call(), np.full((1, 2), 3.0, np.float32) + m.bias.numpy())


def test_a_swapped_submodule_and_a_changed_number_are_traced_again() -> None:
    tn.manual_seed(0)
    m, x = Scaled(), _x()
    f = tn.compile(lambda x: m(x))
    f(x)
    m.inner = nn.Linear(3, 2)
    np.testing.assert_array_equal(f(x).numpy(), tn.evaluate(m(x)).numpy())
    m.scale = -1.0
    np.testing.assert_array_equal(f(x).numpy(), tn.evaluate(m(x)).numpy())
    assert f.traces == 3


def test_a_deleted_field_is_traced_again() -> None:
    tn.manual_seed(0)
    m, x = Scaled(), _x()
    f = tn.compile(lambda x: m(x))
    f(x)
    del m.extra
    f(x)
    assert f.traces == 2


def test_values_assigned_in_place_and_new_modules_do_not_trace_again() -> None:
    tn.manual_seed(0)
    m, x = Scaled(), _x()
    f = tn.compile(lambda x: m(x) + m.offset)
    f(x)
    m.offset.assign(m.offset + 0.5)
    nn.Linear(4, 4)  # building another module sets its fields for the first time
    np.testing.assert_array_equal(f(x).numpy(), tn.evaluate(m(x) + m.offset).numpy())
    assert f.traces == 1


def test_fields_set_between_every_call_warn_once_with_the_fix() -> None:
    tn.manual_seed(0)
    m, x = nn.Linear(3, 2), _x()
    f = tn.compile(lambda x: m(x), max_traces=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(6):
            f(x)
            m.bias = tn.zeros((2,), tn.Float32, tn.CPU)
    texts = [str(w.message) for w in caught if w.category is RetraceWarning]
    assert len(texts) == 1
    assert texts[0].startswith(
        "compiled test_fields_set_between_every_call_warn_once_with_the_fix.<locals>.<lambda> "
        "was traced again 3 times because module fields were set between "
        "its calls (a tensor or a value it held was replaced)."
    )
    assert "hint: change a parameter's or buffer's values in place with t.assign(...)" in texts[0]


class Stack(nn.Module):
    def __init__(self) -> None:
        self.layers = [nn.Linear(3, 3), nn.Linear(3, 2)]
        self.heads = {"out": nn.Linear(2, 2)}

    def __call__(self, x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Matrix[tn.Float32, tn.CPU]:
        for layer in self.layers:
            x = layer(x)
        return self.heads["out"](x)


def test_an_item_swapped_in_a_list_or_dict_field_is_traced_again() -> None:
    tn.manual_seed(0)
    m, x = Stack(), _x()
    f = tn.compile(lambda x: m(x))
    f(x)
    m.layers[1] = nn.Linear(3, 2)
    np.testing.assert_array_equal(f(x).numpy(), tn.evaluate(m(x)).numpy())
    m.heads["out"] = nn.Linear(2, 2)
    np.testing.assert_array_equal(f(x).numpy(), tn.evaluate(m(x)).numpy())
    m.layers.insert(1, nn.Linear(3, 3))
    np.testing.assert_array_equal(f(x).numpy(), tn.evaluate(m(x)).numpy())
    assert f.traces == 4


def test_a_bad_item_added_to_a_list_or_dict_field_changes_nothing() -> None:
    tn.manual_seed(0)
    m = Stack()
    with pytest.raises(tn.ModuleError) as caught:
        m.layers.extend(iter([nn.Linear(2, 2), np.zeros(3)]))  # type: ignore[arg-type]
    assert str(caught.value).startswith(
        "cannot set Stack.layers[3]: a module field holds typed_nn data, modules, lists, "
        "tuples or dicts of them, or configuration.\n"
    )
    assert "hint: wrap the array: tn.tensor(array, tn.Float32, tn.CPU, tn.Dim1)." in str(
        caught.value
    )
    with pytest.raises(tn.ModuleError, match=r"^cannot set Stack.heads\['extra'\]: "):
        m.heads.update(extra={1, 2})  # type: ignore[call-overload]
    assert len(m.layers) == 2
    assert list(m.heads) == ["out"]
    assert [name for name, _ in nn.named_parameters(m)] == [
        "layers.0.weight",
        "layers.0.bias",
        "layers.1.weight",
        "layers.1.bias",
        "heads.out.weight",
        "heads.out.bias",
    ]


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m))])
def test_list_and_dict_fields_stay_watched_in_copies(clone: Callable[[Stack], Stack]) -> None:
    tn.manual_seed(0)
    twin = clone(Stack())
    x = _x()
    f = tn.compile(lambda x: twin(x))
    f(x)
    twin.layers[0] = nn.Linear(3, 3)
    np.testing.assert_array_equal(f(x).numpy(), tn.evaluate(twin(x)).numpy())
    assert f.traces == 2


def test_a_list_set_as_a_field_is_copied_as_nn_module_list_copies() -> None:
    tn.manual_seed(0)
    m = Stack()
    source = [nn.Linear(3, 3)]
    m.layers = source
    source.append(nn.Linear(3, 3))  # the module holds its own, watched copy
    assert len(m.layers) == 1
    m.layers.append(nn.Linear(3, 2))
    assert len(source) == 2
    assert len(m.layers) == 2


def test_a_name_rebound_to_another_module_or_optimizer_is_traced_again() -> None:
    """A closure's model and optimizer rebound between calls (a new model, a new optimizer to
    restart Adam's counts): the next call is another program, as eagerly. The program had
    kept the old objects (the old optimizer's moments and count)."""
    from typed_nn import ops, optim

    tn.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = optim.Adam(model, lr=0.1)

    def step(x: tn.Matrix[tn.Float32, tn.CPU]) -> None:
        opt.step(tn.grad(ops.reduce_mean(ops.square(model(x))), model))

    compiled = tn.compile(step)
    for _ in range(3):
        compiled(_x())
    opt = optim.Adam(model, lr=0.1)  # restart the counts
    compiled(_x())
    assert opt.step_count == 1
    assert compiled.traces == 2
    model = nn.Linear(3, 1)
    predict = tn.compile(lambda x: model(x))
    predict(_x())
    model = nn.Linear(3, 1)
    np.testing.assert_array_equal(predict(_x()).numpy(), _plain(model, _x()))

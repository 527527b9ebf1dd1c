"""Every public function, given one wrong-typed argument at a time, fails with a typed_nn error.

The public functions are what the facades export (``typed_nn``, ``typed_nn.ops``,
``typed_nn.layers``, ``typed_nn.model`` and its ``torch_mapping``, ``typed_nn.train``, ...).
Each has a valid call in ``EXAMPLES`` (the first test fails for a new one until it is added);
the sweep then replaces one argument at a time — positional, keyword, defaulted, or one more
``*args`` item — by a value of no type typed_nn takes, and requires a ``TypedNNError`` (which
names the argument and what it takes), never a raw ``TypeError`` / ``AttributeError`` /
``KeyError`` from deep inside. ``PASS_THROUGH`` lists the parameters that accept any object on
purpose, each with the reason.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import threads_restored

import typed_nn as tn
import typed_nn.debug
import typed_nn.distributed
from typed_nn import layers, ops
from typed_nn.debug.public import FACADES as DEBUG_CHECKED
from typed_nn.layers import LayerInMap, LayerInput, LayerOutput, make_train_layer
from typed_nn.layers.in_map import port_type
from typed_nn.model import SGD, GaussianFiller, LoadBuffer, ParamInitializer, torch_mapping
from typed_nn.policies import PInitializerIs, PUpdate
from typed_nn.train import Dataset, History
from typed_nn.train.classifier import build_mlp

FACADES = (
    *DEBUG_CHECKED,  # typed_nn, data, evaluate, ops, layers, model, policies
    "typed_nn.model.torch_mapping",
    "typed_nn.train",
    "typed_nn.distributed",
    "typed_nn.debug",
    "typed_nn.onnx",
    "typed_nn.autodiff",
)
"""Every facade: those debug mode checks, and the ones above them."""


class Wrong:
    """A value of no type any typed_nn function takes."""

    def __repr__(self) -> str:
        return "Wrong()"


WRONG = Wrong()
Call = tuple[tuple[Any, ...], dict[str, Any]]
"""Positional and keyword arguments of a valid call."""


def public_functions() -> dict[str, Callable[..., Any]]:
    """Every function the facades export, by its first public name."""
    found: dict[str, Callable[..., Any]] = {}
    seen: set[int] = set()
    for facade in FACADES:
        module = importlib.import_module(facade)
        names = getattr(module, "__all__", None) or [n for n in vars(module) if n[0] != "_"]
        for name in names:
            fn = getattr(module, name)
            public = inspect.isfunction(fn) and fn.__module__.startswith("typed_nn")
            key = id(inspect.unwrap(fn)) if public else 0  # debug mode wraps it per facade
            if public and key not in seen:
                seen.add(key)
                found[f"{facade}.{name}"] = fn
    return found


# --- valid calls ---------------------------------------------------------------------------


def m(*shape: int, low: float = 0.2, high: float = 0.9) -> tn.Tensor[Any, Any, Any]:
    """A Float32 CPU tensor of ``shape`` with values in [low, high)."""
    values = np.random.default_rng(0).uniform(low, high, shape).astype(np.float32)
    return tn.tensor(values, tn.Float32, tn.CPU, tn.tags.dim_of_rank(len(shape)))


def ints(*values: int) -> tn.Tensor[Any, Any, Any]:
    return tn.tensor(np.array(values, np.int64), tn.Int64, tn.CPU, tn.Dim1)


def data() -> Dataset:
    x = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32)
    return Dataset(x, x[:, :3].argmax(1).astype(np.int64), 3)


def net() -> Any:
    return build_mlp([4, 3], seed=0)[0]


def relu_layer() -> Any:
    return make_train_layer(
        layers.ReLULayer, LayerInMap({LayerInput: tn.Matrix[tn.Float32, tn.CPU]})
    )


def linear() -> Any:
    cls = make_train_layer(
        layers.LinearLayer,
        LayerInMap({LayerInput: tn.Matrix[tn.Float32, tn.CPU]}),
        PUpdate,
        PInitializerIs("w"),
    )
    layer = cls("fc", 3, 2)
    layer.init(
        ParamInitializer({"w": GaussianFiller(0, 1, seed=0)}), LoadBuffer(tn.Float32, tn.CPU)
    )
    return layer


def params() -> dict[str, tn.Tensor[Any, Any, Any]]:
    return {"fc/weight": m(3, 2), "fc/bias": m(2)}


def unary(name: str) -> Call:
    return (m(2, 3, low=1.2, high=1.8) if "acosh" in name else m(2, 3),), {}


def grad_of(name: str) -> Call:
    return (m(2, 3), m(2, 3, low=1.2, high=1.8) if "acosh" in name else m(2, 3)), {}


def examples(tmp: Path) -> dict[str, Callable[[], Call]]:
    """A valid call of every public function (fresh arguments at each call)."""
    weights = tmp / "w.safetensors"
    tn.model.save_weights(weights, params())
    ckpt = tmp / "c.ckpt"
    tn.model.save_checkpoint(ckpt, params(), SGD(0.1), epoch=1)
    mapping = torch_mapping.linear("fc", "fc")
    table: dict[str, Callable[[], Call]] = {
        "typed_nn.compile": lambda: ((lambda x: x * 2.0,), {"static": (), "max_traces": 4}),
        "typed_nn.evaluate": lambda: ((m(2, 3),), {"out": tn.zeros((2, 3), tn.Float32, tn.CPU)}),
        "typed_nn.from_dlpack": lambda: (
            (np.ones((2, 2), np.float32), tn.Float32, tn.CPU, tn.Dim2),
            {},
        ),
        "typed_nn.grad": lambda: ((ops.reduce_sum(m(2, 2) * 2.0), m(2, 2)), {}),
        "typed_nn.vjp": lambda: ((m(2, 2), m(2, 2), m(2, 2)), {}),
        "typed_nn.inference": lambda: ((), {}),
        "typed_nn.make_dynamic": lambda: ((m(2, 2),), {}),
        "typed_nn.ones": lambda: (((2, 3), tn.Float32, tn.CPU), {}),
        "typed_nn.zeros": lambda: (((2, 3), tn.Float32, tn.CPU), {}),
        "typed_nn.scalar": lambda: ((1.5, tn.Float32, tn.CPU), {}),
        "typed_nn.default_generator": lambda: ((), {"device": tn.CPU}),
        "typed_nn.manual_seed": lambda: ((0,), {}),
        "typed_nn.get_num_threads": lambda: ((), {}),
        "typed_nn.set_num_threads": lambda: ((tn.get_num_threads(),), {}),
        "typed_nn.tensor": lambda: (([[1.0, 2.0]], tn.Float32, tn.CPU, tn.Dim2), {"copy": True}),
        **{
            f"typed_nn.{n}": (lambda: ((m(2, 2),), {}))
            for n in (
                *("data_category", "is_matrix", "is_scalar", "is_vector"),
                *("is_tensor3", "is_tensor4", "is_tensor5", "is_tensor6"),
            )
        },
        "typed_nn.debug.is_enabled": lambda: ((), {}),
        "typed_nn.debug.install": lambda: (("no_such_package_here",), {"shapes": True}),
        "typed_nn.distributed.launched": lambda: ((), {}),
        "typed_nn.distributed.world": lambda: ((), {}),
        "typed_nn.distributed.abort_on_error": lambda: ((tn.distributed.World(),), {}),
        "typed_nn.evaluate.buffer_pool": lambda: ((), {}),
        "typed_nn.evaluate.clear_plan_cache": lambda: ((), {}),
        "typed_nn.evaluate.last_program": lambda: ((), {}),
        "typed_nn.evaluate.register": lambda: ((m(2, 2),), {}),
        "typed_nn.layers.Previous": lambda: ((LayerOutput,), {}),
        "typed_nn.layers.collapse": lambda: (
            (m(2, 3), port_type(tn.Vector[tn.Float32, tn.CPU])),
            {},
        ),
        "typed_nn.layers.layer_feed_forward": lambda: (
            (relu := relu_layer()("r"), relu.input_cont().set(LayerInput, m(2, 3))),
            {},
        ),
        "typed_nn.layers.layer_feed_backward": lambda: (
            (relu := relu_layer()("r"), relu.output_cont()),
            {},
        ),
        "typed_nn.layers.layer_grad_collect": lambda: (
            (linear(), tn.model.GradCollector(tn.Float32, tn.CPU)),
            {},
        ),
        "typed_nn.layers.layer_init": lambda: (
            (
                linear(),
                ParamInitializer({"w": GaussianFiller(0, 1, seed=0)}),
                LoadBuffer(tn.Float32, tn.CPU),
            ),
            {},
        ),
        "typed_nn.layers.layer_neutral_invariant": lambda: ((linear(),), {}),
        "typed_nn.layers.layer_save_weights": lambda: (
            (linear(), LoadBuffer(tn.Float32, tn.CPU)),
            {},
        ),
        "typed_nn.layers.make_infer_layer": lambda: ((layers.ReLULayer, PUpdate), {}),
        "typed_nn.layers.make_train_layer": lambda: (
            (layers.ReLULayer, LayerInMap({LayerInput: tn.Matrix[tn.Float32, tn.CPU]}), PUpdate),
            {},
        ),
        "typed_nn.layers.model_state": lambda: ((linear(),), {}),
        "typed_nn.layers.layer_params": lambda: ((linear(),), {}),
        "typed_nn.layers.residual": lambda: ((layers.Sequential,), {}),
        "typed_nn.layers.summary": lambda: ((net(), m(2, 4)), {"depth": 1}),
        "typed_nn.layers.tensor_type": lambda: ((tn.Float32, tn.CPU, 2), {}),
        "typed_nn.model.clip_by_global_norm": lambda: (([m(2, 2)], 1.0), {}),
        "typed_nn.model.global_norm": lambda: (([m(2, 2)],), {}),
        "typed_nn.model.from_torch_state_dict": lambda: (
            (
                {"fc.weight": np.ones((2, 3), np.float32), "fc.bias": np.ones(2, np.float32)},
                params(),
                mapping,
            ),
            {"strict": True},
        ),
        "typed_nn.model.to_torch_state_dict": lambda: ((params(), mapping), {"strict": True}),
        "typed_nn.model.load_checkpoint": lambda: ((ckpt, params(), SGD(0.1)), {}),
        "typed_nn.model.save_checkpoint": lambda: (
            (tmp / "s.ckpt", params(), SGD(0.1)),
            {"epoch": 1, "rng": np.random.default_rng(0), "history": {"a": [1]}, "extra": {}},
        ),
        "typed_nn.model.load_weights": lambda: ((weights, params()), {"strict": True}),
        "typed_nn.model.save_weights": lambda: (
            (tmp / "s.safetensors", params()),
            {"metadata": {}},
        ),
        "typed_nn.model.var_scale_fans": lambda: (((3, 2),), {}),
        **{
            f"typed_nn.model.torch_mapping.{n}": (lambda: (("fc", "fc"), {}))
            for n in (
                *("linear", "embedding", "batch_norm", "layer_norm", "lstm", "gru"),
                "multi_head_attention",
            )
        },
        "typed_nn.model.torch_mapping.conv2d": lambda: (("c", "c"), {"bias": True}),
        "typed_nn.model.torch_mapping.mlp": lambda: (("mlp", 2), {"module": "", "stride": 2}),
        "typed_nn.model.torch_mapping.digits_cnn": lambda: (("cnn",), {"module": ""}),
        "typed_nn.onnx.export": lambda: ((ops.relu, (m(2, 2),), tmp / "m.onnx"), {"opset": 17}),
        "typed_nn.policies.change_policy": lambda: ((PUpdate, tn.policies.PolicyContainer()), {}),
        "typed_nn.policies.has_policy": lambda: (
            (tn.policies.PolicyContainer(PUpdate), tn.policies.GradPolicy, "is_update"),
            {},
        ),
        "typed_nn.policies.plain_policies": lambda: ((tn.policies.PolicyContainer(),), {}),
        "typed_nn.policies.policy_select": lambda: (
            (tn.policies.GradPolicy, tn.policies.PolicyContainer()),
            {},
        ),
        "typed_nn.policies.sub_policies": lambda: ((tn.policies.PolicyContainer(), "fc"), {}),
        "typed_nn.train.accuracy": lambda: ((net(), data()), {"device": tn.CPU}),
        "typed_nn.train.predict": lambda: ((net(), data()), {"device": tn.CPU}),
        "typed_nn.train.batches": lambda: ((data(), 4, np.random.default_rng(0)), {}),
        "typed_nn.train.constant": lambda: ((0.1,), {}),
        "typed_nn.train.cosine": lambda: ((0.1, 10), {"final": 0.0}),
        "typed_nn.train.exponential": lambda: ((0.1, 0.9), {}),
        "typed_nn.train.step_decay": lambda: ((0.1, 5), {"factor": 0.5}),
        "typed_nn.train.warmup": lambda: ((tn.train.constant(0.1), 5), {"start": 0.0}),
        "typed_nn.train.fit": lambda: (
            (net(), data(), SGD(0.1)),
            {"epochs": 1, "batch_size": 4},
        ),
        "typed_nn.train.load_digits": lambda: ((0.2, 0), {}),
        "typed_nn.train.one_hot": lambda: ((np.array([0, 2, 1]), 3), {}),
        "typed_nn.train.plot_history": lambda: ((History([1.0], [0.5]), tmp / "h.png"), {}),
    }
    for name in public_functions():
        short = name.rsplit(".", 1)[1]
        if name in table or not name.startswith("typed_nn.ops."):
            continue
        fn = getattr(ops, short)
        first = list(inspect.signature(fn).parameters)
        if first[:2] in (["g", "x"], ["g", "y"]):
            table[name] = functools.partial(grad_of, short)
        elif first == ["x"]:
            table[name] = functools.partial(unary, short)
    table |= OPS
    return table


_OPS: dict[str, Callable[[], Call]] = {
    "argmax": lambda: ((m(2, 3),), {"axis": -1}),
    "astype": lambda: ((m(2, 3), tn.Float64), {}),
    "avg_pool2d": lambda: ((m(1, 1, 4, 4), 2), {"stride": None}),
    "max_pool2d": lambda: ((m(1, 1, 4, 4), 2), {"stride": None}),
    "avg_pool2d_grad": lambda: ((m(1, 1, 2, 2), (1, 1, 4, 4), 2), {"stride": None}),
    "max_pool2d_grad": lambda: ((m(1, 1, 2, 2), m(1, 1, 4, 4), 2), {"stride": None}),
    "concat": lambda: (([m(2, 3), m(1, 3)],), {"axis": 0}),
    "stack": lambda: (([m(2, 3), m(2, 3)],), {"axis": 0}),
    "conv2d": lambda: ((m(1, 1, 4, 4), m(2, 1, 3, 3)), {"stride": 1, "padding": 0}),
    "conv2d_grad_input": lambda: (
        (m(1, 2, 2, 2), m(2, 1, 3, 3), (1, 1, 4, 4)),
        {"stride": 1, "padding": 0},
    ),
    "conv2d_grad_weight": lambda: (
        (m(1, 2, 2, 2), m(1, 1, 4, 4), (2, 1, 3, 3)),
        {"stride": 1, "padding": 0},
    ),
    "dot": lambda: ((m(2, 3), m(3, 4)), {"k": 1}),
    "matmul": lambda: ((m(2, 3), m(3, 4)), {}),
    "dropout_mask": lambda: ((ints(0, 1), (2, 3), 0.5, tn.Float32), {"stream": 0}),
    "normal": lambda: ((tn.Generator(0), (2, 3), tn.Float32, tn.CPU), {"mean": 0.0, "std": 1.0}),
    "uniform": lambda: ((tn.Generator(0), (2, 3), tn.Float32, tn.CPU), {"low": 0.0, "high": 1.0}),
    "bernoulli": lambda: ((tn.Generator(0), (2, 3), 0.5, tn.Float32, tn.CPU), {}),
    "randint": lambda: ((tn.Generator(0), (2, 3), 0, 5, tn.Int64, tn.CPU), {}),
    "permutation": lambda: ((tn.Generator(0), 5, tn.CPU), {}),
    "embedding": lambda: ((m(4, 3), ints(0, 2)), {}),
    "cross_entropy": lambda: (
        (m(2, 3), ints(0, 2)),
        {"reduction": "mean", "label_smoothing": 0.1, "ignore_index": -100},
    ),
    "binary_cross_entropy_with_logits": lambda: (
        (m(2, 3), m(2, 3)),
        {"reduction": "mean", "pos_weight": m(3)},
    ),
    "gelu": lambda: ((m(2, 3),), {"approximate": "tanh"}),
    "label_pick": lambda: ((m(2, 3), ints(0, 2)), {}),
    "label_pick_grad": lambda: ((m(2), ints(0, 2), 3), {}),
    "embedding_grad": lambda: ((m(2, 3), ints(0, 2), 4), {}),
    "huber_loss": lambda: ((m(2, 3), m(2, 3)), {"delta": 1.0, "reduction": "mean"}),
    "l1_loss": lambda: ((m(2, 3), m(2, 3)), {"reduction": "mean"}),
    "mse_loss": lambda: ((m(2, 3), m(2, 3)), {"reduction": "mean"}),
    "nll_loss": lambda: ((m(2, 3), m(2, 3)), {}),
    "nll_loss_grad": lambda: ((tn.scalar(1.0, tn.Float32, tn.CPU), m(2, 3), m(2, 3)), {}),
    "interpolate": lambda: ((m(2, 3), m(2, 3), m(2, 3)), {}),
    "log_softmax": lambda: ((m(2, 3),), {"k": 1}),
    "softmax": lambda: ((m(2, 3),), {"k": 1}),
    "log_softmax_grad": lambda: ((m(2, 3), m(2, 3)), {"k": 1}),
    "softmax_grad": lambda: ((m(2, 3), m(2, 3)), {"k": 1}),
    "squeeze": lambda: ((m(1, 3), 0), {}),
    "unsqueeze": lambda: ((m(2, 3), 0), {}),
    "maximum": lambda: ((m(2, 3), m(2, 3)), {}),
    "minimum": lambda: ((m(2, 3), m(2, 3)), {}),
    "narrow": lambda: ((m(4, 3), 0, 1, 2), {}),
    "permute": lambda: ((m(2, 3), (1, 0)), {}),
    "permute_inv": lambda: ((m(2, 3), (1, 0)), {}),
    "reduce_max": lambda: ((m(2, 3),), {"dims": 0, "keep_dim": False}),
    "reduce_mean": lambda: ((m(2, 3),), {"dims": 0, "keep_dim": False}),
    "reduce_sum": lambda: ((m(2, 3),), {"dims": 0, "keep_dim": False}),
    "reshape": lambda: ((m(2, 3), (3, 2)), {}),
    "tile": lambda: ((m(3), (2, 3)), {}),
    "to_device": lambda: ((m(2, 3), tn.CPU), {}),
    "transpose": lambda: ((m(2, 3),), {}),
    "where": lambda: ((m(2, 3), m(2, 3), m(2, 3)), {}),
}
OPS = {f"typed_nn.ops.{name}": call for name, call in _OPS.items()}


# --- the sweep ---------------------------------------------------------------------------------

SWITCHES = {"typed_nn.debug.enable": "turns debug mode on for the rest of the process"}
"""Functions with no parameters whose call changes the process (tests/test_debug.py runs them
in a subprocess)."""
NO_BASELINE = {"typed_nn.debug.install": "a valid call turns debug mode on for the process"}
"""Functions swept with wrong arguments only (each must fail before it changes anything)."""

QUERY = "a category query: what is not typed_nn data is in no category (False)"
GENERIC = (
    "MetaNN's generic layer functions: an object without the method is a layer without "
    "parameters (or state), for which there is nothing to do"
)
PASS_THROUGH: dict[tuple[str, str], str] = {
    **{(f"typed_nn.is_{c}", "x"): QUERY for c in ("scalar", "vector", "matrix")},
    **{(f"typed_nn.is_tensor{r}", "x"): QUERY for r in (3, 4, 5, 6)},
    **{
        (f"typed_nn.layers.layer_{f}", "layer"): GENERIC
        for f in ("grad_collect", "init", "neutral_invariant", "save_weights")
    },
}
"""(function, parameter) -> why a wrong-typed value is accepted there."""
NOT_YET: dict[tuple[str, str], str] = {}
"""Raw errors the sweep finds that this change does not fix, with why (expected to fail: a
fix makes them pass, and the strict expectation then asks to drop the entry)."""


def variants(name: str, fn: Callable[..., Any], call: Call) -> Iterator[tuple[str, Call]]:
    """(parameter, the call with that argument wrong) for each parameter of ``fn``."""
    args, kwargs = call
    parameters = list(inspect.signature(fn).parameters.values())
    for i, p in enumerate(parameters):
        if p.kind is p.VAR_POSITIONAL:
            yield p.name, ((*args, WRONG), kwargs)
        elif p.kind is p.VAR_KEYWORD:
            continue
        elif i < len(args) and p.kind is not p.KEYWORD_ONLY:
            yield p.name, ((*args[:i], WRONG, *args[i + 1 :]), kwargs)
        else:
            yield p.name, (args, {**kwargs, p.name: WRONG})


def invoke(fn: Callable[..., Any], call: Call) -> object:
    """Call ``fn``; enter what it returns if that is a context manager (``inference()``,
    ``abort_on_error(w)``), take the first item of an iterator (``batches``)."""
    args, kwargs = call
    with threads_restored():  # tn.set_num_threads must not turn the split on for later tests
        result = fn(*args, **kwargs)
    if isinstance(result, AbstractContextManager) and not isinstance(result, Path):
        with result:
            pass
    if isinstance(result, Iterator):
        next(result, None)
    return result


def outcome(fn: Callable[..., Any], call: Call) -> str:
    """What the call did: "ok", "typed" (a TypedNNError), or the raw error's type and text."""
    try:
        invoke(fn, call)
    except tn.TypedNNError:
        return "typed"
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
    return "ok"


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Callable[[], Call]]:
    return examples(tmp_path_factory.mktemp("public_api"))


FUNCTIONS = public_functions()
SWEPT = [name for name in FUNCTIONS if name not in SWITCHES]


def test_every_public_function_has_a_valid_call(table: dict[str, Callable[[], Call]]) -> None:
    missing = sorted(set(SWEPT) - set(table))
    assert not missing, f"add a valid call of each to examples(): {missing}"


@pytest.mark.parametrize("name", [n for n in SWEPT if n not in NO_BASELINE])
def test_the_valid_call_runs(table: dict[str, Callable[[], Call]], name: str) -> None:
    invoke(FUNCTIONS[name], table[name]())


def _cases() -> Iterator[Any]:
    for name in SWEPT:
        for p in inspect.signature(FUNCTIONS[name]).parameters.values():
            if p.kind is p.VAR_KEYWORD:
                continue
            marks = []
            if (name, p.name) in NOT_YET:
                marks.append(pytest.mark.xfail(reason=NOT_YET[name, p.name], strict=True))
            yield pytest.param(name, p.name, id=f"{name}-{p.name}", marks=marks)


@pytest.mark.parametrize(("name", "parameter"), list(_cases()))
def test_one_wrong_argument_is_a_typed_nn_error(
    table: dict[str, Callable[[], Call]], name: str, parameter: str
) -> None:
    fn = FUNCTIONS[name]
    (call,) = [c for p, c in variants(name, fn, table[name]()) if p == parameter]
    result = outcome(fn, call)
    if (name, parameter) in PASS_THROUGH:
        # Accepted; in debug mode beartype checks the annotation and refuses it.
        debug = typed_nn.debug.is_enabled() and result.startswith("BeartypeCallHintParamViolation")
        assert result in ("ok", "typed") or debug, result
    else:
        assert result == "typed", f"{name}({parameter}=Wrong()): {result}"


MESSAGES: dict[tuple[str, str], str] = {
    ("typed_nn.from_dlpack", "elem"): r"^from_dlpack: elem must be an element tag, got Wrong",
    (
        "typed_nn.make_dynamic",
        "x",
    ): r"^make_dynamic needs typed_nn data to hold\.\n  received : Wrong",
    ("typed_nn.ops.dropout_mask", "shape"): r"^dropout_mask needs a shape tuple of non-negative",
    ("typed_nn.ops.dot", "k"): r"^cannot build dot: cannot contract Wrong\(\) dim\(s\)\.",
    ("typed_nn.layers.tensor_type", "elem"): r"^tensor_type: elem must be an element tag",
    ("typed_nn.layers.tensor_type", "rank"): r"^typed_nn supports ranks 0 to 6, got rank Wrong\(\)",
    ("typed_nn.layers.layer_feed_forward", "layer"): (
        r"^layer_feed_forward needs a layer: an object with feed_forward\.\n  received : Wrong"
    ),
    ("typed_nn.layers.layer_init", "initializer"): r"^layer_init needs an initializer: an object",
    ("typed_nn.layers.layer_init", "load_buffer"): r"^layer_init needs a load buffer: an object",
    ("typed_nn.layers.layer_save_weights", "saver"): r"^layer_save_weights needs a saver",
    ("typed_nn.layers.layer_grad_collect", "collector"): r"^layer_grad_collect needs a gradient",
    (
        "typed_nn.layers.make_train_layer",
        "layer",
    ): r"^cannot configure Wrong\(\): it is not a layer",
    ("typed_nn.layers.collapse", "grad"): r"^collapse needs a gradient \(typed_nn data\) and a",
    ("typed_nn.model.clip_by_global_norm", "grads"): r"^gradient clipping needs a non-empty",
    ("typed_nn.model.var_scale_fans", "shape"): r"^var_scale_fans needs a shape tuple",
    ("typed_nn.model.save_weights", "path"): (
        r"^save_weights: path must be a file path \(str or PathLike\)\.\n"
        r"  allowed  : a file path \(str or PathLike\)\n  received : Wrong\(\) \(Wrong\)"
    ),
    ("typed_nn.model.save_weights", "params"): r"^save_weights needs the parameters as a mapping",
    ("typed_nn.model.save_weights", "metadata"): r"^save_weights: metadata must map strings to",
    ("typed_nn.model.load_weights", "path"): r"^load_weights: path must be a file path",
    ("typed_nn.model.load_checkpoint", "path"): r"^load_checkpoint: path must be a file path",
    ("typed_nn.model.load_checkpoint", "model"): r"^load_checkpoint needs the model: a typed_nn",
    (
        "typed_nn.model.load_checkpoint",
        "optimizer",
    ): r"^load_checkpoint needs the optimizer whose state",
    ("typed_nn.model.save_checkpoint", "path"): r"^save_checkpoint: path must be a file path",
    ("typed_nn.model.save_checkpoint", "history"): (
        r"^save_checkpoint: history must be a mapping of strings to JSON data \(a JSON object\), "
        r"or None\.\n  allowed  : .*\n  received : Wrong\(\) \(Wrong\)"
    ),
    ("typed_nn.model.save_checkpoint", "extra"): r"^save_checkpoint: extra must be a mapping",
    ("typed_nn.model.save_checkpoint", "epoch"): r"^save_checkpoint: epoch must be an integer >= 0",
    ("typed_nn.model.save_checkpoint", "rng"): r"^save_checkpoint: rng must be a numpy Generator",
    ("typed_nn.model.torch_mapping.linear", "layer"): r"^torch_mapping: layer must be a name",
    ("typed_nn.model.torch_mapping.linear", "module"): r"^torch_mapping: module must be a name",
    ("typed_nn.model.torch_mapping.mlp", "layers"): r"^torch_mapping\.mlp needs at least one",
    ("typed_nn.policies.policy_select", "policies"): r"^policy_select needs a PolicyContainer\.",
    ("typed_nn.policies.plain_policies", "policies"): r"^plain_policies needs a PolicyContainer",
    ("typed_nn.policies.change_policy", "policies"): r"^change_policy needs a PolicyContainer",
    ("typed_nn.policies.sub_policies", "name"): r"^sub_policies needs the sublayer's name",
    ("typed_nn.policies.has_policy", "minor"): r"GradPolicy has no minor 'Wrong\(\)'",
    ("typed_nn.train.batches", "data"): r"^cannot make mini-batches: data must be a typed_nn",
    ("typed_nn.train.batches", "rng"): r"^cannot make mini-batches: rng must be a numpy Generator",
    ("typed_nn.train.load_digits", "seed"): r"^cannot split: seed must be an integer >= 0\.",
    ("typed_nn.train.load_digits", "test_fraction"): r"^cannot split: test_fraction must be",
    (
        "typed_nn.train.predict",
        "model",
    ): r"^cannot predict: model must be an nn\.Module or a training",
    ("typed_nn.train.accuracy", "data"): r"^cannot predict: data must be a typed_nn\.train\.",
    (
        "typed_nn.train.fit",
        "model",
    ): r"^cannot fit: model must be an nn\.Module or a training layer",
    ("typed_nn.train.fit", "world"): r"^cannot fit: world must be a typed_nn\.distributed World",
    ("typed_nn.train.plot_history", "history"): r"^cannot plot: history must be a typed_nn\.",
    ("typed_nn.train.plot_history", "path"): r"^cannot plot: path must be a file path",
    ("typed_nn.distributed.abort_on_error", "w"): r"^abort_on_error needs the world whose",
    ("typed_nn.distributed.abort_on_error", "collective"): r"^abort_on_error: collective must",
    ("typed_nn.debug.install", "package"): r"^typed_nn\.debug\.install needs a package name",
    ("typed_nn.debug.install", "shapes"): r"^typed_nn\.debug\.install needs a package name",
    ("typed_nn.onnx.export", "fn"): r"^cannot export: fn must be a function of typed_nn data\.",
    ("typed_nn.onnx.export", "example_args"): r"^cannot export: example_args must be a tuple",
    ("typed_nn.onnx.export", "path"): r"^cannot export: path must be a file path",
    ("typed_nn.onnx.export", "static"): r"^cannot export: static must be a sequence of",
    ("typed_nn.onnx.export", "params"): r"^cannot export: params must be a mapping",
    ("typed_nn.onnx.export", "output_names"): r"^cannot export: output_names must be a sequence",
}
"""What the errors the sweep found (and this change fixed) say, by (function, parameter)."""


@pytest.mark.parametrize(
    ("name", "parameter"), list(MESSAGES), ids=[f"{n}-{p}" for n, p in MESSAGES]
)
def test_the_errors_the_sweep_found_say_what_is_wrong(
    table: dict[str, Callable[[], Call]], name: str, parameter: str
) -> None:
    fn = FUNCTIONS[name]
    (call,) = [c for p, c in variants(name, fn, table[name]()) if p == parameter]
    with pytest.raises(tn.TypedNNError, match=MESSAGES[name, parameter]):
        invoke(fn, call)

"""Every layer's backward: the vjp of its recorded forward (DESIGN §7).

A layer is its forward. MetaNN's LIFO discipline is kept: a training layer that feeds back or
updates has a ``forward`` stack; each feed_forward pushes a :class:`ForwardRecord` (what to
differentiate by, and the outputs), each feed_backward pops it, pops what the forward's own
stacks and sublayers stored, and pulls the output gradients back with **one** ``tn.vjp`` with
respect to the inputs (with ``PFeedbackOutput``) and the updated parameters (with
``PUpdate``); each parameter's gradient goes to its ParamSourceLayer for ``grad_collect``.
Where MetaNN's gradient is not the plain derivative (no gradient to the NLL truth,
``PDisableBptt``'s truncation), the layer's forward says so with ``ops.stop_gradient``.

Partial derivatives: a layer's backward gives each input port the derivative through this
forward only, as MetaNN's hand-written backwards did, and only this forward's parameter
gradient. ``tn.vjp`` gives total derivatives. The two agree when the float inputs are distinct
principal tensors (leaves) and no parameter is also an input: the case of a model fed its
batch, where nothing is cut. Otherwise an input may reach a parameter or another input
upstream (a weight shared with an earlier layer), so the forward runs on *cut* copies of its
float inputs and of its updated parameters (``x * 1``, which the evaluator folds away, and
through which ``tn.grad`` of the outputs still reaches the originals), and the vjp is taken
with respect to those copies, which no upstream node reaches.

Sublayers (a composite's, a recurrent layer's kernel) run within their parent's recorded
forward: the parent's one vjp covers them, so they record nothing (their own stacks, if any,
are popped by the parent's backward). (When the gradients match the outputs, the
record's arguments need none of ``tn.vjp``'s checks, and its reverse pass ``backpropagate``
runs directly: 15-20 us less per backward.)
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple, Protocol

from ..autodiff import vjp
from ..autodiff.reverse import _Lowering, _propagate, _total, backpropagate
from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..ops.arithmetic import mul
from ..ops.dynamic import DynamicData
from ..ops.node import Operation
from ..ops.special import ZeroTensor, zeros_like
from ..tags import FloatTag
from .stacks import LayerStack
from .var_type_dict import VarValues

Values = VarValues[Any, Any]


class Layer(Protocol):
    """What deriving a backward needs of a layer: ``layers/protocol.py``'s ``Layer``, which
    calls this module (so this module names it structurally rather than importing it)."""

    is_feedback_output: ClassVar[bool]
    no_grad_ports: ClassVar[tuple[type, ...]]

    def forward(self, inputs: dict[type, Any]) -> dict[type, Any]: ...
    def param_sources(self) -> list[Any]: ...
    def drop_stacks(self) -> None: ...
    def checked_grad(self, port: type, grad: Any, output: Any) -> Any: ...
    def input_cont(self) -> VarValues[Any, Any]: ...


__all__ = ["ForwardRecord", "backward", "param_value", "recorded_forward"]


class ForwardRecord(NamedTuple):
    """What one recorded forward keeps for its backward."""

    inputs: tuple[tuple[type, AnyTensor], ...]
    """(port, data) to differentiate by: the float tensor inputs, with PFeedbackOutput."""
    params: tuple[tuple[Any, AnyTensor], ...]
    """(ParamSourceLayer, its tensor) of every updated parameter the forward read."""
    outputs: Mapping[type, object]
    """Output port -> the forward's output."""


class _State(threading.local):
    """Per thread (threading.local runs ``__init__`` in each thread that reads it)."""

    def __init__(self) -> None:
        self.depth = 0
        """How many recorded forwards are running."""
        self.param_cuts: Mapping[int, AnyTensor] = {}
        """id(ParamSourceLayer) -> the copy of its parameter the running forward reads."""


_STATE = _State()


def param_value(source: object, data: AnyTensor) -> AnyTensor:
    """What a parameter layer's forward outputs: its tensor ``data``, or the copy of it that
    the running recorded forward differentiates by."""
    return _STATE.param_cuts.get(id(source), data)


def recorded_forward(layer: Layer, picked: dict[type, Any], record: LayerStack) -> Any:
    """Run ``layer``'s forward on its checked inputs and push onto ``record`` what its
    backward needs; within a parent's recorded forward, nothing (the parent's vjp covers it)."""
    state = _STATE
    if state.depth:
        return layer.forward(picked)
    inputs, wrt, params = _prepare(layer, picked)
    cuts = {id(source): data for source, data in params if data is not source.data}
    state.depth = 1
    if cuts:
        state.param_cuts = cuts
    try:
        outputs = layer.forward(inputs)
    finally:
        state.depth = 0
        if cuts:
            state.param_cuts = {}
    record.push(ForwardRecord(wrt, params, outputs))
    return outputs


def _is_float(x: object) -> bool:
    return isinstance(x, TensorLike) and issubclass(x.elem, FloatTag)


def _leaf(x: AnyTensor) -> AnyTensor:
    while isinstance(x, DynamicData) and not x.is_empty():
        x = x.lower()
    return x


def _prepare(
    layer: Layer, picked: dict[type, Any]
) -> tuple[dict[type, Any], tuple[tuple[type, AnyTensor], ...], tuple[tuple[Any, AnyTensor], ...]]:
    """The inputs to run the forward on, the (port, input) pairs to differentiate by and the
    (ParamSourceLayer, tensor) pairs of the updated parameters: cut copies where an input
    is not a distinct leaf (see the module's text)."""
    cls = type(layer)
    floats: list[tuple[type, AnyTensor]] = []
    seen: set[int] = set()
    independent = True
    for port, v in picked.items():
        plain = type(v) is Tensor  # the common case, without the ABC check of _is_float
        if (plain and issubclass(v.elem, FloatTag)) or (not plain and _is_float(v)):
            leaf = v if plain else _leaf(v)
            independent = independent and isinstance(leaf, Tensor) and id(leaf) not in seen
            seen.add(id(leaf))
            floats.append((port, v))
    params: list[tuple[Any, AnyTensor]] = []
    for source in layer.param_sources():
        data = getattr(source, "data", None)
        if data is not None and type(source).is_update:  # None: the forward raises
            independent = independent and id(data) not in seen
            params.append((source, data))
    skip = cls.no_grad_ports
    inputs = picked
    if not independent:
        inputs = dict(picked)
        for port, v in floats:
            if port not in skip:
                inputs[port] = mul(v, 1)
        params = [(source, mul(data, 1)) for source, data in params]
    wrt: list[tuple[type, AnyTensor]] = []
    if cls.is_feedback_output:
        for port, _ in floats:
            if port not in skip:
                wrt.append((port, inputs[port]))
    return inputs, tuple(wrt), tuple(params)


def backward(layer: Layer, record: ForwardRecord, grads: Values) -> Values:
    """The backward of a recorded forward: pop the rest of what it stored, then one vjp."""
    layer.drop_stacks()
    ys: list[Any] = []  # float data, or tn.vjp says what is not
    cotangents: list[object] = []
    for port, out in record.outputs.items():
        if grads.is_set(port):
            ys.append(out)
            cotangents.append(layer.checked_grad(port, grads.get(port), out))
    result: Values = layer.input_cont()
    wrt = [x for _, x in record.inputs] + [data for _, data in record.params]
    if not ys or not wrt:
        return result
    pulled = _pull(ys, cotangents, wrt)
    for (port, x), grad in zip(record.inputs, pulled, strict=False):
        result = result.set(port, zeros_like(x) if grad is None else grad)
    for (param, _), grad in zip(record.params, pulled[len(record.inputs) :], strict=True):
        if grad is not None and not isinstance(grad, ZeroTensor):  # no path: keep nothing
            param.keep_grad(grad)
    return result


def _pull(ys: list[Any], cotangents: list[object], wrt: list[AnyTensor]) -> list[Any]:
    """``tn.vjp(ys, wrt, cotangents)`` (None where no path reaches). The record's outputs and
    inputs are float data already: when every cotangent matches its output (what tn.vjp
    checks), run its reverse pass directly; otherwise tn.vjp raises its error."""
    seeds = [c for c in cotangents if isinstance(c, TensorLike)]
    if len(seeds) == len(ys) and all(
        _is_float(y) and c.shape == y.shape and c.elem is y.elem and c.device is y.device
        for y, c in zip(ys, seeds, strict=True)
    ):
        one = _one_node(ys[0], seeds[0], wrt) if len(ys) == 1 else None
        return one if one is not None else backpropagate(ys, seeds, wrt)
    public: Any = vjp  # checks every argument (the cotangents are not known to be data here)
    if len(ys) == 1:  # its messages then name "the cotangent", not "cotangent 1"
        return list(public(ys[0], wrt, cotangents[0]))
    return list(public(ys, wrt, cotangents))


def _one_node(y: Any, seed: AnyTensor, wrt: list[AnyTensor]) -> list[Any] | None:
    """``backpropagate``'s answer for a forward of one node whose operands are the ``wrt`` or
    principal tensors (an elementary layer's): that node's vjp, handed to its operands by the
    engine's own step, without its walk over the graph (most of a small backward's cost).
    None for any other graph."""
    if not isinstance(y, Operation):
        return None
    low = _Lowering()
    targets = [low(w) for w in wrt]
    leads = {id(t) for t in targets}
    for operand in y.operands:
        x = operand if isinstance(operand, int | float) else low(operand)
        if not (id(x) in leads or isinstance(x, int | float) or type(x) is Tensor):
            return None  # a node that is not differentiated by: it may lead to a wrt
    if id(y) in leads:
        return None
    pending: dict[int, list[AnyTensor]] = {}
    _propagate(y, seed, leads, pending, low)
    return [_total(pending[id(t)]) if id(t) in pending else None for t in targets]

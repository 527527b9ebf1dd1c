"""Backward passes derived from ``tn.vjp`` of a layer's forward graph (DESIGN §7).

Which configured layer classes derive (``derives_backward``, set by ``configure``):

* a layer template that defines ``forward`` only;
* a composite (``ComposeKernel``) whose sublayers are all ``vjp_exact``;
* a ``RecurrentLayer`` with BPTT over a ``vjp_exact`` kernel.

``vjp_exact`` says that a layer's backward gives the vjp of its forward for every float tensor
input port and every parameter, so a parent may differentiate through it. The built-in
elementary layers keep their hand-written backwards (one gradient node each: faster than a
vjp call, ``benchmarks/layer_backward.py``) and are exact (``tests/test_layers_vjp.py``
checks each); NLLLossLayer is not (MetaNN gives the truth no gradient); a user layer with its
own backward is not unless it says so.

MetaNN's LIFO discipline is kept: a training layer that derives has one more stack,
``forward``. Each feed_forward pushes a :class:`ForwardRecord` (what to differentiate by and
the outputs) or :data:`BY_HAND` onto it; each feed_backward pops it. On a record, the backward
pops what the forward's own stacks and sublayers stored (what an empty-gradient backward would
pop), then pulls the output gradients back with **one** ``tn.vjp`` with respect to the inputs
(with ``PFeedbackOutput``) and the updated parameters (with ``PUpdate``); each parameter's
gradient goes to its ParamSourceLayer for ``grad_collect``, as a hand-written backward does.
(When the gradients match the outputs, the record's arguments need none of ``tn.vjp``'s
checks, and its reverse pass ``backpropagate`` runs directly: 15-20 us less per backward.)

When a forward is recorded for the vjp: ``tn.vjp`` gives *total* derivatives, and it walks
everything the outputs reach; a layer's backward gives each input port its *partial*
derivative, and only the parameter gradient of this forward. The two agree when the float
inputs are distinct principal tensors (leaves) and no parameter is also an input: the case of
a model's outermost layer fed its batch, which is also where one vjp over the whole forward
pays off (no walk into other layers' graphs). Otherwise a layer with a hand-written backward
(composites: MetaNN's walk over the sublayers; RecurrentLayer: its steps) records
:data:`BY_HAND`, and a forward-only layer runs its forward on *cut* copies of its inputs
(``x * 1``, which the evaluator folds away) and differentiates by those.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar, NamedTuple, Protocol

from ..autodiff import vjp
from ..autodiff.reverse import backpropagate
from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..ops.arithmetic import mul
from ..ops.dynamic import DynamicData
from ..ops.special import ZeroTensor, zeros_like
from ..tags import FloatTag
from .var_type_dict import VarValues

Values = VarValues[Any, Any]


class Layer(Protocol):
    """What deriving a backward needs of a layer: ``layers/protocol.py``'s ``Layer``, which
    calls this module (so this module names it structurally rather than importing it)."""

    has_hand_backward: ClassVar[bool]
    is_feedback_output: ClassVar[bool]
    no_grad_ports: ClassVar[tuple[type, ...]]

    def param_sources(self) -> list[Any]: ...
    def drop_stacks(self) -> None: ...
    def checked_grad(self, port: type, grad: Any, output: Any) -> Any: ...
    def input_cont(self) -> VarValues[Any, Any]: ...


__all__ = ["BY_HAND", "ForwardRecord", "Pending", "backward", "derive_backward", "prepare"]

BY_HAND = "by hand"
"""What a deriving layer pushes for a forward whose backward runs by hand."""


class ForwardRecord(NamedTuple):
    """What one recorded forward keeps for its backward."""

    inputs: tuple[tuple[type, AnyTensor], ...]
    """(port, data) to differentiate by: the float tensor inputs, with PFeedbackOutput."""
    params: tuple[tuple[Any, AnyTensor], ...]
    """(ParamSourceLayer, its tensor) of every updated parameter the forward read."""
    outputs: Mapping[type, object]
    """Output port -> the forward's output."""


class Pending(NamedTuple):
    """What ``prepare`` decided before the forward: the inputs to run it on and what the
    record will hold (None: push BY_HAND)."""

    inputs: dict[type, Any]
    record: ForwardRecord | None

    def finish(self, outputs: Mapping[type, object], by_hand: bool) -> object:
        """The value to push once the forward built ``outputs``: BY_HAND when nothing is
        recorded, or when an output is not float data and a hand backward exists."""
        if self.record is None:
            return BY_HAND
        if by_hand and not all(_is_float(v) for v in outputs.values()):
            return BY_HAND
        return self.record._replace(outputs=outputs)


BY_HAND_PENDING = Pending({}, None)
"""``prepare``'s answer when the backward runs by hand (the forward runs on its own inputs)."""

_STATE = threading.local()


@contextmanager
def derive_backward(enabled: bool) -> Generator[None, None, None]:
    """Within the block, forwards of layers that have a hand-written backward (composites,
    RecurrentLayer) record for it (``enabled=False``) or, where their inputs allow, for the
    vjp (``True``, the default). The backward follows what its forward recorded. For
    comparisons and benchmarks; layers that define a forward only always derive."""
    previous = getattr(_STATE, "enabled", True)
    _STATE.enabled = enabled
    try:
        yield
    finally:
        _STATE.enabled = previous


def _is_float(x: object) -> bool:
    return isinstance(x, TensorLike) and issubclass(x.elem, FloatTag)


def _leaf(x: AnyTensor) -> AnyTensor:
    while isinstance(x, DynamicData) and not x.is_empty():
        x = x.lower()
    return x


def prepare(layer: Layer, picked: dict[type, Any]) -> Pending:
    """Decide, before a recording layer's forward, how its backward will run."""
    cls = type(layer)
    hand = cls.has_hand_backward
    if hand and not getattr(_STATE, "enabled", True):
        return BY_HAND_PENDING
    floats: list[tuple[type, AnyTensor]] = []
    seen: set[int] = set()
    independent = True
    for port, v in picked.items():
        if isinstance(v, TensorLike) and issubclass(v.elem, FloatTag):
            leaf = v if type(v) is Tensor else _leaf(v)
            if not isinstance(leaf, Tensor) or id(leaf) in seen:
                if hand:
                    return BY_HAND_PENDING
                independent = False
            seen.add(id(leaf))
            floats.append((port, v))
    params: list[tuple[Any, AnyTensor]] = []
    for source in layer.param_sources():
        data = getattr(source, "data", None)
        if data is None:
            return BY_HAND_PENDING  # the forward raises: no parameter yet
        if id(data) in seen:
            if hand:
                return BY_HAND_PENDING
            independent = False
        seen.add(id(data))
        params.append((source, data))
    inputs = picked
    if not independent:  # a forward-only layer: differentiate by cut copies of its inputs
        inputs = dict(picked)
        for port, v in floats:
            if port not in cls.no_grad_ports:
                inputs[port] = mul(v, 1)
    wrt = (
        tuple((port, inputs[port]) for port, _ in floats if port not in cls.no_grad_ports)
        if cls.is_feedback_output
        else ()
    )
    updated = tuple((p, data) for p, data in params if type(p).is_update)
    return Pending(inputs, ForwardRecord(wrt, updated, {}))


def backward(layer: Layer, record: ForwardRecord, grads: Values) -> Values:
    """The backward of a recorded forward: pop the rest of what it stored, then one vjp."""
    layer.drop_stacks()
    ys: list[Any] = []  # float data, but for a forward-only layer's (tn.vjp says so)
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
        return backpropagate(ys, seeds, wrt)
    public: Any = vjp  # checks every argument (the cotangents are not known to be data here)
    if len(ys) == 1:  # its messages then name "the cotangent", not "cotangent 1"
        return list(public(ys[0], wrt, cotangents[0]))
    return list(public(ys, wrt, cotangents))

"""``summary(model, example_input)``: a table of a model's sublayers, their output shapes and
parameter counts, with totals (torchinfo / keras style).

The forward runs once inside ``tn.inference()`` (nothing is kept on the layers' stacks) and
builds lazy expressions only: the shapes come from the graph, nothing is computed. Each
layer's outputs are seen through a per-thread observer of ``feed_forward``
(:mod:`typed_nn.inference_mode`), so the model is not modified and another thread's forwards
are not recorded.

>>> print(summary(net, x))  # doctest: +SKIP
Model: MLP_ReLULayer_linear 'mlp' (train)
Layer (kind)                      Output shape      Params
...
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data.module import (
    Module,
    named_buffers,
    named_parameters,
    named_persistent,
    named_submodules,
)
from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..errors import LayerError, OperandError, message
from ..evaluate.cache import overwrite
from ..inference_mode import inference
from ..inference_mode import state as inference_state
from ..shape import format_shape
from .protocol import Layer, Values
from .source_layers import ParamSourceLayer
from .var_type_dict import VarValues, key_name

__all__ = ["ModelSummary", "SummaryRow", "summary"]


@dataclass(frozen=True)
class SummaryRow:
    """One sublayer: its path in the model (``fc1/linear``), template name, depth (1 for the
    model's own sublayers), output shapes (of the last forward; ``(N calls)`` when it ran
    several times, e.g. a recurrent kernel), and the parameters it holds (its sublayers'
    included)."""

    path: str
    kind: str
    depth: int
    output: str
    params: int


@dataclass(frozen=True)
class ModelSummary:
    """What :func:`summary` found; ``str()`` is the table."""

    name: str
    kind: str
    mode: str
    rows: tuple[SummaryRow, ...]
    input: str
    output: str
    total_params: int
    trainable_params: int
    param_bytes: int

    def __str__(self) -> str:
        head = ("Layer (kind)", "Output shape", "Params")
        cells = [
            (
                "  " * (r.depth - 1) + f"{r.path.rsplit('/', 1)[-1]} ({r.kind})",
                r.output,
                f"{r.params:,}",
            )
            for r in self.rows
        ]
        widths = [max(len(row[i]) for row in [head, *cells]) for i in range(3)]
        line = "=" * (sum(widths) + 4)

        def fmt(row: tuple[str, str, str]) -> str:
            return f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}"

        return "\n".join(
            [
                f"Model: {self.kind} {self.name!r} ({self.mode})",
                fmt(head),
                line,
                *(fmt(c) for c in cells),
                line,
                f"Input: {self.input}",
                f"Output: {self.output}",
                f"Total params: {self.total_params:,} ({_size(self.param_bytes)})",
                f"Trainable params: {self.trainable_params:,}",
                f"Non-trainable params: {self.total_params - self.trainable_params:,}",
            ]
        )


def summary(
    model: Module | Layer[Any, Any], example_input: object, *, depth: int = 1
) -> ModelSummary:
    """Submodules (of an ``nn.Module``) or sublayers of ``model`` down to ``depth`` levels,
    with the output shapes one forward of
    ``example_input`` gives (a tensor for a one-input model, else a mapping port → value or
    the model's ``input_cont()`` filled) and parameter counts.

    The forward runs in ``tn.inference()``: it keeps nothing for a backward and computes
    nothing (shapes come from the lazy graph). The model's parameters must exist (after
    ``layer_init``) as for any forward.
    """
    if isinstance(model, Module):
        return _module_summary(model, example_input, depth)
    if not isinstance(model, Layer):
        raise OperandError(
            message(
                "summary needs an nn.Module or a layer instance.",
                [("received", type(model).__name__)],
                hint="pass the model itself, e.g. summary(net, x) for net = MLP.build(...).",
            )
        )
    _check_depth(depth)
    inputs = _input_container(model, example_input)
    return _layer_summary(model, inputs, depth)


def _check_depth(depth: object) -> None:
    if type(depth) is not int or depth < 1:
        raise LayerError(
            message(
                "summary: depth must be an int of at least 1.",
                [("received", repr(depth))],
                hint="depth=1 lists the model's own sublayers, depth=2 theirs too.",
            )
        )


def _layer_summary(model: Layer[Any, Any], inputs: Values, depth: int) -> ModelSummary:
    seen: dict[int, tuple[Values, int]] = {}

    def observe(layer: object, outputs: Values) -> None:
        calls = seen.get(id(layer), (outputs, 0))[1]
        seen[id(layer)] = (outputs, calls + 1)

    previous, inference_state.observer = inference_state.observer, observe
    try:
        with inference():
            result = model._feed_forward(inputs)  # what every typed feed_forward runs
    finally:
        inference_state.observer = previous
    rows = []
    for path, layer, level in _walk(model, "", 1, depth):
        outputs, calls = seen.get(id(layer), (None, 0))
        shown = _outputs(layer, outputs) if outputs is not None else "-"
        if calls > 1:
            shown += f" ({calls} calls)"
        rows.append(SummaryRow(path, _kind(layer), level, shown, _count(_params(layer))))
    params = _params(model)
    trainable = [p for p in params if type(p).is_update]
    return ModelSummary(
        name=model.name,
        kind=_kind(model),
        mode="train" if type(model).input_map is not None else "inference",
        rows=tuple(rows),
        input=_outputs_of(model.input_ports, inputs),
        output=_outputs_of(model.output_ports, result),
        total_params=_count(params),
        trainable_params=_count(trainable),
        param_bytes=sum(math.prod(p.shape) * type(p).elem.dtype.itemsize for p in params),
    )


def _input_container(model: Layer[Any, Any], example: object) -> Values:
    if isinstance(example, VarValues):
        return example
    cont: Values = model.input_cont()
    if isinstance(example, Mapping):
        for port, value in example.items():
            cont = cont.set(port, value)
        return cont
    if len(model.input_ports) != 1:
        raise LayerError(
            message(
                f"summary: layer '{model.name}' has {len(model.input_ports)} input ports; "
                "one example value cannot fill them.",
                [("ports", ", ".join(key_name(p) for p in model.input_ports) or "(none)")],
                hint="pass a mapping {port: value} (or model.input_cont().set(...)).",
            )
        )
    return cont.set(model.input_ports[0], example)


def _children(layer: object) -> Iterator[tuple[str, Layer[Any, Any]]]:
    """A composite's sublayers in topology order; a recurrent layer's kernel."""
    subs = getattr(layer, "sublayers", None)
    if isinstance(subs, dict):
        yield from ((n, s) for n, s in subs.items() if isinstance(s, Layer))
    kernel = getattr(layer, "kernel", None)
    if isinstance(kernel, Layer):
        yield "kernel", kernel


def _walk(
    layer: Layer[Any, Any], prefix: str, level: int, depth: int
) -> Iterator[tuple[str, Layer[Any, Any], int]]:
    if level > depth:
        return
    for name, child in _children(layer):
        path = f"{prefix}{name}"
        yield path, child, level
        yield from _walk(child, path + "/", level + 1, depth)


def _kind(layer: Layer[Any, Any]) -> str:
    cls = type(layer)
    return getattr(cls, "template", cls).__name__


def _params(layer: Layer[Any, Any]) -> list[ParamSourceLayer]:
    """The principal parameters the layer reads, once each (shared weights count once)."""
    found = [layer] if isinstance(layer, ParamSourceLayer) else layer.param_sources()
    unique: dict[str, ParamSourceLayer] = {}
    for p in found:
        if isinstance(p, ParamSourceLayer) and type(p).principal:
            unique.setdefault(p.param_name, p)
    return list(unique.values())


def _count(params: list[ParamSourceLayer]) -> int:
    return sum(math.prod(p.shape) for p in params)


def _shown(value: object) -> str:
    return format_shape(value.shape) if isinstance(value, TensorLike) else type(value).__name__


def _outputs_of(ports: tuple[type, ...], values: Values) -> str:
    set_ports = [p for p in ports if values.is_set(p)]
    if len(set_ports) == 1:
        return f"{key_name(set_ports[0])} {_shown(values.get(set_ports[0]))}"
    return ", ".join(f"{key_name(p)} {_shown(values.get(p))}" for p in set_ports) or "-"


def _outputs(layer: Layer[Any, Any], values: Values) -> str:
    set_ports = [p for p in layer.output_ports if values.is_set(p)]
    if len(set_ports) == 1:
        return _shown(values.get(set_ports[0]))
    return _outputs_of(layer.output_ports, values)


def _size(nbytes: int) -> str:
    if nbytes < 1024:
        return f"{nbytes:,} B"
    if nbytes < 1024**2:
        return f"{nbytes / 1024:.1f} KiB"
    return f"{nbytes / 1024**2:.1f} MiB"


def _module_summary(model: Module, example: object, depth: int) -> ModelSummary:
    """An ``nn.Module``'s summary: its submodules down to ``depth``, each output shape seen in
    one forward of ``example`` (under ``tn.inference()``; a tensor, or a tuple of the
    arguments), and the parameters under each path (buffers count as non-trainable)."""
    _check_depth(depth)
    args = example if isinstance(example, tuple) else (example,)
    rows_of = list(named_submodules(model, depth))
    seen: dict[int, tuple[object, int]] = {}
    # the forward changes no state: batch statistics and generator counters put back after
    kept = [(t, t.array.copy()) for _, t in named_buffers(model) if isinstance(t, Tensor)]
    try:
        with _observing({type(m) for _, m, _ in rows_of}, seen), inference():
            result = _call(model, args)
    finally:
        for t, before in kept:
            overwrite(t, before)
    rows = []
    for path, sub, level in rows_of:
        out, calls = seen.get(id(sub), (None, 0))
        shown = _shapes(out) + (f" ({calls} calls)" if calls > 1 else "")
        rows.append(SummaryRow(path, type(sub).__name__, level, shown, _tree_count(sub)))
    params, total = named_parameters(model), named_persistent(model)
    return ModelSummary(
        name=type(model).__name__,
        kind="nn.Module",
        mode="train" if model.training else "eval",
        rows=tuple(rows),
        input=", ".join(_shapes(a) for a in args),
        output=_shapes(result),
        total_params=_count_once(total),
        trainable_params=_count_once(params),
        param_bytes=sum(math.prod(t.shape) * np.dtype(t.elem.dtype).itemsize for t in _once(total)),
    )


@contextmanager
def _observing(
    classes: set[type], seen: dict[int, tuple[object, int]]
) -> Generator[None, None, None]:
    """Each module's outputs while ``summary`` runs its forward: the classes' ``__call__``
    (or the base class's that defines it) wrapped for the duration (Python looks special
    methods up on the class)."""
    owners = {next((c for c in cls.__mro__ if "__call__" in c.__dict__), cls) for cls in classes}
    saved = {cls: cls.__dict__["__call__"] for cls in owners if "__call__" in cls.__dict__}

    def wrap(call: Any) -> Any:
        def observed(self: Any, *a: Any, **k: Any) -> Any:
            out = call(self, *a, **k)
            seen[id(self)] = (out, seen.get(id(self), (None, 0))[1] + 1)
            return out

        return observed

    for cls, call in saved.items():
        setattr(cls, "__call__", wrap(call))  # noqa: B010
    try:
        yield
    finally:
        for cls, call in saved.items():
            setattr(cls, "__call__", call)  # noqa: B010


def _shapes(value: object) -> str:
    if isinstance(value, TensorLike):
        return format_shape(value.shape)
    if isinstance(value, tuple | list):
        return "(" + ", ".join(_shapes(v) for v in value) + ")"
    return "-"


def _tree_count(m: Module) -> int:
    return _count_once(named_persistent(m))


def _once(named: list[tuple[str, AnyTensor]]) -> list[AnyTensor]:
    """Each tensor once: a tied weight, a shared submodule's, is listed under every path."""
    return list({id(t): t for _, t in named}.values())


def _count_once(named: list[tuple[str, AnyTensor]]) -> int:
    """Values in ``named``, a tensor at several paths counted once (as PyTorch's
    ``sum(p.numel() for p in model.parameters())``)."""
    return sum(math.prod(t.shape) for t in _once(named))


def _call(model: Module, args: tuple[object, ...]) -> object:
    call = getattr(model, "__call__", None)  # noqa: B004 - a Module subclass defines it
    if not callable(call):
        raise OperandError(
            message(
                f"summary: {type(model).__name__} has no __call__ (its forward).",
                [("module", type(model).__name__)],
                hint="define def __call__(self, x) on the module.",
            )
        )
    return call(*args)

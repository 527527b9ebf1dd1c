"""``export(fn, example_args, path)``: trace ``fn`` as ``tn.compile`` does, write ONNX.

The trace is ``tn.compile``'s (``typed_nn.evaluate.trace``): tensor arguments become
placeholders, float arguments run-time numbers, other arguments and those named in
``static`` are fixed by the example. The graph it builds is written node by node with the
rules of :data:`typed_nn.onnx.rules.RULES`:

* each tensor argument is a graph input named after its parameter (a row ``x[i]`` of one is
  a Gather from it); a float argument the function uses is a scalar input (a tuple of
  floats ``p``: ``p_0``, ``p_1``...), of the element type of the first op that reads it;
* each tensor the function closes over (weights, running statistics) is an initializer,
  named after its key in ``params`` where given, else after the global or closure variable
  that held it, else ``tensor``; Python numbers in expressions are constants;
* the function's results, flattened in order, are the outputs.

Shapes are static, batch dimension included: as a compiled Step is traced per signature,
the model is exported for the example's shapes (export again for another batch size).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVarTuple

import numpy as np

from .. import devices
from ..data.module import Module, named_buffers, named_parameters
from ..data.tensor import Tensor, TensorLike
from ..errors import ExportError, OperandError, bad_argument, message, missing_dependency
from ..evaluate.step import _names_read
from ..evaluate.trace import Number, floats, is_float, qualname, trace_function
from ..model.atomic_write import write_atomic
from ..ops.node import AnyOp, Operation, format_site, user_site
from ..tags import Float32, accumulation_dtype

if TYPE_CHECKING:
    from .graph import GraphBuilder

__all__ = ["DEFAULT_OPSET", "MIN_OPSET", "NamedTensors", "export"]

MIN_OPSET = 17
DEFAULT_OPSET = 17


class NamedTensors(Protocol):
    """Parameters by name: a ``LoadBuffer``, or any mapping of names to tensors."""

    def items(self) -> Iterable[tuple[str, Tensor[Any, Any, Any]]]: ...


# The example arguments' types are fn's parameter types (a Float64 example for a Float32
# function is a static error): a tuple, as a ParamSpec's args cannot be typed outside *args.
Ts = TypeVarTuple("Ts")


def export(
    fn: Callable[[*Ts], object],
    example_args: tuple[*Ts],
    path: str | os.PathLike[str],
    *,
    opset: int = DEFAULT_OPSET,
    static: Sequence[str] = (),
    params: NamedTensors | None = None,
    output_names: Sequence[str] | None = None,
) -> None:
    """Trace ``fn(*example_args)`` and write it to ``path`` as an ONNX model.

    Args:
        fn: a function of typed_nn data, as ``tn.compile`` takes (no ``assign``: an ONNX
            graph has no state), or an ``nn.Module`` (its forward; its weights named as in
            its state dict: ``fc1.weight``).
        example_args: its arguments; their shapes are the model's (batch included).
        opset: the ONNX opset version, from 17 to the installed onnx's newest.
        static: parameter names whose value is fixed in the graph (as in ``tn.compile``).
        params: names for the weights ``fn`` reads (``LoadBuffer`` or a mapping).
        output_names: one per returned tensor (default ``output``, or ``output_0``...).

    The file is written atomically, after ``onnx.checker`` accepted the model. Needs the
    ``onnx`` package (``pip install 'typed_nn[onnx]'``).
    """
    _check_call(fn, example_args, path, static, params, output_names)
    given: object = fn  # a Module subclass is callable: its forward
    if params is None and isinstance(given, Module):  # its weights by their state-dict names
        leaves = named_parameters(given) + named_buffers(given)
        params = {name: t for name, t in leaves if isinstance(t, Tensor)}
    onnx = _require_onnx()
    from .graph import GraphBuilder

    _check_opset(fn, opset, onnx.defs.onnx_opset_version())
    names, values = _bind(fn, example_args)
    static_names = frozenset(static)
    _check_arguments(fn, names, values, static_names)
    outputs, assigns, _, placeholders = trace_function(fn, names, static_names, values)
    _check_traced(fn, outputs, assigns)
    g = GraphBuilder(opset)
    for name in names:
        g.reserve(name)
    writer = _Writer(fn, g, names, values, static_names, placeholders, params)
    outs = _output_names(fn, output_names, len(outputs), g)
    model = _model(fn, writer, outputs, outs, opset)
    onnx.checker.check_model(model, full_check=True)
    write_atomic(Path(path), [model.SerializeToString()])


def _check_call(
    fn: object,
    example_args: object,
    path: object,
    static: object,
    params: object,
    output_names: object,
) -> None:
    """export's arguments, each of the kind it takes (callers may pass anything)."""
    checks = [
        ("fn", fn, callable(fn), "a function of typed_nn data"),
        ("example_args", example_args, _sequence(example_args), "a tuple of fn's arguments"),
        ("path", path, isinstance(path, str | os.PathLike), "a file path (str or PathLike)"),
        ("static", static, _names(static), "a sequence of parameter names"),
        ("params", params, params is None or callable(getattr(params, "items", None)),
         "a mapping name -> tensor (a LoadBuffer), or None"),
        ("output_names", output_names, output_names is None or _names(output_names),
         "a sequence of names, or None"),
    ]  # fmt: skip
    for name, value, fits, allowed in checks:
        if not fits:
            hint = "call export(fn, (x,), 'model.onnx'), as docs/interop.md shows."
            raise bad_argument(OperandError, "cannot export", name, allowed, value, hint)


def _sequence(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


def _names(value: object) -> bool:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return False
    return all(isinstance(v, str) for v in value)


def _check_opset(fn: Callable[..., Any], opset: object, newest: int) -> None:
    if type(opset) is not int or not MIN_OPSET <= opset <= newest:  # not a bool either
        raise ExportError(
            message(
                f"cannot export {qualname(fn)}: opset {opset!r} is out of range.",
                [("accepted", f"{MIN_OPSET} to {newest} (the installed onnx's newest)")],
                hint=f"pass opset={DEFAULT_OPSET}.",
            )
        )


def _check_arguments(
    fn: Callable[..., Any], names: list[str], values: list[Any], static: frozenset[str]
) -> None:
    """``static`` names parameters; every other tensor argument is a principal tensor."""
    unknown = static - set(names)
    if unknown:
        raise ExportError(
            message(
                f"cannot export {qualname(fn)}: static names no parameter.",
                [("static", ", ".join(sorted(unknown))), ("parameters", ", ".join(names))],
                hint="name parameters of the function in static=(...).",
            )
        )
    for name, value in zip(names, values, strict=True):
        if name not in static and isinstance(value, TensorLike) and type(value) is not Tensor:
            raise OperandError(
                message(
                    f"cannot export {qualname(fn)}: argument {name!r} is a lazy expression.",
                    [(name, value.describe()), ("accepted", "a principal tensor")],
                    built_at=format_site(user_site()),
                    hint="evaluate it first (tn.evaluate(x)): arguments are the model's inputs.",
                )
            )


def _check_traced(
    fn: Callable[..., Any], outputs: list[Any], assigns: list[tuple[Tensor[Any, Any, Any], Any]]
) -> None:
    """The traced function returns tensors and assigns none (an ONNX graph has no state)."""
    if assigns:
        target, _ = assigns[0]
        given: object = fn
        training = isinstance(given, Module) and given.training
        hint = (
            "call model.eval() first: in training mode a module updates state as it runs "
            "(batch-norm statistics, a dropout's generator), and an ONNX graph has none."
            if training
            else "an ONNX graph has no state: export the forward function (return the new "
            "value instead of assigning it)."
        )
        raise ExportError(
            message(
                f"cannot export {qualname(fn)}: it assigns a tensor.",
                [("assigned", target.describe()), ("assigns", str(len(assigns)))],
                hint=hint,
            )
        )
    if not outputs:
        raise ExportError(
            message(
                f"cannot export {qualname(fn)}: it returns no tensor.",
                hint="return the tensors the model should output.",
            )
        )


def _model(
    fn: Callable[..., Any], writer: _Writer, outputs: list[Any], outs: list[str], opset: int
) -> Any:
    """The ONNX model of the traced ``outputs``, named ``outs``: the writer's nodes, inputs
    and initializers, each output renamed from its producer where it can be."""
    from onnx import helper

    g = writer.g
    results = [writer.value(out) for out in outputs]
    order = {name: i for i, name in enumerate(writer.input_order)}
    inputs = sorted(writer.inputs, key=lambda info: order[info.name])
    graph_outputs = []
    for out, value, result in zip(outputs, outs, results, strict=True):
        g.nodes.append(helper.make_node("Identity", [result], [value], name=value))
        graph_outputs.append(_value_info(value, out.elem.dtype, out.shape))
    graph = helper.make_graph(
        _without_identities(g.nodes, set(outs)),
        qualname(fn),
        inputs,
        graph_outputs,
        initializer=g.initializers,
    )
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name="typed_nn",
        ir_version=helper.find_min_ir_version_for(opsets),  # readable by older runtimes
    )


class _Writer:
    """Writes the traced graph's values into a GraphBuilder, each once, operands first."""

    def __init__(
        self,
        fn: Callable[..., Any],
        g: GraphBuilder,
        names: list[str],
        values: list[Any],
        static: frozenset[str],
        placeholders: dict[int, Any],
        params: NamedTensors | None,
    ) -> None:
        self.fn = fn
        self.g = g
        self.inputs: list[Any] = []
        self._names: dict[int, str] = {}  # id of a written tensor or node -> its value name
        self._keep: list[Any] = []  # lowered objects, alive while their ids are keys
        self._lowered: dict[int, Any] = {}
        for k, placeholder in sorted(placeholders.items()):
            self._names[id(placeholder)] = names[k]
            self.inputs.append(_value_info(names[k], placeholder.elem.dtype, placeholder.shape))
        self.input_order, self._number_names = _input_names(names, values, static)
        for name in self.input_order:
            g.reserve(name)
        self._numbers: dict[tuple[int, str], str] = {}  # (index, dtype) -> value name
        self._weight_names = {id(t): name for name, t in (params.items() if params else ())}

    def value(self, root: Any) -> str:
        """The value name of ``root``, writing it and everything it reads (iteratively: a
        long recurrence is a deep graph)."""
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            obj, ready = stack.pop()
            obj = self._lower(obj)
            if id(obj) in self._names:
                continue
            if type(obj) is not Operation and isinstance(obj, Tensor):
                self._names[id(obj)] = self._leaf(obj)
            elif not ready:
                stack.append((obj, True))
                stack.extend((x, False) for x in obj.operands if isinstance(x, TensorLike))
            else:
                self._names[id(obj)] = self._node(obj)
        return self._names[id(self._lower(root))]

    def _lower(self, x: Any) -> Any:
        """Tensors and nodes as they are; other data kinds through their ``lower()``."""
        if isinstance(x, Tensor | Operation):
            return x
        lowered = self._lowered.get(id(x))
        if lowered is None:
            self._keep.append(x)
            lowered = x
            while not isinstance(lowered, Tensor | Operation):
                lowered = lowered.lower()
            self._lowered[id(x)] = lowered
        return lowered

    def _node(self, node: AnyOp) -> str:
        from .rules import rule_for

        rule = rule_for(node.op)
        if rule is None:
            raise ExportError(
                message(
                    f"cannot export {qualname(self.fn)}: op '{node.op.name}' has no ONNX "
                    "counterpart.",
                    [("node", node.describe())],
                    built_at=node.built_at,
                    hint="export the forward computation only (backward ops come from tn.grad "
                    "or a layer's feed_backward); compute this part outside the function.",
                )
            )
        dtype = np.dtype(node.elem.dtype)
        wide = accumulation_dtype(dtype)
        if node.op.accumulates and wide != dtype:  # as the evaluator computes it (widen.py)
            xs = [self._operand(x, wide) for x in node.operands]
            as_float32: AnyOp = Operation(
                node.op, node.operands, node.params, node.shape, Float32, node.device, node._site
            )
            return self.g.cast(rule(self.g, as_float32, xs), dtype)
        return rule(self.g, node, [self._operand(x, dtype) for x in node.operands])

    def _operand(self, x: Any, dtype: np.dtype[Any]) -> str:
        if isinstance(x, TensorLike):
            name = self._names[id(self._lower(x))]
            mine = np.dtype(x.elem.dtype)
            return (
                name
                if mine == dtype or accumulation_dtype(mine) == mine
                else self.g.cast(name, dtype)
            )
        if type(x) is Number:  # a float argument: a graph input
            return self._number(x, dtype)
        return self.g.constant(x, dtype)  # a Python number in the expression

    def _number(self, x: Number, dtype: np.dtype[Any]) -> str:
        name = self._numbers.get((x.index, dtype.str))
        if name is not None:
            return name
        first = [v for (index, _), v in self._numbers.items() if index == x.index]
        if first:  # the input has another element type: a cast of it
            name = self.g.cast(first[0], dtype)
        else:
            name = self._number_names[x.index]
            self.inputs.append(_value_info(name, dtype, ()))
        self._numbers[(x.index, dtype.str)] = name
        return name

    def _leaf(self, t: Tensor[Any, Any, Any]) -> str:
        """A tensor the graph reads: a row of an input (Gathers), or an initializer."""
        rows: list[int] = []
        root: Tensor[Any, Any, Any] = t
        while root._view_of is not None and id(root) not in self._names:
            root, i = root._view_of
            rows.append(i)
        if id(root) in self._names:  # a row x[i][j]... of an input
            name = self._names[id(root)]
            for i in reversed(rows):
                name = self.g.add("Gather", [name, self.g.constant(i, np.dtype(np.int64))], axis=0)
            return name
        return self.g.initializer(self._weight_name(t), devices.to_host(t._array))

    def _weight_name(self, t: Tensor[Any, Any, Any]) -> str:
        name = self._weight_names.get(id(t))
        if name is not None:
            return name
        for _, variable, obj in _names_read(self.fn, {id(t)}):
            if obj is t:
                return variable
        return "tensor"


def _require_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise missing_dependency("typed_nn.onnx.export", "onnx", "onnx") from None
    return onnx


def _bind(fn: Callable[..., Any], example_args: Sequence[Any]) -> tuple[list[str], list[Any]]:
    """Parameter names, and the example's value of each (defaults applied)."""
    signature = inspect.signature(fn)
    try:
        bound = signature.bind(*example_args)
    except TypeError as err:
        raise OperandError(
            message(
                f"cannot export {qualname(fn)}: the example arguments do not fit its parameters.",
                [("parameters", str(signature)), ("example", f"{len(example_args)} argument(s)")],
                built_at=format_site(user_site()),
                hint=f"pass example_args as a tuple of fn's arguments ({err}).",
            )
        ) from None
    bound.apply_defaults()
    return list(bound.arguments), list(bound.arguments.values())


def _input_names(
    names: list[str], values: list[Any], static: frozenset[str]
) -> tuple[list[str], list[str]]:
    """The graph's possible inputs in parameter order, and the input name of each run-time
    number in the order ``trace_function`` numbers them (a float argument ``lr``: ``lr``; a
    tuple of floats ``p``: ``p_0``, ``p_1``...)."""
    inputs: list[str] = []
    numbers: list[str] = []
    for name, v in zip(names, values, strict=True):
        if name in static:
            continue
        if type(v) is Tensor:
            inputs.append(name)
        elif is_float(v):
            numbers.append(name)
            inputs.append(name)
        elif type(v) is tuple and floats(v):
            items = [f"{name}_{j}" for j in range(len(v))]
            numbers.extend(items)
            inputs.extend(items)
    return inputs, numbers


def _output_names(
    fn: Callable[..., Any], given: Sequence[str] | None, count: int, g: GraphBuilder
) -> list[str]:
    """The outputs' names: ``given``, or ``output`` / ``output_0``, ``output_1``... (each
    made unique against the inputs)."""
    if given is None:
        return [g.fresh("output" if count == 1 else f"output_{i}") for i in range(count)]
    names = list(given)
    taken = [name for name in names if not g.is_free(name)]
    if len(names) != count or len(set(names)) != count or taken:
        raise ExportError(
            message(
                f"cannot export {qualname(fn)}: output_names does not name each output once.",
                [("outputs", str(count)), ("output_names", ", ".join(map(repr, names)))]
                + ([("names of inputs", ", ".join(map(repr, taken)))] if taken else []),
                hint=f"give {count} distinct name(s), one per returned tensor, in order, "
                "other than the inputs' names.",
            )
        )
    for name in names:
        g.reserve(name)
    return names


def _value_info(name: str, dtype: np.dtype[Any], shape: tuple[int, ...]) -> Any:
    from onnx import helper

    from .graph import tensor_type

    return helper.make_tensor_value_info(name, tensor_type(dtype), list(shape))


def _without_identities(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """The nodes, with each output's producer renamed to the output in place of the Identity
    the writer added, where the producer's value is read by nothing else (an input, a weight
    or a value read twice keeps its Identity)."""
    reads: dict[str, int] = {}
    for node in nodes:
        for name in node.input:
            reads[name] = reads.get(name, 0) + 1
    producer = {name: node for node in nodes for name in node.output}
    kept = []
    for node in nodes:
        if node.op_type == "Identity" and node.output[0] in outputs:
            source = producer.get(node.input[0])
            if source is not None and reads[node.input[0]] == 1:
                source.output[0] = source.name = node.output[0]
                continue
        kept.append(node)
    return kept

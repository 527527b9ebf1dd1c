"""``RecurrentLayer``: a step kernel unrolled over a sequence (MetaNN ``recurrent/recurrent_layer.h``).

Policies:

* ``PActFuncIs(GruStep)`` chooses the kernel (required). The layer's ports are the kernel's:
  every output ``O`` needs an input ``Previous(O)`` (the state before the first step).
* ``PSeqIDsAre(SeqID(port, dim), ...)`` (required) names the sequence inputs and the dim of
  each that indexes time; other inputs (not ``Previous``) are passed unchanged to every step.
* ``PEnableBptt`` (default) / ``PDisableBptt``: backpropagate through time, or stop each
  step's gradient at that step (the forward reads the state of the steps after the first
  through ``ops.stop_gradient``, so the backward stays the forward's vjp).
* The kernel takes ``SubPolicyContainer("kernel", ...)`` and inherits the rest (MetaNN
  ``SubPolicyPicker``), except ``PActFuncIs``, which names the kernel itself. It is forced to
  ``PFeedbackOutput`` when the layer feeds back or when it updates with BPTT.

Forward: each sequence input is permuted so that time comes first (MetaNN's ``IDSwap``), the
kernel runs once per step (``Previous(O)`` is the initial state, then the previous step's
``O``), and each output stacks the steps: (T, ...). Backward is one ``tn.vjp`` of the unrolled
forward (``derived.py``): sequence inputs get their gradients stacked and permuted back, other
inputs the sum over time, ``Previous(O)`` the gradient that reaches the first step, and the
kernel's parameters their gradient summed over time. Steps read a principal sequence tensor through slice nodes, so
the forward graph reaches its inputs (``tn.grad`` through an unrolled forward works too).
The kernel is named ``name/kernel``, so a GRU's parameters are ``name/kernel/W/param``, ...
"""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn, overload

from .. import ops
from ..data.tensor import AnyTensor, TensorLike
from ..errors import LayerError, ShapeError, message
from ..ops.node import format_site, user_site
from ..ops.rows import slice as slice_op
from ..policies import (
    GradPolicy,
    LayerStructurePolicy,
    PFeedbackOutput,
    PolicyContainer,
    RnnPolicy,
    change_policy,
    has_policy,
    policy_select,
    sub_policies,
)
from ..tags import D, Dim1, Dim2, Dim3, Dim4, Dv, E
from .compose import LayerInstance, as_instance, layer_output_types
from .declared import Decl
from .in_map import LayerInMap, port_type, tensor_type
from .interface import (
    layer_grad_collect,
    layer_init,
    layer_neutral_invariant,
    layer_save_weights,
)
from .keys import Previous, PreviousKey
from .model_protocols import GradCollectorLike, InitializerLike, LoadBufferLike, SaverLike
from .protocol import Layer, Values, make_infer_layer, make_train_layer
from .var_type_dict import VarValues, key_name

__all__ = ["RecurrentLayer", "time_first"]

AnyLayer = Layer[Any, Any]


def _error(headline: str, items: list[tuple[str, str]], hint: str) -> LayerError:
    return LayerError(message(headline, items, built_at=format_site(user_site()), hint=hint))


def time_first(rank: int, dim: int) -> tuple[int, ...]:
    """The permutation moving ``dim`` to the front (MetaNN ``IDSwap``):
    result dim ``i`` is ``dim`` for ``i == 0``, ``i - 1`` for ``i <= dim``, else ``i``."""
    return tuple(dim if i == 0 else (i - 1 if i <= dim else i) for i in range(rank))


def _is_previous(port: type) -> bool:
    return issubclass(port, PreviousKey)


class RecurrentLayer(Layer[object, object, Decl]):
    """A kernel layer unrolled over time. ``RecurrentLayer(name, *kernel_args)``, e.g.
    ``L("rnn", fan_in, fan_out)`` for a GruStep kernel."""

    ports_from_policies: ClassVar[bool] = True
    stacks: ClassVar[tuple[str, ...]] = ("steps",)
    kernel_class: ClassVar[type[AnyLayer]]
    seq_dims: ClassVar[dict[type, int]] = {}
    use_bptt: ClassVar[bool] = True
    _output_types: ClassVar[dict[type, object] | None] = None

    @classmethod
    def _kernel_template(cls, policies: PolicyContainer) -> type[AnyLayer]:
        kernel = policy_select(LayerStructurePolicy, policies).act_func
        if not has_policy(policies, LayerStructurePolicy, "act_func") or kernel is None:
            raise _error(
                f"cannot configure {cls.__name__}: no kernel.",
                [("policies", repr(policies))],
                "Use PActFuncIs(...) to set kernel sublayer, e.g. PActFuncIs(GruStep).",
            )
        return kernel

    @classmethod
    def ports_for(cls, policies: PolicyContainer) -> tuple[type, ...]:
        return tuple(getattr(cls._kernel_template(policies), "input_ports", ()))

    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        template = cls._kernel_template(policies)
        cls.input_ports = tuple(template.input_ports)
        cls.output_ports = tuple(template.output_ports)
        cls._check_ports(template)
        rnn = policy_select(RnnPolicy, policies)
        cls.seq_dims = cls._seq_dims(rnn.seq_ids)
        cls.use_bptt = rnn.use_bptt
        cls.is_feedback_output = policy_select(GradPolicy, policies).is_feedback_output
        own = PolicyContainer(
            *(
                i
                for i in policies.items
                if getattr(i, "major", None) is not LayerStructurePolicy
                or getattr(i, "minor", None) != "act_func"
            )
        )
        kernel_policies = sub_policies(own, "kernel")
        kernel = cls._make_kernel(template, kernel_policies)
        if (cls.is_feedback_output or (kernel.is_update and cls.use_bptt)) and not (
            kernel.is_feedback_output
        ):
            kernel = cls._make_kernel(template, change_policy(PFeedbackOutput, kernel_policies))
        cls.kernel_class = kernel
        cls.is_update = kernel.is_update
        cls.no_grad_ports = kernel.no_grad_ports
        cls._output_types = None
        if cls.input_map is not None:
            outs = layer_output_types(kernel)
            cls._output_types = {o: _grow(port_type(t)) for o, t in outs.items()}

    @classmethod
    def _check_ports(cls, template: type[AnyLayer]) -> None:
        shown = [("input ports", ", ".join(key_name(p) for p in cls.input_ports) or "(none)")]
        previous = [p for p in cls.input_ports if _is_previous(p)]
        if not previous:
            raise _error(
                f"cannot configure {cls.__name__}: No Previous port in the input port set "
                f"of {template.__name__}.",
                shown,
                "the kernel needs an input Previous(O) for each output O.",
            )
        wanted: set[type] = {Previous(o) for o in cls.output_ports}
        if set(previous) != wanted:
            raise _error(
                f"cannot configure {cls.__name__}: Invalid input port set of "
                f"{template.__name__}: its Previous ports do not match its outputs.",
                [*shown, ("needed", ", ".join(key_name(p) for p in wanted))],
                "give the kernel exactly one Previous(O) input per output O.",
            )

    @classmethod
    def _seq_dims(cls, seq_ids: tuple[Any, ...]) -> dict[type, int]:
        if not seq_ids:
            raise _error(
                f"cannot configure {cls.__name__}: Trivial recurrent layer is not allowed.",
                [("sequence ports", "(none)")],
                "name the sequence inputs: PSeqIDsAre(SeqID(LayerInput, 0)).",
            )
        dims: dict[type, int] = {}
        for sid in seq_ids:
            if _is_previous(sid.port):
                raise _error(
                    f"cannot configure {cls.__name__}: Previous port should not correspond "
                    "to sequence tensor.",
                    [("received", f"SeqID({key_name(sid.port)}, {sid.dim})")],
                    "Previous(O) is the initial state; name the sequence inputs only.",
                )
            if sid.port not in cls.input_ports or sid.port in dims:
                problem = "is given twice" if sid.port in dims else "is not an input port"
                raise _error(
                    f"cannot configure {cls.__name__}: Some sequence id does not correspond to "
                    f"any RNN port: {key_name(sid.port)} {problem}.",
                    [("input ports", ", ".join(key_name(p) for p in cls.input_ports))],
                    "give one SeqID per sequence input port.",
                )
            dims[sid.port] = sid.dim
        return dims

    @classmethod
    def _make_kernel(cls, template: type[AnyLayer], policies: PolicyContainer) -> type[AnyLayer]:
        if cls.input_map is None:
            return make_infer_layer(template, policies)
        step: dict[type, object] = {}
        for port in cls.input_ports:
            declared = cls.input_map[port]
            if declared.is_number:
                step[port] = declared.kind
                continue
            assert declared.elem is not None
            assert declared.device is not None
            rank = declared.rank or 0
            if port in cls.seq_dims:
                if cls.seq_dims[port] >= rank:
                    raise _error(
                        f"cannot configure {cls.__name__}: sequence dim "
                        f"{cls.seq_dims[port]} of {key_name(port)} is out of range.",
                        [("declared", declared.show())],
                        "the sequence dim must be a dim of the declared type.",
                    )
                rank -= 1
            step[port] = tensor_type(declared.elem, declared.device, rank)
        return make_train_layer(template, LayerInMap(step), policies)

    @classmethod
    def output_types(cls, input_types: Any = None) -> dict[type, object]:
        """Each output's type: the kernel's with a leading time dim."""
        if cls._output_types is None:
            return super().output_types(input_types)
        return dict(cls._output_types)

    def __init__(self, name: str, *kernel_args: object) -> None:
        super().__init__(name)
        kernel = type(self).kernel_class(f"{name}/kernel", *kernel_args)
        self.kernel: LayerInstance = as_instance(kernel, name)

    # --- forward --------------------------------------------------------------------------
    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        seqs, steps = self._sequences(inputs)
        state = {o: inputs[Previous(o)] for o in self.output_ports}
        outs: dict[type, list[AnyTensor]] = {o: [] for o in self.output_ports}
        for t in range(steps):
            cont: Values = self.kernel.input_cont()
            for port in self.input_ports:
                if port in seqs:
                    value = slice_op(seqs[port], t)  # a node: x[t] of a Tensor is a detached view
                elif _is_previous(port):
                    value = state[port.key]  # type: ignore[attr-defined]  # a PreviousKey
                    if t and not self.use_bptt:  # PDisableBptt: no gradient to earlier steps
                        value = ops.stop_gradient(value)
                else:
                    value = inputs[port]
                cont = cont.set(port, value)
            result = self.kernel.feed_forward(cont)
            for o in self.output_ports:
                state[o] = result.get(o)
                outs[o].append(state[o])
        self.stack("steps").push(steps)
        return {o: _stack(items) for o, items in outs.items()}

    def _sequences(self, inputs: dict[type, Any]) -> tuple[dict[type, AnyTensor], int]:
        seqs: dict[type, AnyTensor] = {}
        steps: int | None = None

        def fail(x: AnyTensor, text: str, hint: str) -> NoReturn:
            """Every sequence error shows the input it is about."""
            raise ShapeError(
                message(
                    text, [("received", x.describe())], built_at=format_site(user_site()), hint=hint
                )
            )

        for port, dim in self.seq_dims.items():
            x: AnyTensor = inputs[port]
            if dim >= x.rank:
                fail(
                    x,
                    f"cannot feed layer '{self.name}': sequence dim {dim} of "
                    f"{key_name(port)} is out of range.",
                    "feed data that has the sequence dim named by PSeqIDsAre.",
                )
            order = time_first(x.rank, dim)
            seqs[port] = x if dim == 0 else ops.permute(x, order)
            length = seqs[port].shape[0]
            if length == 0:
                fail(
                    x,
                    f"Empty sequence as input: layer '{self.name}', port {key_name(port)}.",
                    "feed at least one step.",
                )
            if steps is not None and length != steps:
                fail(
                    x,
                    f"Sequence number mismatch: layer '{self.name}', port "
                    f"{key_name(port)} has {length} steps, another input {steps}.",
                    "feed sequences of one length to every sequence port.",
                )
            steps = length
        assert steps is not None
        return seqs, steps

    # --- backward -------------------------------------------------------------------------
    def checked_grad(self, port: type, grad: Any, output: Any) -> Any:
        return self._time_grad(grad, output.shape[0])

    def children(self) -> tuple[AnyLayer, ...]:
        """The kernel (when it is a typed_nn layer)."""
        return (self.kernel,) if isinstance(self.kernel, Layer) else ()

    def drop_stacks(self) -> None:
        """Pop the step count, and what each step pushed in the kernel."""
        steps = self.stack("steps")
        if not steps.active:
            return
        count = steps.pop()
        assert isinstance(count, int)
        for kernel in self.children():
            for _ in range(count):
                kernel.drop_stacks()

    def _time_grad(self, grad: AnyTensor, steps: int) -> AnyTensor:
        length = grad.shape[0] if grad.rank else 0
        if length != steps:
            headline = "Empty sequence as grad input" if length == 0 else "Sequence number mismatch"
            raise ShapeError(
                message(
                    f"{headline}: layer '{self.name}' ran {steps} steps, the gradient has "
                    f"{length}.",
                    [("received", grad.describe())],
                    built_at=format_site(user_site()),
                    hint="feed back a gradient of the output's shape (time first).",
                )
            )
        return grad

    # The typing rule of unrolling (no other place says it): a sequence of rank r + 1 and a
    # state of rank r give outputs of rank r + 1 (time first). Tried from the highest rank
    # down, so a container of one rank (a sequence of the state's rank) gives rank + 1 too;
    # other mixes give the inputs' element and device, the rank checked at run time.
    @overload
    def feed_forward(  # type: ignore[overload-overlap]  # one-rank containers: first wins
        self, inputs: VarValues[object, TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim3]]
    ) -> VarValues[object, TensorLike[E, Dv, Dim4]]: ...
    @overload
    def feed_forward(  # type: ignore[overload-overlap]  # one-rank containers: first wins
        self, inputs: VarValues[object, TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim2]]
    ) -> VarValues[object, TensorLike[E, Dv, Dim3]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[object, TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim1]]
    ) -> VarValues[object, TensorLike[E, Dv, Dim2]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[object, TensorLike[E, Dv, Any] | float]
    ) -> VarValues[object, TensorLike[E, Dv, Any]]: ...
    def feed_forward(self, inputs: VarValues[object, object]) -> VarValues[object, AnyTensor]:
        """Every output stacked over time (lazy), shape (T, ...)."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[object, TensorLike[E, Dv, D]]
    ) -> VarValues[object, TensorLike[E, Dv, Any]]:
        """Input gradients (with ``PFeedbackOutput``; each input's own rank, the output
        gradient's element and device); the kernel keeps its parameters'."""
        return self._feed_backward(grads)

    # --- forwarded to the kernel ----------------------------------------------------------
    def init(self, initializer: InitializerLike, load_buffer: LoadBufferLike) -> None:
        """Initialise the kernel's parameters."""
        layer_init(self.kernel, initializer, load_buffer)

    def save_weights(self, saver: SaverLike) -> None:
        """Record the kernel's parameters."""
        layer_save_weights(self.kernel, saver)

    def grad_collect(self, collector: GradCollectorLike) -> None:
        """Hand the kernel's parameter gradients (summed over steps) to ``collector``."""
        layer_grad_collect(self.kernel, collector)

    def neutral_invariant(self) -> None:
        """LayerError while a forward waits for its backward (here or in the kernel)."""
        held = len(self.stack("steps"))
        if held:
            raise _error(
                f"[RecurrentLayer] NeutralInvariant fails: ShapeStack is not empty "
                f"(layer '{self.name}' holds {held} forward(s)).",
                [("layer", self.name)],
                "feed backward once for every feed forward.",
            )
        layer_neutral_invariant(self.kernel)
        super().neutral_invariant()


def _stack(items: list[AnyTensor]) -> AnyTensor:
    stacked: AnyTensor = ops.stack(items, 0)
    return stacked


def _grow(declared: Any) -> object:
    return tensor_type(declared.elem, declared.device, (declared.rank or 0) + 1)

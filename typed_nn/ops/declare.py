"""Declare an op once; implement it per device (cl-waffe2's defnode / define-impl).

An :class:`OpDecl` carries everything about an op that does not depend on the device: its
name, arity, parameter names, whether Python numbers may stand for operands, what kind of
computation it is (the evaluator fuses ``elementwise`` ops), ``infer``, which checks the
operands at build time and returns the result's shape, element and device, and ``vjp``, its
vector-Jacobian product (``tn.grad`` walks the graph with it), or :data:`NOT_DIFFERENTIABLE`.
Every declaration joins :func:`catalogue` unless it is ``internal`` (nodes only the evaluator
makes).

Backends register implementations with :func:`implement`; a device may hold several for one
op, and the one with the highest priority wins. :func:`implementation` finds it, or raises
``NoImplementationError`` naming the op, the device and the devices that have one.
 An implementation registered ``writes_into=True`` also takes ``out=array`` and fills it, as
numpy ufuncs do: the evaluator runs it inside element-wise regions block by block and into
the buffers it plans. :func:`specialise` registers, beside it, a maker of kernels for one
site: given a node's exact operand shapes and parameters (known once a plan is compiled),
it returns a kernel with that work done ahead of time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..errors import EvaluationError, NoImplementationError, message
from ..tags import DeviceTag, ElemTag

__all__ = [
    "NOT_DIFFERENTIABLE",
    "Impl",
    "Infer",
    "OpDecl",
    "Kernel",
    "Steps",
    "NotDifferentiable",
    "OpKind",
    "Operand",
    "Params",
    "Site",
    "Inline",
    "Specialised",
    "inline_kernel",
    "Vjp",
    "Batching",
    "catalogue",
    "declaration",
    "declarations",
    "implement",
    "implementation",
    "internal_op",
    "implemented_devices",
    "implemented_ops",
    "out_implementation",
    "implement_passes",
    "passes",
    "registry_version",
    "specialisation",
    "specialise",
]

Operand = Any
"""A node operand: a TensorLike, or a Python number where the op accepts one."""
Params = tuple[Any, ...]
"""An op's parameters: hashable values (ints, tuples, tags), compared for equality; each op
knows the types of its own (its infer checks them when a node is built)."""
Infer = Callable[
    ["OpDecl", tuple[Operand, ...], Params], tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]
]
Impl = Callable[..., Any]
"""``impl(*operand_arrays_or_numbers, *params) -> array``."""

OpKind = Literal["elementwise", "reduction", "contraction", "view", "source", "general"]

Vjp = Callable[[Any, Any], tuple[Any, ...]]
"""``vjp(node, g) -> cotangents``: given a node and the cotangent ``g`` of its output (the
node's shape), one lazy cotangent per operand, or None where the operand gets none (a number,
an integer operand, a condition). A cotangent may have the node's (broadcast) shape: the
caller sums it back to the operand's shape. Built from lazy ops, so gradients are graphs."""


class NotDifferentiable:
    """The ``vjp`` of an op with no derivative (argmax, sign): paths through it add zero."""

    _instance: NotDifferentiable | None = None

    def __new__(cls) -> NotDifferentiable:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_DIFFERENTIABLE"


NOT_DIFFERENTIABLE = NotDifferentiable()

_CATALOGUE: dict[str, OpDecl] = {}
_DECLARED: dict[str, OpDecl] = {}

Batching = Callable[[Any, str, tuple[int, ...]], "tuple[OpDecl | None, Params] | None"]
"""``batching(node, kinds, ranks) -> (op, params) | None``: given one node of a group, its
operands' kinds (``"b"`` stacked, ``"s"`` shared, one letter each) and their item ranks, the
op and parameters
that compute the whole group on the stacks (``None`` op: the group is its stacked operand),
or None where the group cannot run as one call."""


@dataclass(frozen=True, slots=True, eq=False)
class OpDecl:
    """The device-independent declaration of one op."""

    name: str
    arity: int
    infer: Infer
    params: tuple[str, ...] = ()
    kind: OpKind = "general"
    """``"view"``: a kernel may return a view of an operand (layout ops, rows); any other
    kind's kernels return memory of their own (the evaluator's memory plan relies on it, and
    the sanitizer checks it)."""
    numbers: bool = False
    """Python numbers may stand for tensor operands (``x + 1``, ``1 - x``)."""
    vjp: Vjp | NotDifferentiable | None = None
    """The vector-Jacobian product (see :data:`Vjp`); None only for internal ops."""
    internal: bool = False
    """Made by the evaluator's rewrites and batching, never by users (not in the catalogue)."""
    ufunc: Any = None
    """The numpy ufunc that computes it (an element-wise op): the CPU backend registers it as
    the plain implementation and as the write-into form."""
    alias_safe: bool = False
    """Element-wise, and its write-into form may write into an operand's own array (element i
    of the result is written after element i of every operand is read: ufuncs are)."""
    cuda: str | None = None
    """The C expression of one element of the result (``"{0} + {1}"``; ``{abs}``, ``{one}``
    ... are the dtype's spellings): the GPU backend's fused kernels are made of these."""
    batching: Batching | None = None
    """How independent nodes of this op run as one call on stacked operands (``ops/batching.py``;
    element-wise ops need none: the evaluator stacks their operands)."""
    batch_varies: str | None = None
    """The param whose value may differ between the members of a batched group (the rule then
    sees the members' values as one tuple in its place): ``narrow``'s start, so rows taken at
    different offsets of one tensor gather in one call."""
    onnx: str | None = None
    """The ONNX operator it is, on the same inputs (ONNX broadcasts as numpy does); an op with
    no one-to-one counterpart has a rule in ``onnx/rules.py`` instead."""
    int_overflow: bool = False
    """Integer results may wrap around (debug mode recomputes them in int64 to check)."""
    accumulates: bool = False
    """It sums many values (a reduction, a product, a softmax's denominator, a loss): on
    16-bit float operands it is computed in float32 and its result rounded back to the
    node's element type (a Float16 sum of 1e5 ones would overflow, a BFloat16 one stall at
    256). The evaluator widens such nodes once, before anything else sees the graph
    (``evaluate/widen.py``), so every backend's kernels only meet float32 for them."""

    def __post_init__(self) -> None:
        _DECLARED[self.name] = self
        if not self.internal:
            _CATALOGUE[self.name] = self

    def __repr__(self) -> str:
        return f"OpDecl({self.name!r})"


def internal_op(
    name: str,
    arity: int,
    made_by: str,
    *,
    batching: Batching | None = None,
    kind: OpKind = "general",
) -> OpDecl:
    """The declaration of a node only the evaluator makes (``made_by``: its rewrites or its
    batching); building one is an error, and it has no vjp (it never reaches ``tn.grad``).
    ``kind="view"``: its kernels may return a view of an operand (as layout ops do)."""

    def infer(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Any:
        raise EvaluationError(f"{name} is made by the evaluator's {made_by}, not built")

    return OpDecl(name, arity, infer, internal=True, batching=batching, kind=kind)


def declaration(name: str) -> OpDecl | None:
    """The declaration named ``name`` (internal ones included), or None."""
    return _DECLARED.get(name)


def declarations() -> list[OpDecl]:
    """Every declaration made so far, internal ones included."""
    return list(_DECLARED.values())


def catalogue() -> dict[str, OpDecl]:
    """Every op users can build, by name (the declarations imported so far)."""
    return dict(_CATALOGUE)


class _Registry(dict[str, Any]):
    """A dict that counts writes, so compiled plans notice a replaced implementation."""

    version = 0

    def __setitem__(self, key: str, value: Any) -> None:
        _Registry.version += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        _Registry.version += 1
        super().__delitem__(key)


def registry_version() -> int:
    """Changes whenever an implementation is registered or replaced."""
    return _Registry.version


@dataclass(frozen=True, slots=True)
class Kernel:
    """One implementation of an op on a device, and what the evaluator may do with it. Its
    refinements (``passes``, ``specialiser``) belong to it: an implementation registered in
    its place (a higher priority, a test's replacement) has none of them."""

    priority: int
    fn: Impl
    writes_into: bool = False
    """``fn`` also takes ``out=array`` (see :func:`implement`)."""
    passes: Steps | None = None
    """A unary element-wise op as the chain of passes ``fn`` makes: ``steps[0]`` reads the
    operand, each later one the value before it, every step ``fn(value, *numbers, out=)``. A
    fused region runs them itself, so they can merge with their neighbours'
    (``evaluate/lower.py``); the numbers are ``fn``'s. See :func:`implement_passes`."""
    specialiser: Specialiser | None = None
    """Makes ``fn``'s kernel for one site (see :func:`specialise`)."""


_IMPLS: dict[str, dict[str, list[Kernel]]] = _Registry()
"""op -> device -> its kernels, the highest priority first."""


def implement(
    op: str | OpDecl, device: type[DeviceTag], *, priority: int = 0, writes_into: bool = False
) -> Callable[[Impl], Impl]:
    """Register the decorated function as ``op``'s implementation on ``device``.

    ``writes_into``: it also takes ``out=array`` (default None) — shaped like the node, or a
    block of it for an element-wise op — and then fills it and returns it, as numpy ufuncs
    do; whether ``out`` may be an operand's own array is the declaration's ``alias_safe``.
    """
    name = op if isinstance(op, str) else op.name

    def register(fn: Impl) -> Impl:
        per_device = _IMPLS.get(name)
        if per_device is None:
            per_device = _IMPLS[name] = _Registry()
        entry = Kernel(priority, fn, writes_into)
        impls = per_device.get(device.name, [])
        per_device[device.name] = sorted([*impls, entry], key=lambda k: -k.priority)
        return fn

    return register


def implementation(op: str, device: type[DeviceTag]) -> Impl:
    """The highest-priority implementation of ``op`` on ``device``."""
    impls = _IMPLS.get(op, {}).get(device.name)
    if not impls:
        have = sorted(dev for dev, fns in _IMPLS.get(op, {}).items() if fns)
        raise NoImplementationError(
            message(
                f"op '{op}' has no implementation on {device.name}.",
                [("device", device.name), ("implemented on", ", ".join(have) or "no device")],
                hint=f"move the operands with ops.to_device(x, {have[0]})" if have else None,
            )
        )
    return impls[0].fn


def implemented_ops(device: type[DeviceTag]) -> list[str]:
    """Names of the ops with an implementation on ``device``."""
    return sorted(op for op, per_device in _IMPLS.items() if per_device.get(device.name))


def implemented_devices(op: str) -> list[str]:
    """Names of the devices that implement ``op``."""
    return sorted(dev for dev, fns in _IMPLS.get(op, {}).items() if fns)


def _top(op: str, device: type[DeviceTag]) -> Kernel | None:
    impls = _IMPLS.get(op, {}).get(device.name)
    return impls[0] if impls else None


def _refine(op: str | OpDecl, device: type[DeviceTag], **refinement: Any) -> None:
    """Give ``op``'s implementation on ``device`` registered now (the top one) ``refinement``."""
    name = op if isinstance(op, str) else op.name
    implementation(name, device)  # none registered: the usual error
    top, *rest = _IMPLS[name][device.name]
    _IMPLS[name][device.name] = [replace(top, **refinement), *rest]  # counted: plans notice


def out_implementation(op: str, device: type[DeviceTag]) -> Impl | None:
    """``op``'s implementation on ``device`` where it was registered ``writes_into`` (it takes
    ``out=``), else None (the evaluator then calls it without and does not fuse the op)."""
    top = _top(op, device)
    return top.fn if top is not None and top.writes_into else None


Steps = tuple[tuple[Impl, tuple[float | int, ...]], ...]


def implement_passes(op: str | OpDecl, device: type[DeviceTag], steps: Steps) -> None:
    """Register ``steps`` as the passes of ``op``'s implementation on ``device`` registered
    now (:attr:`Kernel.passes`)."""
    _refine(op, device, passes=steps)


def passes(op: str, device: type[DeviceTag]) -> Steps | None:
    """The passes of ``op``'s implementation on ``device``, or None."""
    top = _top(op, device)
    return top.passes if top is not None else None


@dataclass(frozen=True, slots=True)
class Site:
    """What a compiled plan knows about one node: ``operands`` holds each operand's
    (shape, dtype), or None where a Python number stands for it."""

    operands: tuple[tuple[tuple[int, ...], Any] | None, ...]
    params: Params
    shape: tuple[int, ...]
    dtype: Any


@dataclass(frozen=True, slots=True)
class Inline:
    """A specialised kernel's body as source, which a compiled plan writes in place of a
    call: a kernel of one or a few numpy calls then costs no Python frame (0.3 us a call, as
    much as a small array's arithmetic). The plan's program is the only code that runs it.

    ``code``: lines formatted with ``str.format`` — ``{0}``, ``{1}``… the operands, ``{out}``
    the buffer (a writing kernel: statements that fill it; its value is ``out``), ``{carray}``
    an expression true when the buffer is an aligned C array (``True`` for a buffer the plan
    made: Python compiles ``if True:`` to its body alone), each key of ``names`` the name its
    value is bound to (literal braces doubled). A view kernel's code is one expression, its
    value.
    """

    code: str
    names: Mapping[str, Any] = field(default_factory=dict)

    def lines(
        self,
        operands: Sequence[str],
        out: str | None,
        name: Callable[[str], str],
        planned: bool = False,
    ) -> list[str]:
        """The code with ``operands``, ``out`` and each name's ``name(key)`` filled in
        (``planned``: ``out`` is a buffer the plan made)."""
        bound = {key: name(key) for key in self.names}
        carray = "True" if planned else f"{out}.flags.carray"
        lines = self.code.splitlines()
        return [line.format(*operands, out=out, carray=carray, **bound) for line in lines]


@dataclass(frozen=True, slots=True)
class Specialised:
    """A kernel for one :class:`Site`, its parameters bound.

    ``writes``: ``fn(*operands, out=array)`` fills ``out`` (the node's shape and dtype) and
    returns it; otherwise ``fn(*operands)`` returns the value (a view, for layout ops). ``fn``
    is a function, or an :class:`Inline` body the plan writes in place of the call. It must
    give exactly the plain implementation's numbers, and where the op's write-into form is
    alias-safe, so must it be (a lean program may pass an operand's buffer as ``out``).
    """

    fn: Impl | Inline
    writes: bool


def inline_kernel(code: str, *, writes: bool, **names: Any) -> Specialised:
    """A specialised kernel whose body ``code`` (see :class:`Inline`) a plan writes inline."""
    return Specialised(Inline(code, names), writes)


Specialiser = Callable[[Site], Specialised | None]


def specialise(op: str | OpDecl, device: type[DeviceTag]) -> Callable[[Specialiser], Specialiser]:
    """Register the decorated ``make(site) -> Specialised | None`` as the specialiser of
    ``op``'s implementation on ``device`` registered now (:attr:`Kernel.specialiser`)."""

    def register(make: Specialiser) -> Specialiser:
        _refine(op, device, specialiser=make)
        return make

    return register


def specialisation(op: str, device: type[DeviceTag], site: Site) -> Specialised | None:
    """``op``'s kernel specialised for ``site``, or None (its implementation has no
    specialiser, or it declined)."""
    top = _top(op, device)
    return top.specialiser(site) if top is not None and top.specialiser is not None else None

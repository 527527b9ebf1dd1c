"""Random numbers: ``Generator`` (a counter-based Philox state held as a tensor) and the draws
``normal``, ``uniform``, ``bernoulli``, ``randint``, ``permutation``; ``dropout_mask``.

Every draw is one ``random`` node whose values are a pure function of an Int64 state
``[seed, counter]`` (its one operand) and its parameters: Philox keyed by ``(seed, stream)``,
the draw's ``counter`` choosing a block range of its own (backends/numpy/random.py). A
``Generator`` advances its counter by one per draw, so:

* eager draws return fresh numbers, and the same seed gives the same sequence;
* a draw reads the counter value of its own draw, however late it is evaluated: eagerly the
  node reads a copy of the state taken when it was built (later draws advance the generator's
  tensor, not the copy);
* inside ``tn.compile`` the node reads the generator's state tensor itself and the advance is
  an ``assign`` recorded in the program, so every call of the compiled function draws fresh
  numbers, and the k-th draw of a call reads ``counter + k``: a compiled function draws the
  same sequence as the same code run eagerly from the same state.

The state is an operand, not a parameter: a parameter would be frozen into a trace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar, overload

import numpy as np

from .. import tracing
from ..data.factories import check_tags, tensor
from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..errors import (
    DeviceError,
    ElemTypeError,
    OperandError,
    ParamError,
    ShapeError,
    message,
    received,
)
from ..shape import check_shape, deprecated
from ..tags import (
    CPU,
    DEVICE_TAGS,
    ELEM_TAGS,
    FE,
    DeviceTag,
    Dim0,
    Dim1,
    Dim2,
    Dim3,
    Dim4,
    Dim5,
    Dim6,
    Dv,
    E,
    ElemTag,
    Float32,
    FloatTag,
    Int32,
    Int64,
    IntTag,
)
from .declare import NOT_DIFFERENTIABLE, OpDecl, Operand, Params
from .node import build
from .rules import site, tensor_operands

__all__ = [
    "DROPOUT_MASK",
    "RANDOM",
    "Generator",
    "bernoulli",
    "default_generator",
    "dropout_mask",
    "manual_seed",
    "normal",
    "permutation",
    "randint",
    "uniform",
]

IE = TypeVar("IE", bound=IntTag)
Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]
_INT64 = 2**63


def _check_state(decl: OpDecl, operands: tuple[Operand, ...]) -> AnyTensor:
    (state,) = tensor_operands(decl, operands)
    if state.elem is not Int64 or state.shape != (2,):
        raise ElemTypeError(
            message(
                f"cannot build {decl.name}: the state is not an Int64 vector [seed, counter].",
                [("state", state.describe())],
                built_at=site(),
                hint="draw from a tn.Generator, or pass tn.tensor([seed, 0], tn.Int64, "
                "tn.CPU, tn.Dim1).",
            )
        )
    return state


def _infer_random(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    shape, elem = params[1], params[2]
    return shape, elem, _check_state(decl, operands).device


RANDOM = OpDecl(
    "random",
    1,
    _infer_random,
    params=("distribution", "shape", "elem", "args", "stream"),
    vjp=NOT_DIFFERENTIABLE,
)
"""One draw: ``distribution`` (normal, uniform, bernoulli, randint, permutation) of ``shape``
and ``elem`` with ``args`` (its numbers), from the state operand and ``stream``. Built by the
public draws below, which check their arguments first."""


class Generator(Generic[Dv]):
    """A seeded stream of random numbers on one device (see the module).

    ``Generator(seed)`` lives on the CPU; ``Generator(seed, tn.GPU)`` on the GPU (draws on the
    GPU give the CPU's numbers for the same seed). ``state`` is the ``Int64`` vector
    ``[seed, counter]`` the draws read (``counter``: the draws made so far): a tensor leaf, so
    a module tree can hold it as a buffer, a checkpoint can save it and writing it back (in
    place, e.g. ``gen.state.assign(saved)``) resumes the stream where it was saved.
    """

    __slots__ = ("device", "state")
    _tree_buffers: ClassVar[tuple[str, ...]] = ("state",)
    """A module holding a generator keeps its state as a buffer (``nn.Module``'s walk):
    saved and restored with the model, never trained."""

    @overload
    def __init__(self: Generator[CPU], seed: int) -> None: ...
    @overload
    def __init__(self, seed: int, device: type[Dv]) -> None: ...
    def __init__(self, seed: int, device: type[DeviceTag] = CPU) -> None:
        if device not in DEVICE_TAGS:
            check_tags("Generator", "tn.Generator(0, tn.CPU)", device=device)
        self.device: type[Dv] = device  # type: ignore[assignment]  # the overloads bind Dv
        self.state: Tensor[Int64, Dv, Dim1] = tensor(
            np.array([_seed("Generator", seed), 0], np.int64), Int64, self.device, Dim1
        )

    def manual_seed(self, seed: int) -> Generator[Dv]:
        """Restart the stream at ``seed`` (in place: compiled functions keep reading it)."""
        start = np.array([_seed("manual_seed", seed), 0], np.int64)
        self.state.assign(tensor(start, Int64, self.device, Dim1))
        return self

    def _draw(self, decl: OpDecl, params: Params) -> AnyTensor:
        """A ``decl`` node of ``params`` reading this generator's state, then the counter
        advanced past it: eagerly the node reads a copy of the state (it keeps the value of its
        own draw, however late it is evaluated); traced, the state itself (read at every call,
        after the earlier draws' advances), the advance recorded in the program."""
        state = self.state
        read: AnyTensor = state
        if tracing.state.trace is None:
            read = Tensor(state.array.copy(), Int64, self.device, Dim1)
        node = build(decl, (read,), params)  # before the advance: a traced read would see it
        state.assign(state + tensor(np.array([0, 1], np.int64), Int64, self.device, Dim1))
        return node

    def __repr__(self) -> str:
        return f"Generator(device={self.device.__name__})"


def _seed(what: str, seed: object) -> int:
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool) and 0 <= seed < _INT64:
        return int(seed)
    raise ParamError(
        message(
            f"{what}: the seed must be an int in 0 .. 2**63 - 1.",
            [("received", received(seed))],
            built_at=site(),
            hint="e.g. tn.Generator(0).",
        )
    )


_DEFAULT: dict[type[DeviceTag], Generator[Any]] = {}
_DEFAULT_SEED = [0]


@overload
def default_generator() -> Generator[CPU]: ...
@overload
def default_generator(device: type[Dv]) -> Generator[Dv]: ...
def default_generator(device: type[DeviceTag] = CPU) -> Generator[Any]:
    """The generator used where none is given (module constructors): one per device, seeded
    0 until :func:`manual_seed` reseeds them all."""
    if device not in DEVICE_TAGS:
        check_tags("default_generator", "tn.default_generator(tn.CPU)", device=device)
    gen = _DEFAULT.get(device)
    if gen is None:
        gen = _DEFAULT[device] = Generator(_DEFAULT_SEED[0], device)
    return gen


def manual_seed(seed: int) -> None:
    """Reseed the default generators (every device's) with ``seed``."""
    _DEFAULT_SEED[0] = _seed("manual_seed", seed)
    for gen in _DEFAULT.values():
        gen.manual_seed(seed)


def _number(
    what: str, name: str, value: object, allowed: str, ok: Callable[[float], bool] | None = None
) -> float:
    """``value`` as a float: a finite number for which ``ok`` holds."""
    if isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        number = float(value)
        if np.isfinite(number) and (ok is None or ok(number)):
            return number
    raise ParamError(
        message(
            f"cannot draw {what}: {name} must be {allowed}.",
            [(name, received(value))],
            built_at=site(),
            hint=f"pass {name} as a Python number: {allowed}.",
        )
    )


def _draw(
    what: str,
    gen: object,
    shape: object,
    elem: object,
    device: object,
    args: tuple[Any, ...],
    kind: type[ElemTag] = ElemTag,
) -> Any:
    """Check a draw's arguments (``elem`` must be a ``kind`` tag), then build its node."""
    if not isinstance(gen, Generator):
        raise OperandError(
            message(
                f"cannot draw {what}: the first argument must be a tn.Generator.",
                [("received", received(gen))],
                built_at=site(),
                hint="make one with tn.Generator(seed), or use tn.default_generator().",
            )
        )
    if device is None:
        device = gen.device
    elif device not in DEVICE_TAGS:
        check_tags(what, f"ops.{what}(gen, (2, 3), tn.Float32, tn.CPU)", device=device)
    if device is not gen.device:
        raise DeviceError(
            message(
                f"cannot draw {what} on {getattr(device, '__name__', device)}: the generator "
                f"lives on {gen.device.__name__}.",
                [("generator", gen.device.__name__), ("device", getattr(device, "__name__", ""))],
                built_at=site(),
                hint=f"use a generator of that device: tn.Generator(seed, "
                f"tn.{getattr(device, '__name__', 'GPU')}).",
            )
        )
    if elem not in ELEM_TAGS:
        check_tags(what, f"ops.{what}(gen, (2, 3), tn.Float32)", elem=elem)
    assert isinstance(elem, type)
    if not issubclass(elem, kind):
        allowed = {FloatTag: "Float32 or Float64", IntTag: "Int32 or Int64"}[kind]
        raise ElemTypeError(
            message(
                f"cannot draw {what} of {elem.__name__}: its element must be {allowed}.",
                [("elem", elem.__name__)],
                built_at=site(),
                hint=f"pass elem={allowed.split()[0]}, or cast the result with ops.astype.",
            )
        )
    shape = check_shape(shape, what)
    return gen._draw(RANDOM, (what, shape, elem, args, 0))


# fmt: off
# --- BEGIN GENERATED NORMAL (scripts/gen_op_overloads.py) ---
@overload
def normal(gen: Generator[Dv], shape: tuple[int, int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[Float32, Dv, Dim2]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[()], elem: type[Float32] = ..., device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[Float32, Dv, Dim0]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[Float32, Dv, Dim1]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, int, int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[Float32, Dv, Dim3]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, int, int, int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[Float32, Dv, Dim4]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, int, int, int, int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[Float32, Dv, Dim5]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[Float32, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def normal(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], elem: type[Float32] = ..., device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[Float32, Dv, Any]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, ...], elem: type[Float32] = ..., device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[Float32, Dv, Any]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, int], elem: type[FE], device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[()], elem: type[FE], device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int], elem: type[FE], device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, int, int], elem: type[FE], device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, int, int, int], elem: type[FE], device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[FE, Dv, Dim4]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, int, int, int, int], elem: type[FE], device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[FE, Dv, Dim5]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int], elem: type[FE], device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[FE, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def normal(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], elem: type[FE], device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[FE, Dv, Any]: ...
@overload
def normal(gen: Generator[Dv], shape: tuple[int, ...], elem: type[FE], device: type[Dv] | None = None, *, mean: float = 0.0, std: float = 1.0) -> TensorLike[FE, Dv, Any]: ...
# --- END GENERATED NORMAL ---
# fmt: on
def normal(
    gen: Generator[Any],
    shape: tuple[int, ...],
    elem: type[FloatTag] = Float32,
    device: type[DeviceTag] | None = None,
    *,
    mean: float = 0.0,
    std: float = 1.0,
) -> Any:
    """``shape`` samples of the normal distribution N(``mean``, ``std``²), drawn from ``gen``.

    ``elem`` is Float32 (default) or Float64; ``device`` is the generator's (the default).
    ``mean + std * ops.normal(gen, shape)`` with tensors ``mean`` and ``std`` differentiates
    through them (the reparameterisation trick); the draw itself has no gradient.
    """
    mean_ = _number("normal", "mean", mean, "a finite number")
    std_ = _number("normal", "std", std, "a finite number >= 0", lambda v: v >= 0.0)
    return _draw("normal", gen, shape, elem, device, (mean_, std_), FloatTag)


# fmt: off
# --- BEGIN GENERATED UNIFORM (scripts/gen_op_overloads.py) ---
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[Float32, Dv, Dim2]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[()], elem: type[Float32] = ..., device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[Float32, Dv, Dim0]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[Float32, Dv, Dim1]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, int, int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[Float32, Dv, Dim3]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, int, int, int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[Float32, Dv, Dim4]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, int, int, int, int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[Float32, Dv, Dim5]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int], elem: type[Float32] = ..., device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[Float32, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def uniform(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], elem: type[Float32] = ..., device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[Float32, Dv, Any]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, ...], elem: type[Float32] = ..., device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[Float32, Dv, Any]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, int], elem: type[FE], device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[()], elem: type[FE], device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int], elem: type[FE], device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, int, int], elem: type[FE], device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, int, int, int], elem: type[FE], device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[FE, Dv, Dim4]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, int, int, int, int], elem: type[FE], device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[FE, Dv, Dim5]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int], elem: type[FE], device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[FE, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def uniform(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], elem: type[FE], device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[FE, Dv, Any]: ...
@overload
def uniform(gen: Generator[Dv], shape: tuple[int, ...], elem: type[FE], device: type[Dv] | None = None, *, low: float = 0.0, high: float = 1.0) -> TensorLike[FE, Dv, Any]: ...
# --- END GENERATED UNIFORM ---
# fmt: on
def uniform(
    gen: Generator[Any],
    shape: tuple[int, ...],
    elem: type[FloatTag] = Float32,
    device: type[DeviceTag] | None = None,
    *,
    low: float = 0.0,
    high: float = 1.0,
) -> Any:
    """``shape`` samples uniform in [``low``, ``high``), drawn from ``gen`` (Float32 or
    Float64 elements; the generator's device)."""
    low_ = _number("uniform", "low", low, "a finite number")
    high_ = _number("uniform", "high", high, f"a finite number > low ({low_})", lambda v: v > low_)
    return _draw("uniform", gen, shape, elem, device, (low_, high_), FloatTag)


# fmt: off
# --- BEGIN GENERATED BERNOULLI (scripts/gen_op_overloads.py) ---
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, int], p: float, elem: type[Float32] = ..., device: type[Dv] | None = None) -> TensorLike[Float32, Dv, Dim2]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[()], p: float, elem: type[Float32] = ..., device: type[Dv] | None = None) -> TensorLike[Float32, Dv, Dim0]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int], p: float, elem: type[Float32] = ..., device: type[Dv] | None = None) -> TensorLike[Float32, Dv, Dim1]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, int, int], p: float, elem: type[Float32] = ..., device: type[Dv] | None = None) -> TensorLike[Float32, Dv, Dim3]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, int, int, int], p: float, elem: type[Float32] = ..., device: type[Dv] | None = None) -> TensorLike[Float32, Dv, Dim4]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, int, int, int, int], p: float, elem: type[Float32] = ..., device: type[Dv] | None = None) -> TensorLike[Float32, Dv, Dim5]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int], p: float, elem: type[Float32] = ..., device: type[Dv] | None = None) -> TensorLike[Float32, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def bernoulli(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], p: float, elem: type[Float32] = ..., device: type[Dv] | None = None) -> TensorLike[Float32, Dv, Any]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, ...], p: float, elem: type[Float32] = ..., device: type[Dv] | None = None) -> TensorLike[Float32, Dv, Any]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, int], p: float, elem: type[E], device: type[Dv] | None = None) -> TensorLike[E, Dv, Dim2]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[()], p: float, elem: type[E], device: type[Dv] | None = None) -> TensorLike[E, Dv, Dim0]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int], p: float, elem: type[E], device: type[Dv] | None = None) -> TensorLike[E, Dv, Dim1]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, int, int], p: float, elem: type[E], device: type[Dv] | None = None) -> TensorLike[E, Dv, Dim3]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, int, int, int], p: float, elem: type[E], device: type[Dv] | None = None) -> TensorLike[E, Dv, Dim4]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, int, int, int, int], p: float, elem: type[E], device: type[Dv] | None = None) -> TensorLike[E, Dv, Dim5]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int], p: float, elem: type[E], device: type[Dv] | None = None) -> TensorLike[E, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def bernoulli(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], p: float, elem: type[E], device: type[Dv] | None = None) -> TensorLike[E, Dv, Any]: ...
@overload
def bernoulli(gen: Generator[Dv], shape: tuple[int, ...], p: float, elem: type[E], device: type[Dv] | None = None) -> TensorLike[E, Dv, Any]: ...
# --- END GENERATED BERNOULLI ---
# fmt: on
def bernoulli(
    gen: Generator[Any],
    shape: tuple[int, ...],
    p: float,
    elem: type[ElemTag] = Float32,
    device: type[DeviceTag] | None = None,
) -> Any:
    """``shape`` values, each 1 with probability ``p`` (in [0, 1]) and 0 otherwise, of any
    element (Float32 by default), drawn from ``gen``."""
    p_ = _number("bernoulli", "p", p, "a number in [0, 1]", lambda v: 0.0 <= v <= 1.0)
    return _draw("bernoulli", gen, shape, elem, device, (p_,))


# fmt: off
# --- BEGIN GENERATED RANDINT (scripts/gen_op_overloads.py) ---
@overload
def randint(gen: Generator[Dv], shape: tuple[int, int], low: int, high: int, elem: type[Int64] = ..., device: type[Dv] | None = None) -> TensorLike[Int64, Dv, Dim2]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[()], low: int, high: int, elem: type[Int64] = ..., device: type[Dv] | None = None) -> TensorLike[Int64, Dv, Dim0]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int], low: int, high: int, elem: type[Int64] = ..., device: type[Dv] | None = None) -> TensorLike[Int64, Dv, Dim1]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, int, int], low: int, high: int, elem: type[Int64] = ..., device: type[Dv] | None = None) -> TensorLike[Int64, Dv, Dim3]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, int, int, int], low: int, high: int, elem: type[Int64] = ..., device: type[Dv] | None = None) -> TensorLike[Int64, Dv, Dim4]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, int, int, int, int], low: int, high: int, elem: type[Int64] = ..., device: type[Dv] | None = None) -> TensorLike[Int64, Dv, Dim5]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int], low: int, high: int, elem: type[Int64] = ..., device: type[Dv] | None = None) -> TensorLike[Int64, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def randint(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], low: int, high: int, elem: type[Int64] = ..., device: type[Dv] | None = None) -> TensorLike[Int64, Dv, Any]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, ...], low: int, high: int, elem: type[Int64] = ..., device: type[Dv] | None = None) -> TensorLike[Int64, Dv, Any]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, int], low: int, high: int, elem: type[IE], device: type[Dv] | None = None) -> TensorLike[IE, Dv, Dim2]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[()], low: int, high: int, elem: type[IE], device: type[Dv] | None = None) -> TensorLike[IE, Dv, Dim0]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int], low: int, high: int, elem: type[IE], device: type[Dv] | None = None) -> TensorLike[IE, Dv, Dim1]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, int, int], low: int, high: int, elem: type[IE], device: type[Dv] | None = None) -> TensorLike[IE, Dv, Dim3]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, int, int, int], low: int, high: int, elem: type[IE], device: type[Dv] | None = None) -> TensorLike[IE, Dv, Dim4]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, int, int, int, int], low: int, high: int, elem: type[IE], device: type[Dv] | None = None) -> TensorLike[IE, Dv, Dim5]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int], low: int, high: int, elem: type[IE], device: type[Dv] | None = None) -> TensorLike[IE, Dv, Dim6]: ...
@overload
@deprecated("typed_nn data has at most 6 dims; this call raises RankError")
def randint(gen: Generator[Dv], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], low: int, high: int, elem: type[IE], device: type[Dv] | None = None) -> TensorLike[IE, Dv, Any]: ...
@overload
def randint(gen: Generator[Dv], shape: tuple[int, ...], low: int, high: int, elem: type[IE], device: type[Dv] | None = None) -> TensorLike[IE, Dv, Any]: ...
# --- END GENERATED RANDINT ---
# fmt: on
def randint(
    gen: Generator[Any],
    shape: tuple[int, ...],
    low: int,
    high: int,
    elem: type[IntTag] = Int64,
    device: type[DeviceTag] | None = None,
) -> Any:
    """``shape`` integers uniform in [``low``, ``high``), of Int64 (default) or Int32,
    drawn from ``gen``."""
    lo = _integer("low", low, "an int")
    hi = _integer("high", high, f"an int > low ({lo})", lambda v: v > lo)
    given: object = elem  # callers without a type checker may pass anything
    fits = _INT_RANGES.get(given)
    if fits is not None and (lo < fits[0] or hi - 1 > fits[1]):
        raise ParamError(
            message(
                f"cannot draw randint of {elem.__name__}: [{lo}, {hi}) does not fit it.",
                [("low", str(lo)), ("high", str(hi)), (elem.__name__, f"{fits[0]} .. {fits[1]}")],
                built_at=site(),
                hint="draw Int64, or narrow the range.",
            )
        )
    return _draw("randint", gen, shape, elem, device, (lo, hi), IntTag)


_INT_RANGES: dict[object, tuple[int, int]] = {
    Int32: (-(2**31), 2**31 - 1),
    Int64: (-_INT64, _INT64 - 1),
}


def _integer(
    name: str, value: object, allowed: str, ok: Callable[[int], bool] | None = None
) -> int:
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        number = int(value)
        if ok is None or ok(number):
            return number
    raise ParamError(
        message(
            f"cannot draw randint: {name} must be {allowed}.",
            [(name, received(value))],
            built_at=site(),
            hint="randint(gen, shape, low, high) draws low .. high - 1.",
        )
    )


def permutation(
    gen: Generator[Dv], n: int, device: type[Dv] | None = None
) -> TensorLike[Int64, Dv, Dim1]:
    """A random permutation of ``0 .. n - 1`` (an Int64 vector), drawn from ``gen``: shuffle
    with ``ops.embedding(data, ops.permutation(gen, len))`` or on the host with ``.numpy()``."""
    given: object = n  # callers without a type checker may pass anything
    if isinstance(given, bool) or not isinstance(given, int | np.integer) or given < 0:
        raise ParamError(
            message(
                "cannot draw permutation: n must be an int >= 0.",
                [("n", received(n))],
                built_at=site(),
                hint="ops.permutation(gen, len(data)).",
            )
        )
    result: TensorLike[Int64, Dv, Dim1] = _draw("permutation", gen, (int(n),), Int64, device, ())
    return result


# --- the dropout mask ------------------------------------------------------------------------


def _infer_mask(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    state = _check_state(decl, operands)
    shape, keep, elem, stream = params
    if not (isinstance(elem, type) and issubclass(elem, FloatTag)):
        raise ElemTypeError(
            message(
                f"cannot build {decl.name}: the mask element must be Float32 or Float64.",
                [("elem", repr(elem))],
                built_at=site(),
                hint="pass the element of the data the mask multiplies.",
            )
        )
    if not (isinstance(keep, float) and 0.0 < keep <= 1.0) or not isinstance(stream, int):
        raise ShapeError(
            message(
                f"cannot build {decl.name}: keep must be a float in (0, 1] and stream an int.",
                [("keep", repr(keep)), ("stream", repr(stream))],
                built_at=site(),
                hint="keep = 1 - dropout rate.",
            )
        )
    return tuple(shape), elem, state.device


DROPOUT_MASK = OpDecl(
    "dropout_mask",
    1,
    _infer_mask,
    params=("shape", "keep", "elem", "stream"),
    vjp=NOT_DIFFERENTIABLE,
)
"""``bernoulli(keep) / keep`` in one node (the kernel shares ``random``'s bernoulli)."""


def dropout_mask(
    state: TensorLike[Int64, Dv, Any] | Generator[Dv],
    shape: tuple[int, ...],
    keep: float,
    elem: type[FloatTag],
    stream: int = 0,
) -> AnyTensor:
    """A ``shape`` mask of ``1 / keep`` (probability ``keep``) and 0: inverted dropout, the
    mean kept. From a state ``[seed, counter]`` its values are a function of the state and
    ``stream`` (evaluating the node twice gives one mask; a backward reads the forward's
    mask); from a ``Generator``, a fresh draw that advances it."""
    given: object = keep  # callers without a type checker may pass anything
    number = float(given) if isinstance(given, int | float | np.integer | np.floating) else given
    shape = check_shape(shape, "dropout_mask")
    params = (shape, number, elem, stream)
    if isinstance(state, Generator):
        return state._draw(DROPOUT_MASK, params)
    return build(DROPOUT_MASK, (state,), params)

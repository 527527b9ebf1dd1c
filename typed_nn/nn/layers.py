"""The catalogue as modules (forwards only: the backward is ``tn.grad``), computed by the ops
and functions MetaNN's layers use. Each is generic in element and device, ``Float32`` on the
``CPU`` when not given, and its parameters are laid out as PyTorch's module of the same name
lays them out (``Linear.weight`` is (out, in)), so state dicts cross over without a mapping."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, cast, overload

from .. import ops
from ..data.factories import ones, zeros
from ..data.module import Module
from ..data.tensor import AnyTensor, TensorLike
from ..errors import ParamError, ShapeError, message
from ..evaluate import evaluate
from ..layers.embedding import embedding_lookup
from ..layers.norm import check_layer_norm_input, layer_norm
from ..ops.node import format_site, user_site
from ..ops.random import Generator, default_generator
from ..ops.rules import number_operand
from ..policies.precision import ComputeIn
from ..tags import CPU, FE, D, DeviceTag, Dim0, Dim1, Dim2, Dim3, Dv, Float32, FloatTag, IntTag
from . import checks, init
from .precision import CE, PC, Mixed

__all__ = ["Dropout", "Embedding", "LayerNorm", "Linear", "Sequential"]

Gen = Generator[Any] | None
"""Where a module's initial weights are drawn from (the device's default generator: None)."""
IE = TypeVar("IE", bound=IntTag)


def _tags(elem: type[FloatTag] | None, device: type[DeviceTag] | None) -> tuple[Any, Any]:
    return (elem or Float32), (device or CPU)


class Linear(Mixed, Generic[FE, Dv, CE]):
    """``y = x @ weight.T + bias`` over the last dim of ``x`` (any rank >= 1), PyTorch's
    ``nn.Linear``: ``weight`` (out_features, in_features), ``bias`` (out_features,) or None;
    both drawn from U(-1/sqrt(in), 1/sqrt(in)). ``precision=PMixedBFloat16``: computed in
    BFloat16 (``CE``), the parameters kept in ``elem`` (see ``typed_nn.nn.precision``)."""

    weight: TensorLike[FE, Dv, Dim2]
    bias: TensorLike[FE, Dv, Dim1]
    """None with ``bias=False``, typed as a tensor as PyTorch types it (the common case reads
    ``grads.fc.bias`` with no narrowing)."""

    @overload
    def __init__(self: Linear[Float32, CPU], in_features: int, out_features: int, *, bias: bool = True, gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Linear[FE, CPU], in_features: int, out_features: int, *, bias: bool = True, elem: type[FE], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Linear[Float32, Dv], in_features: int, out_features: int, *, bias: bool = True, device: type[Dv], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Linear[FE, Dv, FE], in_features: int, out_features: int, *, bias: bool = True, elem: type[FE], device: type[Dv], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Linear[Float32, CPU, PC], in_features: int, out_features: int, *, bias: bool = True, precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Linear[FE, Dv, PC], in_features: int, out_features: int, *, bias: bool = True, elem: type[FE], device: type[Dv], precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        bias: bool = True,
        elem: type[FloatTag] | None = None,
        device: type[DeviceTag] | None = None,
        precision: ComputeIn[Any] | None = None,
        gen: Gen = None,
    ) -> None:
        e, dv = _tags(elem, device)
        self._set_precision(precision, e)
        in_features = checks.size("Linear", "in_features", in_features)
        out_features = checks.size("Linear", "out_features", out_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = init.fan_in_uniform((out_features, in_features), in_features, e, dv, gen)
        self.bias = init.fan_in_uniform((out_features,), in_features, e, dv, gen) if bias else None  # type: ignore[assignment]

    def __call__(self, x: TensorLike[CE, Dv, D]) -> TensorLike[CE, Dv, D]:
        self._input(x)
        _last_dim(self, x, self.in_features, "in_features")
        xa: AnyTensor = x  # any rank: ops.matmul's overloads are per rank
        y: AnyTensor = ops.matmul(xa, ops.transpose(self._param(self.weight)))
        b: TensorLike[FE, Dv, Dim1] | None = self.bias  # None with bias=False
        return cast(TensorLike[CE, Dv, D], y if b is None else y + self._param(b))


class Embedding(Mixed, Generic[FE, Dv, CE]):
    """Rows of ``weight`` (num_embeddings, embedding_dim) picked by integer ids, PyTorch's
    ``nn.Embedding`` (weight drawn from N(0, 1)): ids of shape S give S + (embedding_dim,).
    With ``precision=``, the picked rows are cast to the compute type ``CE``."""

    weight: TensorLike[FE, Dv, Dim2]

    @overload
    def __init__(self: Embedding[Float32, CPU], num_embeddings: int, embedding_dim: int, *, gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Embedding[FE, CPU], num_embeddings: int, embedding_dim: int, *, elem: type[FE], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Embedding[Float32, Dv], num_embeddings: int, embedding_dim: int, *, device: type[Dv], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Embedding[FE, Dv, FE], num_embeddings: int, embedding_dim: int, *, elem: type[FE], device: type[Dv], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Embedding[Float32, CPU, PC], num_embeddings: int, embedding_dim: int, *, precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Embedding[FE, Dv, PC], num_embeddings: int, embedding_dim: int, *, elem: type[FE], device: type[Dv], precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        *,
        elem: type[FloatTag] | None = None,
        device: type[DeviceTag] | None = None,
        precision: ComputeIn[Any] | None = None,
        gen: Gen = None,
    ) -> None:
        e, dv = _tags(elem, device)
        self._set_precision(precision, e)
        num_embeddings = checks.size("Embedding", "num_embeddings", num_embeddings)
        embedding_dim = checks.size("Embedding", "embedding_dim", embedding_dim)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = init.normal((num_embeddings, embedding_dim), e, dv, gen)

    @overload
    def __call__(self, ids: TensorLike[IE, Dv, Dim0]) -> TensorLike[CE, Dv, Dim1]: ...
    @overload
    def __call__(self, ids: TensorLike[IE, Dv, Dim1]) -> TensorLike[CE, Dv, Dim2]: ...
    @overload
    def __call__(self, ids: TensorLike[IE, Dv, Dim2]) -> TensorLike[CE, Dv, Dim3]: ...
    @overload
    def __call__(self, ids: TensorLike[IE, Dv, Any]) -> TensorLike[CE, Dv, Any]: ...
    def __call__(self, ids: TensorLike[Any, Any, Any]) -> TensorLike[Any, Any, Any]:
        # the rows cast after the pick: only they are converted, and their gradient is
        # summed into the table in its own type
        return self._param(embedding_lookup("Embedding", self.weight, ids))


class LayerNorm(Mixed, Generic[FE, Dv, CE]):
    """Normalisation over the last dim, PyTorch's ``nn.LayerNorm(dim)``: ``weight`` ones and
    ``bias`` zeros of shape (dim,). With ``precision=``, computed in ``CE`` (its mean and
    variance accumulate in float32, as every 16-bit reduction does)."""

    weight: TensorLike[FE, Dv, Dim1]
    bias: TensorLike[FE, Dv, Dim1]

    @overload
    def __init__(self: LayerNorm[Float32, CPU], dim: int, *, eps: float = 1e-5) -> None: ...
    @overload
    def __init__(self: LayerNorm[FE, CPU], dim: int, *, eps: float = 1e-5, elem: type[FE]) -> None: ...  # fmt: skip
    @overload
    def __init__(self: LayerNorm[Float32, Dv], dim: int, *, eps: float = 1e-5, device: type[Dv]) -> None: ...  # fmt: skip
    @overload
    def __init__(self: LayerNorm[FE, Dv, FE], dim: int, *, eps: float = 1e-5, elem: type[FE], device: type[Dv]) -> None: ...  # fmt: skip
    @overload
    def __init__(self: LayerNorm[Float32, CPU, PC], dim: int, *, eps: float = 1e-5, precision: ComputeIn[PC]) -> None: ...  # fmt: skip
    @overload
    def __init__(self: LayerNorm[FE, Dv, PC], dim: int, *, eps: float = 1e-5, elem: type[FE], device: type[Dv], precision: ComputeIn[PC]) -> None: ...  # fmt: skip
    def __init__(
        self,
        dim: int,
        *,
        eps: float = 1e-5,
        elem: type[FloatTag] | None = None,
        device: type[DeviceTag] | None = None,
        precision: ComputeIn[Any] | None = None,
    ) -> None:
        e, dv = _tags(elem, device)
        self._set_precision(precision, e)
        dim, eps = checks.size("LayerNorm", "dim", dim), checks.positive("LayerNorm", "eps", eps)
        self.dim, self.eps = dim, eps
        self.weight = ones((dim,), e, dv)
        self.bias = zeros((dim,), e, dv)

    def __call__(self, x: TensorLike[CE, Dv, D]) -> TensorLike[CE, Dv, D]:
        check_layer_norm_input("LayerNorm", None, x, self.dim)
        self._input(x)
        y = layer_norm(x, self._param(self.weight), self._param(self.bias), self.eps)
        return cast(TensorLike[CE, Dv, D], y)


class Sequential(Module):
    """Modules (or functions) applied in order: ``Sequential(nn.Linear(4, 8), nn.relu,
    nn.Linear(8, 2))``. Its fields are named ``0``, ``1``, ... as in PyTorch (state-dict keys
    ``0.weight``, ...); ``seq[i]`` is the i-th, ``len(seq)`` their number."""

    def __init__(self, *layers: Any) -> None:
        for i, layer in enumerate(layers):
            setattr(self, str(i), layer)

    def __len__(self) -> int:
        return sum(1 for k in vars(self) if k.isdigit())

    def __getitem__(self, i: int) -> Any:
        return getattr(self, str(range(len(self))[i]))

    def __call__(self, x: TensorLike[FE, Dv, Any]) -> TensorLike[FE, Dv, Any]:
        y: Any = x
        for i in range(len(self)):
            y = getattr(self, str(i))(y)
        return cast(TensorLike[FE, Dv, Any], y)


def _last_dim(module: Module, x: object, expected: int, name: str) -> None:
    shape = getattr(x, "shape", None)
    if not isinstance(x, TensorLike) or not shape or shape[-1] != expected:
        raise ShapeError(
            message(
                f"cannot apply {type(module).__name__}: the input's last dim is not {name}.",
                [
                    ("declared", f"(..., {expected})"),
                    ("received", x.describe() if isinstance(x, TensorLike) else type(x).__name__),
                ],
                built_at=format_site(user_site()),
                hint=f"feed data whose last dim is {expected}, or build the module with "
                f"{name}={shape[-1] if shape else '...'}.",
            )
        )


class Dropout(Module, Generic[Dv]):
    """Inverted dropout, PyTorch's ``nn.Dropout(p)``: in training mode each element is zeroed
    with probability ``p`` and the others scaled by ``1 / (1 - p)``; in evaluation mode
    (``model.eval()``) the identity. Its masks come from ``gen``, a ``tn.Generator`` held in
    the tree (its state a buffer: a checkpoint restores the stream; a compiled step draws a
    fresh mask at every call). Without ``gen``, one seeded from the device's default
    generator."""

    gen: Generator[Dv]

    @overload
    def __init__(self: Dropout[CPU], p: float = 0.5) -> None: ...
    @overload
    def __init__(self, p: float = 0.5, *, gen: Generator[Dv]) -> None: ...
    @overload
    def __init__(self, p: float = 0.5, *, device: type[Dv]) -> None: ...
    def __init__(
        self, p: float = 0.5, *, gen: Generator[Any] | None = None, device: type[DeviceTag] = CPU
    ) -> None:
        self.p = _probability("create", p)
        self.gen = gen if gen is not None else _seeded(device)

    def __call__(self, x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
        p = self.p
        if not self.training or p == 0.0:
            return x
        if type(p) is not float or not 0.0 < p < 1.0:  # a field set since (model.drop.p = 1.5)
            p = _probability("apply", p)
            if p == 1.0:  # everything dropped, as PyTorch's (inf and NaN stay NaN)
                return x * 0.0
        return x * ops.dropout_mask(self.gen, x.shape, 1.0 - p, x.elem)


def _probability(verb: str, p: object) -> float:
    """Dropout's ``p`` as a float in [0, 1], else a ParamError (``verb``: create or apply)."""
    if not (number_operand(p) and 0.0 <= p <= 1.0):  # type: ignore[operator]
        raise ParamError(
            message(
                f"cannot {verb} Dropout: p must be a probability in [0, 1].",
                [("p", repr(p))],
                hint="e.g. nn.Dropout(0.1) (p is the probability of dropping an element).",
            )
        )
    return float(p)  # type: ignore[arg-type]


def _seeded(device: type[DeviceTag]) -> Generator[Any]:
    """A generator of its own, seeded by a draw of the device's default generator (so
    ``tn.manual_seed`` makes a model's dropout masks reproducible)."""
    seed = evaluate(ops.randint(default_generator(device), (), 0, 2**62)).numpy()
    return Generator(int(seed), device)

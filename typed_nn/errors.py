"""Every error typed_nn raises, in one place.

Each error subclasses the builtin a Python user would catch for that kind of mistake
(``ShapeError`` is a ``ValueError``, ``ElemTypeError`` a ``TypeError``, ...), and every
message has the same anatomy (STYLE.md rule 9)::

    typed_nn.ShapeError: cannot build dot.
      lhs : Tensor[Float32, CPU, Dim2](4, 3)
      rhs : Tensor[Float32, CPU, Dim2](5, 2)   <- contracted dim: lhs has 3, rhs has 5
      built at : model.py:42
    hint: declare the weight as (3, 2) for an input of width 3.

Build messages with :func:`message` so that anatomy stays the same everywhere.
"""

from __future__ import annotations

import reprlib
from collections.abc import Collection, Sequence
from typing import TypeVar

__all__ = [
    "BackendUnavailableError",
    "DeviceError",
    "ElemTypeError",
    "EvaluationError",
    "LayerError",
    "NoImplementationError",
    "NotEvaluatedError",
    "NumericError",
    "OperandError",
    "PolicyConflictError",
    "PolicyError",
    "RankError",
    "SanitizerError",
    "ShapeError",
    "TopologyError",
    "TypedNNError",
    "bad_argument",
    "brief",
    "listed",
    "message",
    "received",
]


def message(
    headline: str,
    items: Sequence[tuple[str, str]] = (),
    *,
    built_at: str | None = None,
    hint: str | None = None,
) -> str:
    """Format an error message: headline, labelled items, the build site, one fix."""
    lines = [headline]
    labels = [label for label, _ in items] + (["built at"] if built_at else [])
    width = max((len(label) for label in labels), default=0)
    lines.extend(f"  {label:<{width}} : {text}" for label, text in items)
    if built_at:
        lines.append(f"  {'built at':<{width}} : {built_at}")
    if hint:
        lines.append(f"hint: {hint}")
    return "\n".join(lines)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 3, 60, 60, 6, 4


def brief(value: object, limit: int = 120) -> str:
    """``repr(value)``, bounded: long strings and containers elided, at most ``limit`` characters.

    For values a message did not choose (names and fields read from a file, user keys): a
    message stays a few lines however large or deeply nested the value is.
    """
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def received(value: object, limit: int = 200) -> str:
    """``value`` as a message shows what it received: its repr (bounded) and its type."""
    text = repr(value)
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"{text} ({type(value).__name__})"


E_ = TypeVar("E_", bound=Exception)


def bad_argument(
    error: type[E_], doing: str, name: str, allowed: str, value: object, hint: str
) -> E_:
    """``doing: name must be allowed.``, with what it allows beside what it received: the
    error of one argument of the wrong kind."""
    return error(
        message(
            f"{doing}: {name} must be {allowed}.",
            [("allowed", allowed), ("received", received(value))],
            hint=hint,
        )
    )


def flag(doing: str, name: str, value: object) -> bool:
    """``value`` as a bool where it is one (Python's or numpy's), else a ParamError: a truthy
    ``"no"`` would read as yes (numpy refuses a string for ``copy=`` and ``keepdims=`` too)."""
    if type(value) is bool:
        return value
    if type(value).__name__ == "bool" and type(value).__module__ == "numpy":  # np.bool_
        return bool(value)
    hint = f"pass {name}=True or {name}=False."
    raise bad_argument(ParamError, doing, name, "a bool", value, hint)


def listed(values: Collection[object], shown: int = 5) -> str:
    """The first ``shown`` values (each :func:`brief`), then how many more: a bounded list.

    >>> listed(["a", "b", "c"], shown=2)
    "'a', 'b' and 1 more (3 in all)"
    """
    head = ", ".join(brief(v, 60) for _, v in zip(range(shown), values, strict=False))
    rest = len(values) - shown
    return f"{head} and {rest:,} more ({len(values):,} in all)" if rest > 0 else head


class TypedNNError(Exception):
    """Base class of every error typed_nn raises on purpose."""


class ShapeError(TypedNNError, ValueError):
    """Sizes that do not fit: broadcasting, contraction, reshape, slicing, stacking."""


class RankError(ShapeError):
    """An array or shape whose number of dims differs from the declared rank tag."""


class ElemTypeError(TypedNNError, TypeError):
    """Element types that do not match (Float32 data where Float64 is declared, ...)."""


class OperandError(TypedNNError, TypeError):
    """Something that is not typed_nn data (a str, a list, ...) used as an operand."""


class DeviceError(TypedNNError, TypeError):
    """Operands that live on different devices, or data on the wrong device."""


class NoImplementationError(TypedNNError, NotImplementedError):
    """An op that the device's backend does not implement."""


class BackendUnavailableError(TypedNNError, RuntimeError):
    """A device whose backend library (cupy) or hardware is missing."""


class NotEvaluatedError(TypedNNError, RuntimeError):
    """Reading the data of a handle whose plan has not been evaluated yet."""


class EvaluationError(TypedNNError, RuntimeError):
    """A failure while computing a node; names the op and the line that built it."""


class SanitizerError(EvaluationError):
    """The sanitizer (``TYPED_NN_SANITIZE=1``, debug mode) caught the evaluator reusing memory
    wrongly: a step read memory not written yet or dead, wrote over a live value, left part of
    its value unwritten, or a result shares memory with an input."""


class NumericError(EvaluationError, FloatingPointError):
    """A NaN or Inf produced by a node, or an Int32 result that wrapped around (debug mode)."""


class LayerError(TypedNNError, ValueError):
    """A layer used against its protocol: wrong port, unset port, stack misuse."""


class TopologyError(TypedNNError, ValueError):
    """A composite layer topology that breaks one of MetaNN's rules."""


class PolicyError(TypedNNError, TypeError):
    """A policy declared wrongly: a minor its major lacks, a value of the wrong type."""


class PolicyConflictError(PolicyError):
    """Two policy objects of one (major, minor) in a container, whatever their values."""


class ModuleError(TypedNNError, TypeError):
    """A module field, tree or state dict that does not fit (DESIGN §5c)."""


class ParamError(TypedNNError, ValueError):
    """Model parameters used wrongly: an unknown or duplicate name, a bad filler or optimizer
    setting, an empty gradient (ParamInitializer, LoadBuffer, GradCollector, fillers, optim)."""


class ParamNotFoundError(ParamError, KeyError):
    """A parameter name a mapping of parameters (``LoadBuffer``) does not hold; also a
    ``KeyError``, so ``Mapping`` code (``get``, ``in``) treats it as a missing key."""

    # KeyError's str() is the repr of its argument; the message reads better as written.
    __str__ = BaseException.__str__


class WeightFileError(TypedNNError, ValueError):
    """A weight file that cannot be loaded or saved: corrupt, truncated, not matching the
    model, a folder or an unreadable path, or names the format cannot hold. The ``OSError``
    behind a path problem is its ``__cause__``."""


class WeightFileNotFoundError(WeightFileError, FileNotFoundError):
    """A weight file to load, or the folder to save one in, that does not exist. Also a
    ``FileNotFoundError``, so ``except FileNotFoundError`` (or ``OSError``) catches it too."""


class CheckpointError(WeightFileError):
    """A training checkpoint that does not belong to the model or optimizer it is loaded
    into, or whose metadata is damaged (typed_nn.model.load_checkpoint)."""


__all__ += ["CheckpointError", "ParamError", "WeightFileError", "WeightFileNotFoundError"]


class TrainingError(TypedNNError, ValueError):
    """Training set up wrongly: an unknown data set, a bad epoch count, batch size or
    monitored metric, a model whose output does not fit the targets (typed_nn.train)."""


class MissingDependencyError(TypedNNError, ImportError):
    """An optional package a feature needs is not installed (scikit-learn for the digits);
    the message names the extra that installs it (:func:`missing_dependency`)."""


class MissingBackendError(MissingDependencyError, BackendUnavailableError):
    """A device whose array library is not installed (cupy for the GPU): a missing
    dependency, and a backend that is not available."""


def missing_dependency(
    feature: str,
    package: str,
    extra: str,
    *,
    install: str | None = None,
    items: Sequence[tuple[str, str]] = (),
    error: type[MissingDependencyError] = MissingDependencyError,
) -> MissingDependencyError:
    """The error of ``feature`` needing ``package``, which is not installed: it names the
    extra that installs it and the command (``install``, by default ``pip install
    'typed_nn[extra]'``)."""
    command = install or f"pip install 'typed_nn[{extra}]'"
    return error(
        message(
            f"{feature} needs {package}, which is not installed.",
            items,
            hint=f"install the {extra} extra: {command}",
        )
    )


__all__ += ["MissingBackendError", "MissingDependencyError", "TrainingError", "missing_dependency"]


class OptionError(TypedNNError, ValueError):
    """An evaluator option given a value it cannot take (``typed_nn.evaluate.options``)."""


__all__ += ["OptionError"]


class ElemRangeError(ElemTypeError, ValueError):
    """Values that the declared element type cannot hold: a finite float64 value that would
    become inf in Float32, an integer outside Int32's range. Also a ``ValueError``: the values,
    not only their type, are wrong."""


class ReadOnlyError(TypedNNError, ValueError, BufferError):
    """A write (``assign``, ``evaluate(..., out=)``, a filler) into a tensor whose memory is
    read-only: an evaluated result, or a read-only numpy array shared with ``copy=False``; or
    a DLPack export of such a tensor asked for without a copy (hence a ``BufferError`` too)."""


class TagError(TypedNNError, TypeError):
    """Something that is not a tag of the right kind where an element, device or rank tag is
    expected (``tn.tensor(data, str, CPU, Dim1)``, tags in the wrong order)."""


__all__ += ["ElemRangeError", "ReadOnlyError", "TagError"]


class CompileError(TypedNNError, RuntimeError):
    """A function ``tn.compile`` cannot trace or replay: it evaluates while traced, returns
    something other than typed_nn data, returns a tensor it also assigns."""


class RetraceWarning(UserWarning):
    """A compiled function traced again and again: an argument's signature keeps changing."""


__all__ += ["CompileError", "RetraceWarning"]


class ExportError(TypedNNError, ValueError):
    """A function ``typed_nn.onnx.export`` cannot write as ONNX: an op with no ONNX
    counterpart, a function that assigns (an ONNX graph has no state), an opset out of range."""


__all__ += ["ExportError"]


class DistributedError(TypedNNError, RuntimeError):
    """Data-parallel training that cannot run as asked: ranks that disagree on the model, a
    global batch the ranks cannot share, a launcher whose MPI is not mpi4py's, GPU training
    under MPI without NCCL (typed_nn.distributed)."""


__all__ += ["DistributedError"]


class IndexRangeError(TypedNNError, IndexError):
    """An index value outside the range it selects from (an embedding row that does not
    exist); found when the indices are read, at feed time or at evaluation."""


__all__ += ["IndexRangeError"]

"""MetaNN's two-phase evaluation: register data, evaluate the plan once, read the handles.

::

    h1 = (a + b).eval_register()
    h2 = (a * b).eval_register()
    tn.EvalPlan.eval()          # computes everything registered, each node once
    h1.data(), h2.data()        # principal tensors

``evaluate(x)`` does all three for one value; ``evaluate(x, out=t)`` writes into ``t``.
The default plan is per thread (MetaNN master's global plan is not thread-safe).
"""

from __future__ import annotations

import threading
from typing import Any, cast

from ..data.tensor import UP, AnyTensor, EvalHandle, Tensor, TensorLike, check_writable
from ..errors import (
    CompileError,
    DeviceError,
    ElemTypeError,
    OperandError,
    ShapeError,
    message,
)
from ..ops.node import format_site, user_site
from ..ops.rules import describe, number_operand, wrap_hint
from ..tags import D, Dv, E, IntTag
from . import executor
from .trace import tracing

__all__ = ["EvalHandle", "EvalPlan", "evaluate", "register"]


class EvalPlan:
    """The registered, not yet computed values of one thread.

    ``EvalPlan.eval()`` evaluates the calling thread's plan; ``EvalPlan.current()`` returns it.
    """

    _local = threading.local()

    def __init__(self) -> None:
        self._pending: list[EvalHandle[Any, Any, Any]] = []

    @classmethod
    def current(cls) -> EvalPlan:
        """This thread's default plan."""
        plan: EvalPlan | None = getattr(cls._local, "plan", None)
        if plan is None:
            plan = cls()
            cls._local.plan = plan
        return plan

    @classmethod
    def eval(cls) -> None:
        """Compute everything registered in this thread's plan."""
        cls.current().run()

    def add(self, x: TensorLike[E, Dv, D]) -> EvalHandle[E, Dv, D]:
        """Register ``x``; a principal tensor is ready at once (MetaNN's const handle)."""
        if not isinstance(x, TensorLike):
            raise OperandError(
                message(
                    f"cannot register {type(x).__name__}: it is not typed_nn data.",
                    hint="wrap arrays with tn.tensor(array, elem, device, dim).",
                )
            )
        handle = EvalHandle(x)
        if type(x) is Tensor:
            handle._result = x
        else:
            self._pending.append(handle)
        return handle

    def pending(self) -> int:
        """How many registered values wait for ``eval()``."""
        return len(self._pending)

    def run(
        self, out: tuple[EvalHandle[Any, Any, Any], Tensor[Any, Any, Any]] | None = None
    ) -> None:
        """Compute every pending value (shared nodes once) and fill the handles.

        ``out`` asks for one pending handle's value to be written into a given tensor.
        """
        handles, self._pending = self._pending, []
        if not handles:
            return
        targets = {i: out[1] for i, h in enumerate(handles) if out is not None and h is out[0]}
        results = executor.execute([h._source for h in handles], targets)
        for handle, result in zip(handles, results, strict=True):
            handle._result = result


def register(x: TensorLike[E, Dv, D]) -> EvalHandle[E, Dv, D]:
    """Register ``x`` in this thread's plan (``x.eval_register()``)."""
    if tracing() is not None:
        raise _evaluating_while_traced(x)
    return EvalPlan.current().add(x)


def _traced(trace: Any, x: TensorLike[E, Dv, D], out: Tensor[E, Dv, D] | None) -> Tensor[E, Dv, D]:
    """``evaluate`` while ``tn.compile`` traces: an ``out=`` write is recorded, to happen when
    the compiled step runs (after every read of ``out``); anything else is an error."""
    if out is None:
        raise _evaluating_while_traced(x)
    _check_out(x, out)
    trace.assign(out, x)
    return out


def _evaluating_while_traced(x: AnyTensor) -> CompileError:
    return CompileError(
        message(
            "cannot evaluate inside a function tn.compile traces: it would run once, at "
            "trace time, and its numbers would be frozen into the compiled step.",
            [("value", x.describe())],
            built_at=format_site(user_site()),
            hint="return the value from the compiled function (it comes back evaluated), or "
            "write it into a tensor with t.assign(value).",
        )
    )


def evaluate(x: TensorLike[E, Dv, D], out: Tensor[E, Dv, D] | None = None) -> Tensor[E, Dv, D]:
    """Compute ``x`` (and whatever else this thread registered) into a principal tensor.

    With ``out``, the values are written into that preallocated tensor, which is returned.
    Inside a function ``tn.compile`` traces, ``evaluate(x, out=t)`` (``t.assign(x)``) is
    recorded as an update of ``t``, and ``evaluate(x)`` is an error.
    """
    if not isinstance(x, TensorLike):
        raise _not_data(x, out)
    trace = tracing()
    if trace is not None:
        return _traced(trace, x, out)
    plan = EvalPlan.current()
    if out is None and not plan._pending and type(x) is not Tensor:
        # the one value to compute (an eager loop's case): no handle to register and read
        results: list[Tensor[E, Dv, D]] = executor.execute([x])
        return results[0]
    if out is not None:
        _check_out(x, out)
    handle = register(x)
    plan.run((handle, out) if out is not None else None)
    result = handle.data()
    if out is None:
        return result
    if result is not out:
        executor.copy_into(result, out)
        handle._result = out
    # out's memory changed: cached results that read it are stale.
    executor.invalidate_caches()
    return out


def _not_data(x: object, out: object) -> OperandError:
    """``evaluate`` (or a write into ``out``) given what is not typed_nn data."""
    what, doing, hint = "x", "cannot evaluate", wrap_hint(x)
    if isinstance(out, Tensor):
        what = "value"
        doing = "cannot write a value into a tensor (t.assign(value), tn.evaluate(value, out=t))"
        hint = wrap_hint(x, out.elem)
        number = float(cast(float, x)) if number_operand(x) else None
        if number is not None:
            whole = issubclass(out.elem, IntTag)
            fill = round(number) if whole else number
            tags = f"tn.{out.elem.__name__}, tn.{out.device.__name__}"
            hint = f"to fill it with a number: t.assign(tn.zeros({out.shape}, {tags}) + {fill!r})"
            hint += f" ({out.elem.__name__} holds whole numbers)." if whole else "."
    return OperandError(
        message(
            f"{doing}: {what} must be typed_nn data (a tensor or an expression).",
            [("received", describe(x)), ("accepted", "typed_nn data (a tensor or an expression)")],
            built_at=format_site(user_site()),
            hint=hint,
        )
    )


def _check_out(x: AnyTensor, out: AnyTensor) -> None:
    if not isinstance(out, Tensor):
        raise OperandError(
            message(
                "evaluate(..., out=) needs a principal tensor to write into.",
                [("out", repr(out))],
                hint="allocate one with tn.zeros(shape, elem, device).",
            )
        )
    check_writable(out, "evaluate into out")
    problems = [
        (error, what, want)
        for error, what, have, want in (
            (ShapeError, "shape", x.shape, out.shape),
            (ElemTypeError, "element", x.elem, out.elem),
            (DeviceError, "device", x.device, out.device),
        )
        if have != want
    ]
    if problems:
        whats = " and ".join(what for _, what, _ in problems)
        wants = " and ".join(f"{what} {_named(want)}" for _, what, want in problems)
        raise problems[0][0](
            message(
                "cannot write a value into a tensor (t.assign(value), tn.evaluate(value, "
                f"out=t)): the {whats} {'differ' if len(problems) > 1 else 'differs'}.",
                [("value", x.describe()), ("tensor", out.describe())],
                built_at=format_site(user_site()),
                hint=f"give the value the tensor's {wants}; or write into a tensor made like "
                f"the value: tn.zeros({x.shape}, tn.{x.elem.__name__}, tn.{x.device.__name__}).",
            )
        )


def _named(v: Any) -> str:
    return v.__name__ if isinstance(v, type) else str(v)


# data/ cannot import the evaluator; ``x.numpy()``, ``x.eval_register()`` and
# ``Tensor.assign`` reach it through data/tensor.py's UP.
UP.evaluate = evaluate
UP.register = register

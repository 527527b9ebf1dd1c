"""Record every op call the CPU backend makes, then replay the calls on another device.

The GPU op suite evaluates the differential harness's random graphs (every catalogue op) on
the CPU while a recorder wraps each CPU implementation; each recorded call — operands,
parameters, result — is then run with the GPU implementation and the results compared.
Replaying onto the CPU itself checks the harness on machines without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn.ops import declare
from typed_nn.tags import DeviceTag


@dataclass
class Call:
    """One implementation call: the op, its operands and params, and what the CPU returned."""

    op: str
    args: tuple[Any, ...]
    result: Any


def _copy(v: Any) -> Any:
    return v.copy() if isinstance(v, np.ndarray) else v


def record_cpu_calls(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Wrap every CPU implementation (in a copy of the registry) so its calls land in the
    returned list. Wrapped implementations are no longer the plain forms of the write-into
    ones, so the evaluator calls them for every node (nothing is fused away)."""
    calls: list[Call] = []
    table = type(declare._IMPLS)()
    for op, per_device in declare._IMPLS.items():
        copy = type(per_device)({dev: list(v) for dev, v in per_device.items()})
        if "CPU" in copy:
            copy["CPU"] = [
                declare.Kernel(k.priority, _recording(op, k.fn, calls)) for k in copy["CPU"]
            ]
        table[op] = copy
    monkeypatch.setattr(declare, "_IMPLS", table)
    return calls


def _recording(op: str, fn: Callable[..., Any], calls: list[Call]) -> Callable[..., Any]:
    def impl(*args: Any) -> Any:
        result = fn(*args)
        calls.append(Call(op, tuple(map(_copy, args)), _copy(result)))
        return result

    return impl


def replay(calls: list[Call], device: type[DeviceTag], to_device: Callable[[Any], Any]) -> set[str]:
    """Run each call with ``device``'s implementation (numpy operands moved by ``to_device``,
    a CPU tag parameter replaced by ``device``); assert each result equals the CPU's within
    the dtype's tolerance. Returns the ops replayed."""
    from helpers import tolerance

    done: set[str] = set()
    for call in list(calls):  # replaying on the CPU records again
        impl = declare.implementation(call.op, device)
        with np.errstate(all="ignore"):
            got = impl(*(_move(v, device, to_device) for v in call.args))
        host = tn.devices.to_host(got) if not isinstance(got, np.ndarray) else got
        expected = np.asarray(call.result)
        assert host.shape == expected.shape, call.op
        assert host.dtype == expected.dtype, call.op
        if expected.dtype.kind == "f":
            tol = tolerance(tn.Float32 if expected.dtype == np.float32 else tn.Float64)
            rtol, atol = tol["rtol"], tol["atol"]
            np.testing.assert_allclose(host, expected, rtol=rtol, atol=atol, err_msg=call.op)
        else:
            np.testing.assert_array_equal(host, expected, err_msg=call.op)
        done.add(call.op)
    return done


def _move(v: Any, device: type[DeviceTag], to_device: Callable[[Any], Any]) -> Any:
    """Arrays onto ``device``; numpy scalars too (the CPU's 0-d values are a GPU's 0-d arrays)."""
    if isinstance(v, np.ndarray | np.generic):
        return to_device(v)
    return device if v is tn.CPU else v

"""Replay a compiled Step's program as one device graph (a CUDA graph on cupy).

Where the Step's device offers graphs (``Device.step_graph``), the program itself is captured
after its first plain run (its kernels compiled) and every later call launches the capture:
no second executor. A call whose tensor arguments are other arrays than the captured ones
captures once more, reading buffers of its own that each call's arrays are copied into. Where
capture is not possible the program runs plainly, and :attr:`GraphReplay.status` says why.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..devices import device_of
from .codegen import Program
from .executor import FAILED, _run
from .options import options, stats

__all__ = ["GraphReplay", "graph_replay"]

REPLAYING = "replaying a CUDA graph"


class GraphReplay:
    """How a Step's program runs as a graph: waiting for its plain first run, replaying, or
    off (with the reason)."""

    def __init__(self, program: Program, make: Any, fresh: list[bool]) -> None:
        self.program = program
        self.make = make  # the device's ``step_graph``
        self.fresh = fresh  # per output: computed by the program (copied out of the graph's memory)
        self.graph: Any = None
        self.owned = False  # the graph reads buffers of its own (each call's arrays copied in)
        self.warm = False
        self.off = False
        self.status = "waiting: captured at the call after the first"

    def run(self, arrays: list[Any], numbers: list[float]) -> Any:
        """The program's outputs for a call (FAILED as ``executor._run`` gives it)."""
        graph = self.graph
        if graph is not None:
            values = graph.replay(arrays, numbers, self.fresh)
            if values is not None:
                stats.graph_replays += 1
                return values
            self.owned = True  # another array than the captured one: capture again, copying in
        elif self.off or not self.warm:
            self.warm = True  # the first run compiles the kernels the capture records
            return _run(self.program, arrays, numbers)
        return self._capture(arrays, numbers)

    def _capture(self, arrays: list[Any], numbers: list[float]) -> Any:
        """Run the program for this call on the graph's stream and memory, then capture it."""
        program = self.program
        n = len(numbers)
        graph = self.make(arrays, [program.number_dtypes.get(i) for i in range(n)], self.owned)
        graph.write_numbers(numbers)
        inputs, scalars = graph.inputs, graph.numbers
        self.graph = None
        with graph.recording():
            values = _run(program, inputs, scalars)
            if values is not FAILED:
                try:
                    graph.capture(lambda: program.fn(inputs, scalars, np.empty))
                except Exception as exc:
                    self.stop(f"capture failed: {_reason(exc)}")
        if values is FAILED:
            self.stop("the program failed with device scalars for its numbers")
            return FAILED
        if not self.off:
            self.graph = graph
            stats.graph_captures += 1
            self.status = REPLAYING + (" (arguments copied in)" if self.owned else "")
        return graph.hand_out(values, self.fresh)

    def stop(self, reason: str) -> None:
        """Run the program plainly from now on, saying why."""
        self.off, self.graph = True, None
        self.status = f"plain: {reason}"
        stats.graph_fallbacks += 1


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0][:200] if text else ""
    if "StreamCapture" in first or "capturing" in first:
        first += " (a host synchronisation or an operation CUDA cannot capture in the step)"
    return f"{type(exc).__name__}: {first}"


def graph_replay(
    program: Program, fresh: list[bool], wanted: bool | None
) -> tuple[GraphReplay | None, str]:
    """The replay of a Step's ``program`` (None where it cannot be one) and its status.
    ``wanted``: ``tn.compile``'s ``cuda_graph`` (None: ``options.cuda_graphs``)."""
    if not (options.cuda_graphs if wanted is None else wanted):
        switch = "cuda_graph=False" if wanted is False else "options.cuda_graphs is False"
        return None, f"plain: switched off ({switch})"
    devices = program.devices
    makers = {device_of(d).step_graph for d in devices}
    if len(devices) != 1 or None in makers:
        names = ", ".join(sorted(d.__name__ for d in devices)) or "no device"
        return None, f"plain: the step computes on {names} (graphs need one GPU)"
    if options.sanitize:
        return None, "plain: the sanitizer checks every step on the host"
    mixed = sorted(i for i, d in program.number_dtypes.items() if d is None)
    if mixed:
        return (
            None,
            f"plain: float argument(s) {mixed} feed operands of two dtypes or a non-float op",
        )
    (make,) = makers
    return GraphReplay(program, make, fresh), "waiting: captured at the call after the first"

"""Switches for the evaluator's optimisations, and counters that show what they did.

Every optimisation is on by default; tests switch them off to compare::

    from typed_nn.evaluate import options, stats
    with options.using(fuse=False, pool=False):
        tn.evaluate(expr)
    stats.kernel_calls["matmul"]   # how many times the matmul kernel ran

``cse`` merges identical sub-trees, ``rewrite`` applies the algebraic rules, ``fuse`` runs
element-wise regions as one blocked pass, ``pool`` recycles large buffers, ``batch`` merges
independent registrations of the same op, ``plan_cache`` reuses analysed schedules,
``specialise`` compiles kernels for each node's exact shapes and parameters, ``sanitize``
checks every step's memory as it runs (slow; ``TYPED_NN_SANITIZE=1`` turns it on at import),
``cuda_graphs`` replays a compiled GPU step as one CUDA graph (``tn.compile``'s ``cuda_graph``
overrides it per function; read when a signature is traced; see docs/gpu.md).

Beside the flags, ``pool_max_bytes`` bounds the bytes each thread's buffer pool keeps
(:data:`POOL_MAX_BYTES` by default; ``options.pool_max_bytes = 64 << 20`` or
``options.using(pool_max_bytes=...)``). Setting it trims the calling thread's pool at once,
other threads' pools when they next allocate a buffer they do not have.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Generator
from contextlib import contextmanager

from ..errors import OptionError, message

__all__ = ["POOL_LIMIT_LISTENERS", "POOL_MAX_BYTES", "EvalOptions", "EvalStats", "options", "stats"]

POOL_MAX_BYTES = 512 << 20
"""Default bound of a thread's buffer pool, in bytes (512 MiB): above the working sets the
benchmarks reach (4 MB for the 784-512-256-10 MLP, 120 MB for element-wise chains over 10^7
floats), while a stream of ever new shapes can no longer grow the pool without end."""

SANITIZE_ENV = "TYPED_NN_SANITIZE"
"""Set to ``1`` to run every plan under the sanitizer (``evaluate/sanitize.py``) from import on."""

POOL_LIMIT_LISTENERS: list[Callable[[], None]] = []
"""Called when ``options.pool_max_bytes`` is set (the buffer pool trims the calling thread's
pool; it reads the options, so it registers here rather than being imported)."""


class EvalOptions:
    """The evaluator's flags (process-wide; change them with :meth:`using`)."""

    flags = (
        *("batch", "cse", "cuda_graphs", "fuse", "plan_cache", "pool", "rewrite", "sanitize"),
        "specialise",
    )
    """The switches' names."""
    settings = ("pool_max_bytes",)
    """The other options (numbers; they do not change compiled schedules)."""
    __slots__ = ("_key", *flags, *settings)
    pool_max_bytes: int
    """Bytes each thread's buffer pool keeps at most (least recently used sizes go first)."""

    def __init__(self) -> None:
        self._key: tuple[bool, ...] | None = None
        self.cse = True
        self.rewrite = True
        self.fuse = True
        self.pool = True
        self.batch = True
        self.plan_cache = True
        self.specialise = True
        self.cuda_graphs = True
        self.sanitize = os.environ.get(SANITIZE_ENV, "").strip().lower() in (
            "1",
            "true",
            "yes",
            "on",
        )
        object.__setattr__(self, "pool_max_bytes", POOL_MAX_BYTES)  # no pool to trim yet

    def __setattr__(self, name: str, value: object) -> None:
        if name == "pool_max_bytes" and not (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0
        ):
            raise OptionError(
                message(
                    "cannot set the evaluator option pool_max_bytes.",
                    [("expected", "an int >= 0 (bytes)"), ("received", repr(value)[:80])],
                    hint="pass a byte count, e.g. options.pool_max_bytes = 256 << 20 (256 MiB).",
                )
            )
        object.__setattr__(self, name, value)
        if name in EvalOptions.flags:
            object.__setattr__(self, "_key", None)
        elif name == "pool_max_bytes":  # this thread's pool at once; others at their next miss
            for listener in POOL_LIMIT_LISTENERS:
                listener()

    def key(self) -> tuple[bool, ...]:
        """The flags that change a compiled schedule (part of the plan-cache key); the same
        tuple object until a flag changes."""
        key = self._key
        if key is None:
            key = self._key = (
                self.cse,
                self.rewrite,
                self.fuse,
                self.pool,
                self.batch,
                self.specialise,
                self.sanitize,
            )
        return key

    @contextmanager
    def using(self, **changes: bool | int) -> Generator[EvalOptions, None, None]:
        """Set some options (flags, ``pool_max_bytes``) for the duration of a ``with`` block,
        then restore them."""
        unknown = set(changes) - set(self.flags) - set(self.settings)
        if unknown:
            raise TypeError(f"unknown evaluator option(s): {', '.join(sorted(unknown))}")
        saved = {name: getattr(self, name) for name in changes}
        try:
            for name, value in changes.items():
                setattr(self, name, bool(value) if name in self.flags else value)
            yield self
        finally:
            for name, value in saved.items():
                setattr(self, name, value)

    def __repr__(self) -> str:
        on = ", ".join(f"{n}={getattr(self, n)}" for n in (*self.flags, *self.settings))
        return f"EvalOptions({on})"


class EvalStats:
    """What the evaluator did since the last :meth:`reset` (for tests and benchmarks)."""

    def __init__(self) -> None:
        self.kernel_calls: Counter[str] = Counter()
        """Op name -> nodes computed by that op (a fused region counts each op once)."""
        self.rewrites: Counter[str] = Counter()
        """Rule name -> times it fired while a plan was analysed."""
        self.analyses = 0
        """Plans analysed (a plan-cache hit does not count)."""
        self.plan_hits = 0
        self.fused_regions = 0
        """Fused passes compiled with two or more ops."""
        self.batched = 0
        """Groups of registrations merged into one call, counted when analysed."""
        self.fallbacks = 0
        """Programs that failed before writing a target and were re-run node by node
        (``executor.by_node``)."""
        self.graph_captures = 0
        """Compiled steps captured as a device graph."""
        self.graph_replays = 0
        """Calls of compiled steps that launched their captured graph."""
        self.graph_fallbacks = 0
        """Compiled steps whose capture was not possible (they run plainly; see
        ``Compiled.graph_status``)."""
        self.counting: bool = getattr(self, "counting", False)
        """Count ``kernel_calls`` on every run (off by default: it costs a little per run)."""

    def reset(self) -> None:
        """Zero every counter."""
        self.__init__()  # type: ignore[misc]


options = EvalOptions()
"""The process-wide evaluator switches."""
stats = EvalStats()
"""The process-wide evaluator counters."""

"""Switches for the evaluator's optimisations, and counters that show what they did.

Every optimisation is on by default; tests switch them off to compare::

    from typed_nn.evaluate import options, stats
    with options.using(fuse=False, pool=False):
        tn.evaluate(expr)
    stats.kernel_calls["add"]      # how many times the add kernel ran

``cse`` merges identical sub-trees, ``rewrite`` applies the algebraic rules, ``fuse`` runs
element-wise regions as one blocked pass, ``pool`` recycles large buffers, ``batch`` merges
independent registrations of the same op, ``plan_cache`` reuses analysed schedules,
``specialise`` compiles kernels for each node's exact shapes and parameters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["EvalOptions", "EvalStats", "options", "stats"]


class EvalOptions:
    """The evaluator's flags (process-wide; change them with :meth:`using`)."""

    flags = ("batch", "cse", "fuse", "plan_cache", "pool", "rewrite", "specialise")
    """The switches' names."""
    __slots__ = ("_key", *flags)

    def __init__(self) -> None:
        self._key: tuple[bool, ...] | None = None
        self.cse = True
        self.rewrite = True
        self.fuse = True
        self.pool = True
        self.batch = True
        self.plan_cache = True
        self.specialise = True

    def __setattr__(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)
        if name != "_key":
            object.__setattr__(self, "_key", None)

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
            )
        return key

    @contextmanager
    def using(self, **flags: bool) -> Iterator[EvalOptions]:
        """Set some flags for the duration of a ``with`` block, then restore them."""
        unknown = set(flags) - set(self.flags)
        if unknown:
            raise TypeError(f"unknown evaluator option(s): {', '.join(sorted(unknown))}")
        saved = {name: getattr(self, name) for name in flags}
        try:
            for name, value in flags.items():
                setattr(self, name, bool(value))
            yield self
        finally:
            for name, value in saved.items():
                setattr(self, name, value)

    def __repr__(self) -> str:
        on = ", ".join(f"{n}={getattr(self, n)}" for n in self.flags)
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
        """Compiled runs that failed and were re-run by the reference evaluator."""
        self.counting: bool = getattr(self, "counting", False)
        """Count ``kernel_calls`` on every run (off by default: it costs a little per run)."""

    def reset(self) -> None:
        """Zero every counter."""
        self.__init__()  # type: ignore[misc]


options = EvalOptions()
"""The process-wide evaluator switches."""
stats = EvalStats()
"""The process-wide evaluator counters."""

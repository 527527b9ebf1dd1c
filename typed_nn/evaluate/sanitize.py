"""The sanitizer: checks, while a plan runs, that its memory reuse keeps every value intact.

docs/evaluation.md ("Memory") says what it checks. A sanitized plan (the flag is part of the
plan key) calls ``before``/``after`` around each step; the checks watch the arrays themselves,
knowing nothing of how the planner decided. A violation raises ``SanitizerError`` naming the node.
"""

from __future__ import annotations

import weakref
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..errors import SanitizerError, message

__all__ = ["Sanitizer", "about", "forget", "poison", "remember", "verify"]

# Signalling NaNs with a payload no computation makes; arithmetic keeps the payload (quieted),
# so a value computed from the sentinel is caught too.
_SENTINEL: dict[np.dtype[Any], tuple[Any, int, int]] = {
    np.dtype(np.float32): (np.uint32, 0x7FA5A5A5, 0x00400000),
    np.dtype(np.float64): (np.uint64, 0x7FF4A5A5A5A5A5A5, 0x0008000000000000),
}


def poison(array: Any) -> Any:
    """Fill a host array with the sentinel (integers with a pattern); returns it."""
    if type(array) is not np.ndarray or not array.flags.writeable:
        return array
    found = _SENTINEL.get(array.dtype)
    if found is not None:
        array.view(found[0])[...] = found[1]
    elif array.dtype.kind in "iu":
        array[...] = np.iinfo(array.dtype).max // 3
    return array


def _poisoned(array: Any) -> bool:
    """Whether a host float array holds the sentinel anywhere (quietened or not)."""
    if type(array) is not np.ndarray or array.size == 0:
        return False
    found = _SENTINEL.get(array.dtype)
    if found is None:
        return False
    uint, bits, quiet = found
    return bool(((array.view(uint) | uint(quiet)) == uint(bits | quiet)).any())


def _bytes(array: Any) -> int:
    """A checksum of a host array's values (0 for another device's: not checked)."""
    if type(array) is not np.ndarray or not array.size:
        return 0
    return zlib.crc32(np.ascontiguousarray(array).tobytes())


def _same_memory(a: Any, b: Any) -> bool:
    """Whether two arrays are the same elements of the same memory."""
    if b is None:
        return False
    ia, ib = a.__array_interface__, b.__array_interface__
    return bool(ia["data"][0] == ib["data"][0] and a.strides == b.strides and a.shape == b.shape)


def about(obj: Any, op: str) -> tuple[str, Any]:
    """How a message shows a node: its description and the line that built it."""
    if not hasattr(obj, "describe"):  # a node a rewrite made, or a plan's structure only
        return op, None
    return obj.describe(), getattr(obj, "built_at", None)


def _base(array: Any) -> Any:
    """The array that owns ``array``'s memory (numpy keeps one owner as ``base``)."""
    while isinstance(array, np.ndarray) and isinstance(array.base, np.ndarray):
        array = array.base
    return array


class Sanitizer:
    """The checks of one generated program: ``order``, its steps; ``writes``, those that write
    into a buffer (the others may return views); ``escaping``, values handed out (returned or
    cached); ``returned``, roots handed out as computed values; ``kept``, the program's own
    buffers. (``g`` is untyped: graph.py imports collect.py, which imports this module.)"""

    def __init__(
        self,
        g: Any,
        order: list[int],
        regions: dict[int, list[int]],
        writes: set[int],
        escaping: set[int],
        returned: Iterable[int],
        kept: Callable[[], Iterable[Any]],
    ) -> None:
        self.writes, self.escaping, self.kept = writes, escaping, kept
        self.returned = sorted(returned)
        self.nodes = g.structure().nodes  # a cached plan keeps no data of its evaluation
        self.about = [about(n.obj, n.op) for n in g.nodes]
        self.position = {s: i for i, s in enumerate(order)}
        for root, members in regions.items():
            for m in members:
                self.position[m] = self.position[root]
        never = len(order)
        self.last_read = {s: -1 for s in order}
        for s in order:
            for m in regions.get(s, [s]):
                for a in self.nodes[m].args:
                    if type(a) is not tuple and a in self.last_read:
                        self.last_read[a] = max(self.last_read[a], self.position[s])
        for s in escaping:
            self.last_read[s] = never
        self.values: dict[int, tuple[Any, int]] = {}
        self.last: dict[int, int] = {}
        self.viewed: dict[int, list[int]] = {}
        """Value -> the values its memory lives on in (it is a view of them)."""
        self.owned: set[int] = set()
        self.operands_only = False
        """Check after a step only the live values it read: a by-node program shares no
        buffer, so a step can change nothing else; checking every live value after every step
        made debug mode's training loops several times slower."""

    def start(self) -> None:
        """A run begins: the buffers the program keeps hold nothing yet."""
        self.values, self.last, self.viewed = {}, {}, {}
        self.owned = set()
        for array in self.kept():
            self.owned.add(id(_base(poison(array))))

    def alloc(self, allocate: Any, shape: tuple[int, ...], dtype: Any) -> Any:
        """A fresh buffer from ``allocate`` (the pool or ``np.empty``), filled with the sentinel."""
        array = poison(allocate(shape, dtype))
        self.owned.add(id(_base(array)))
        return array

    def before(self, s: int, *operands: Any) -> None:
        """Step ``s`` is about to read ``operands``."""
        for k, a in enumerate(operands):
            if _poisoned(a):
                self._fail(s, f"operand {k + 1} holds memory not written yet, or no longer live")

    def after(self, s: int, value: Any) -> None:
        """Step ``s`` (a leaf, a view or a computation) made ``value``."""
        n = self.nodes[s]
        here = self.position[s]
        if type(value) is not np.ndarray:
            return  # another device's value: the sanitizer checks host memory only
        if _poisoned(value) and n.op != "leaf":
            self._fail(s, "its value has elements the step did not write")
        if n.op != "leaf":
            self._check_operands(s, n, value)
        self.last[s] = self.last_read.get(s, here)
        for t in self._watched(s, n):
            array, check = self.values[t]
            if self.last[t] > here and _bytes(array) != check:
                self._fail(s, f"it changed the live value of node {t} ({self.nodes[t].op})")
        self.values[s] = (value, _bytes(value))
        self._release(here, value)

    def _watched(self, s: int, n: Any) -> Any:
        """The live values to check after step ``s``: all, or only its operands (a write
        through an operand that is a view changes that view's own bytes too)."""
        if not self.operands_only:
            return list(self.values)
        return [a for a in n.args if type(a) is not tuple and a in self.values]

    def finish(self, *values: Any) -> None:
        """The run ended: no returned value (of ``returned``) shares memory with an input or a
        kept buffer."""
        inputs = [a for t, (a, _) in self.values.items() if self.nodes[t].op == "leaf"]
        inputs += list(self.kept())
        for r, value in zip(self.returned, values, strict=True):
            if type(value) is np.ndarray and any(np.shares_memory(value, a) for a in inputs):
                self._fail(
                    r,
                    "the value it hands out (returns, or caches on its node) shares memory "
                    "with an input or a kept buffer",
                )
        self.values, self.last, self.viewed = {}, {}, {}

    def _check_operands(self, s: int, n: Any, value: Any) -> None:
        """A writing step's value overlaps no operand but one it overwrites element for element;
        another step's value that overlaps an operand is its view."""
        elementwise = n.decl is not None and n.decl.kind == "elementwise"
        for k, a in enumerate(n.args):
            if type(a) is tuple or a not in self.values:  # a number, or no value of its own
                continue
            array = self.values[a][0]
            if not np.shares_memory(value, array):
                continue
            view = n.op == "alias" or (n.decl is not None and n.decl.kind == "view")
            if s not in self.writes and view:
                self.viewed.setdefault(s, []).append(a)
                continue
            if s not in self.writes:
                self._fail(
                    s,
                    f"its kernel returned a view of operand {k + 1} (node {a}), which "
                    "only a layout op may",
                )
            if elementwise and _same_memory(array, value):
                continue  # each element read, then written
            if _same_memory(array, self._block(n, k, value)):
                continue  # a gather's operand computed in its place: nothing written
            self._fail(s, f"it writes its value over operand {k + 1} (node {a}) while reading it")

    def _block(self, n: Any, k: int, value: Any) -> Any:
        """Where a concat or stack puts its operand ``k`` in its ``value`` (None: another op)."""
        if n.op not in ("concat", "stack"):
            return None
        (axis,) = n.params
        lead = (slice(None),) * axis
        if n.op == "stack":
            return value[(*lead, k, ...)]  # a view, a 0-d one too
        sizes = [self.nodes[a].shape[axis] for a in n.args]
        start = sum(sizes[:k])
        return value[(*lead, slice(start, start + sizes[k]))]

    def _release(self, here: int, value: Any) -> None:
        """Extend the life of what new views live on; fill dead values' memory with the
        sentinel where the evaluator owns it and nothing live shares it."""
        for s, parents in self.viewed.items():
            for p in parents:
                if self.last.get(p, -1) < self.last.get(s, -1):
                    self.last[p] = self.last[s]
        dead = [t for t in self.values if self.last[t] == here]
        live = [a for t, (a, _) in self.values.items() if self.last[t] > here]
        for t in dead:
            array = self.values[t][0]
            if id(_base(array)) not in self.owned or self.nodes[t].op == "leaf":
                continue
            if not any(np.shares_memory(array, a) for a in [*live, value]):
                poison(array)

    def _fail(self, s: int, what: str) -> None:
        shown, built_at = self.about[s]
        raise SanitizerError(
            message(
                f"the sanitizer stopped evaluation at node {s} ({self.nodes[s].op}): {what}.",
                [("node", shown)],
                built_at=built_at,
                hint="this is a typed_nn bug in how the evaluator reuses memory; evaluate with "
                "options.using(fuse=False, specialise=False) to work around it, and report it.",
            )
        )


_CACHED: dict[int, tuple[int, Any, int]] = {}
"""id(node) -> (cache epoch, a weak reference to its cached value's memory, its checksum); the
memory compared by identity, so a dead node's entry never matches a new node with its id."""


def apart_from_targets(objs: list[Any], computed: dict[int, Any], targets: list[Any]) -> None:
    """Raise when a value an evaluation hands out (a handle's, a node's cache) shares memory
    with a target it wrote: the next write into the target would change it."""
    for s, value in computed.items():
        array = getattr(value, "_array", value)
        if type(array) is np.ndarray and any(np.shares_memory(array, t) for t in targets):
            node = objs[s]
            raise SanitizerError(
                message(
                    "the sanitizer found a value handed out in a target's memory.",
                    [("node", node.describe())],
                    built_at=getattr(node, "built_at", None),
                    hint="this is a typed_nn bug in how the evaluator reuses memory; report "
                    "it with the expression.",
                )
            )


def remember(node: Any, value: Any, epoch: int) -> None:
    """Record the bytes of the value cached on ``node`` (host arrays only)."""
    array = getattr(value, "_array", value)
    if type(array) is np.ndarray:
        _CACHED[id(node)] = (epoch, weakref.ref(_base(array)), _bytes(array))


def verify(node: Any, value: Any, epoch: int) -> None:
    """Raise when the value cached on ``node`` changed since it was cached."""
    found = _CACHED.get(id(node))
    array = getattr(value, "_array", value)
    if found is None or found[0] != epoch or found[1]() is not _base(array):
        return
    if _bytes(array) != found[2]:
        raise SanitizerError(
            message(
                "the sanitizer found a cached result changed after it was computed.",
                [("node", node.describe())],
                built_at=node.built_at,
                hint="something wrote into memory handed out by evaluation (a consumer of "
                "__dlpack__ or of .numpy() that ignores the read-only flag); copy a result "
                "before writing into it.",
            )
        )


def forget() -> None:
    """Drop the recorded checksums (the cache epoch moved on: none of them is valid)."""
    _CACHED.clear()

"""Collect the registered values into a hash-consed graph with a structural signature.

One depth-first pass gives every distinct value a *slot*, operands before users. Leaves are
principal tensors, nodes whose cached result is still valid, and (inline) Python numbers.
With common-subexpression elimination on, a node's slot is keyed by (op, params, operand
slots), so identical sub-trees built separately share one slot and are computed once; leaf
tensors are keyed by their provenance identity (same memory, shape and strides).

The per-slot ``sig`` items describe structure only (ops, params, operand slots, leaf shapes
and dtypes); the tuple of them is the plan-cache key, so a training step that rebuilds the
same graph over new values finds its analysed schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..data.tensor import Tensor
from ..ops.node import Operation
from . import sanitize
from .cache import result_tensor
from .options import options

__all__ = ["Collected", "collect"]

_Tensor = Tensor
_Operation = Operation


class Collected:
    """The graph of one evaluation.

    ``env[s]`` is the leaf value of slot ``s`` (an array) or None for a node; ``objs[s]`` the
    data object of the slot (for nodes, the first Operation seen); ``sig[s]`` its structural
    item; ``roots`` the slots of the registered values; ``merged`` the (slot, Operation)
    pairs that CSE folded into an earlier slot (they receive the same cached result);
    ``leaves`` every leaf tensor object seen, with its slot; ``cached`` how many nodes were
    taken as leaves because their cached result was still valid; ``keep`` the data objects
    that were lowered.
    """

    __slots__ = ("cached", "env", "keep", "leaves", "merged", "objs", "roots", "sig")

    def __init__(self) -> None:
        self.env: list[Any] = []
        self.objs: list[Any] = []
        self.sig: list[Any] = []
        self.roots: list[int] = []
        self.merged: list[tuple[int, Any]] = []
        self.keep: list[Any] = []
        self.leaves: list[tuple[Any, int]] = []
        self.cached = 0


def _lower(x: Any, col: Collected) -> Any:
    """Tensors and nodes as they are; other data kinds through their ``lower()``."""
    while not isinstance(x, _Tensor | _Operation):
        col.keep.append(x)  # keeps its id unique while the pass runs
        x = x.lower()
    return x


_POST = object()
"""Stack marker: the node below it has had its operands collected."""


def collect(roots: Sequence[Any], cse: bool, epoch: int, *, by_object: bool = False) -> Collected:
    """Slots for everything ``roots`` need that is not cached yet (see the module doc).

    ``by_object``: every leaf tensor object is a slot of its own, whatever memory it shares
    (``tn.compile``: each is bound to its own array at every call).
    """
    col = Collected()
    if len(roots) == 1 and cse and not by_object and _one_node(col, roots[0], epoch):
        return col
    walk = _Walk(col, cse, epoch, by_object)
    for root in roots:
        root = _lower(root, col)
        walk.slots_for(root)
        col.roots.append(walk.slot_of[id(root)])
    return col


def _one_node(col: Collected, root: Any, epoch: int) -> bool:
    """``root`` collected when it is a node not cached whose operands are leaf tensors and
    numbers (an eager loop's usual evaluation): the slots :class:`_Walk` would give, without
    its walk. False (``col`` untouched) otherwise."""
    if type(root) is _Tensor or not isinstance(root, _Operation):
        return False
    if root._result is not None and root._epoch == epoch:
        return False
    operands = root._operands
    for o in operands:
        to = type(o)
        if to is not _Tensor and to is not float and to is not int:
            return False
    walk = _Walk(col, True, epoch, False)
    for o in reversed(operands):  # the walk's stack takes the last operand first
        if type(o) is _Tensor and id(o) not in walk.slot_of:
            walk.take_leaf(o)
    slot_of, env = walk.slot_of, col.env
    refs: list[Any] = [root._decl, root._params]
    for o in operands:
        to = type(o)
        refs.append(slot_of[id(o)] if to is _Tensor else (to, o))
    col.roots.append(len(env))
    env.append(None)
    col.objs.append(root)
    col.sig.append(tuple(refs))
    return True


class _Walk:
    """One collection's state: ``slot_of`` (id -> slot), ``cons`` (structural key or leaf
    identity -> slot) and ``lowered`` (id of another data kind -> what it lowered to)."""

    __slots__ = ("by_memory", "col", "cons", "cse", "epoch", "lowered", "slot_of")

    def __init__(self, col: Collected, cse: bool, epoch: int, by_object: bool) -> None:
        self.col, self.cse, self.epoch = col, cse, epoch
        self.by_memory = cse and not by_object
        self.slot_of: dict[int, int] = {}
        self.cons: dict[Any, int] = {}
        self.lowered: dict[int, Any] = {}

    def slots_for(self, root: Any) -> None:
        """Give ``root`` and every value it needs a slot. An iterative post-order walk: a
        node is expanded once (its uncollected operands pushed above a marker), and given
        its slot when the marker comes back up."""
        col, slot_of, cons, lowered, cse = self.col, self.slot_of, self.cons, self.lowered, self.cse
        env, objs, sig, epoch, post = col.env, col.objs, col.sig, self.epoch, _POST
        stack = [root]
        while stack:
            x = stack.pop()
            if x is post:
                x = stack.pop()
                refs: list[Any] = [x._decl, x._params]
                for o in x._operands:
                    to = type(o)
                    if to is float or to is int:
                        refs.append((to, o))
                        continue
                    s = slot_of.get(id(o))
                    if s is None:
                        low = lowered.get(id(o))
                        if low is None:  # a number of another type (bool, numpy scalar)
                            refs.append((to, o))
                            continue
                        s = slot_of[id(low)]
                    refs.append(s)
                key = tuple(refs)
                s = cons.get(key) if cse else None
                if s is None:
                    s = len(env)
                    if cse:
                        cons[key] = s
                    env.append(None)
                    objs.append(x)
                    sig.append(key)
                else:
                    col.merged.append((s, x))
                slot_of[id(x)] = s
                continue
            if id(x) in slot_of:
                continue
            if type(x) is _Tensor or not isinstance(x, _Operation):
                self.take_leaf(x)
                continue
            res = x._result
            if res is not None and x._epoch == epoch:
                self.take_cached(x, res)
                continue
            stack.append(x)
            stack.append(post)
            for o in x._operands:
                to = type(o)
                if to is float or to is int or id(o) in slot_of:
                    continue
                if to is not _Tensor and not isinstance(o, _Operation):
                    o = self.lowered_operand(o)
                    if o is None:
                        continue
                stack.append(o)

    def take_leaf(self, x: Any) -> None:
        """A leaf tensor's slot: shared with the leaves over the same memory (with CSE, unless
        collecting by object), else its own."""
        col = self.col
        arr = x._array
        ident = x._identity() if self.by_memory else id(x)
        s = self.cons.get(ident)
        if s is None:
            s = self.cons[ident] = len(col.env)
            col.env.append(arr)
            col.objs.append(x)
            col.sig.append((arr.shape, arr.dtype, x._device))
        self.slot_of[id(x)] = s
        col.leaves.append((x, s))

    def take_cached(self, x: Any, res: Any) -> None:
        """A node whose cached result ``res`` is still valid, as a leaf of its own."""
        col = self.col
        if options.sanitize:
            sanitize.verify(x, res, self.epoch)
        if type(res) is not _Tensor:  # a bare cached array (see cache.py)
            res = x._result = result_tensor(res, x._elem, x._device)
        arr = res._array
        self.slot_of[id(x)] = len(col.env)
        col.env.append(arr)
        col.objs.append(res)
        col.sig.append((arr.shape, arr.dtype, res._device))
        col.cached += 1

    def lowered_operand(self, o: Any) -> Any | None:
        """The tensor or node another data kind lowers to (lowered once per collection), or
        None where there is nothing to collect: a number of another type, or a value
        already collected."""
        if isinstance(o, int | float):
            return None
        low = self.lowered.get(id(o))
        if low is None:
            low = self.lowered[id(o)] = _lower(o, self.col)
        return None if id(low) in self.slot_of else low

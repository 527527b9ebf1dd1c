"""Batching rules: how a group of independent nodes of one op runs as one call on stacks.

The evaluator's batching (``evaluate/batch.py``) groups registrations of the same op whose
operands are either stacked (``"b"``) or shared by every member (``"s"``), and asks the op's
declaration (``OpDecl.batching``) what computes the whole group: the op itself with its
parameters shifted past the new leading dim, or one of the group ops below (the backends
implement them like any op). Element-wise ops need no rule: they run unchanged on stacks.
"""

from __future__ import annotations

from typing import Any

from .declare import Batching, OpDecl, OpKind, Params, internal_op

__all__ = [
    "DOT_SHARED_LEFT",
    "DOT_SUM",
    "ITEM",
    "MATMUL",
    "NARROW_ROWS",
    "NLL_LOSS",
    "SOFTMAX_NLL",
    "STACK",
    "SUM",
    "by",
    "dot",
    "last_k",
    "matmul",
    "narrow",
    "permute",
    "reshape",
    "shift_dims",
]

Group = tuple[OpDecl | None, Params] | None


def _group_op(name: str, arity: int, kind: OpKind = "general") -> OpDecl:
    return internal_op(name, arity, "batching", kind=kind)


STACK = _group_op("batch_stack", -1)
ITEM = _group_op("batch_item", 1, "view")
SUM = _group_op("batch_sum", 1)
MATMUL = _group_op("batch_matmul", 2)
DOT_SHARED_LEFT = _group_op("batch_dot_shared_left", 2)
DOT_SUM = _group_op("batch_dot_sum", 2)
NLL_LOSS = _group_op("batch_nll_loss", 2)
SOFTMAX_NLL = _group_op("batch_softmax_nll_grad", 3)
NARROW_ROWS = _group_op("batch_narrow", 1, "view")


def matmul(n: Any, kinds: str, ranks: tuple[int, ...]) -> Group:
    """matmul over stacked operands is the stack of the items' matmuls when no operand is a
    vector (its promotion would change) and the stack dim leads the broadcast batch dims:
    every stacked operand of the top rank, every shared one of at most that rank."""
    stacked = {r for k, r in zip(kinds, ranks, strict=True) if k == "b"}
    aligned = min(ranks) >= 2 and len(stacked) == 1 and max(ranks) in stacked
    return (n.decl, n.params) if aligned else None


def dot(n: Any, kinds: str, ranks: tuple[int, ...]) -> Group:
    """``dot(x, w)``: stacked rows times a shared matrix is one dot; stacked pairs a batched
    matmul; a shared left side its own group op."""
    if n.params != (1,):
        return None
    if kinds == "bs":
        return n.decl, n.params
    if kinds == "bb":
        return MATMUL, ()
    return (DOT_SHARED_LEFT, ()) if kinds == "sb" else None


def shift_dims(n: Any, kinds: str, ranks: tuple[int, ...]) -> Group:
    """A reduction over ``dims``: the same dims, one further right."""
    dims, *rest = n.params
    if not isinstance(dims, tuple):
        return None
    return n.decl, (tuple(d + 1 for d in dims), *rest)


def reshape(n: Any, kinds: str, ranks: tuple[int, ...]) -> Group:
    return None if kinds != "b" else (n.decl, (("batch", *n.params[0]),))


def permute(n: Any, kinds: str, ranks: tuple[int, ...]) -> Group:
    order = n.params[0]
    return None if kinds != "b" else (n.decl, ((0, *(o + 1 for o in order)),))


def narrow(n: Any, kinds: str, ranks: tuple[int, ...]) -> Group:
    """Slices of one shared tensor at different starts (``narrow``'s ``batch_varies``: the
    params hold every member's start): one gather, a reshaped view when they tile it."""
    return (NARROW_ROWS, n.params) if kinds == "s" else None


def last_k(n: Any, kinds: str, ranks: tuple[int, ...]) -> Group:
    """Ops over the last ``k`` dims (softmax): unchanged, when every operand is stacked."""
    return (n.decl, n.params) if "s" not in kinds else None


def by(group_op: OpDecl, pattern: str) -> Batching:
    """The group op ``group_op`` when the operands' kinds are exactly ``pattern``."""

    def batching(n: Any, kinds: str, ranks: tuple[int, ...]) -> Group:
        return (group_op, n.params) if kinds == pattern else None

    return batching

"""Sums of like terms as one op (docs/evaluation.md, *Rewrites*): ``Σ_i A_i·B_i`` of
same-shaped matrices is ``[A_1 … A_n]·[B_1; …; B_n]``, one GEMM (a recurrent weight's
gradient over its steps), and ``Σ_i reduce_sum(x_i, dims)`` one ``reduce_sum`` of their
concatenation. Terms are put in step order (by the slot of the operand concatenated on its
rows, latest first), so a weight's and its bias's sums over the same ``dA_t`` share one
concatenation, and a sequence's steps ``x[0] … x[T-1]`` concatenate to ``x`` reshaped (a
view). Equal up to float rounding.
"""

from __future__ import annotations

from ..ops.arithmetic import ADD
from ..ops.batching import ITEM
from ..ops.declare import OpDecl
from ..ops.join import CONCAT
from ..ops.layout import PERMUTE, RESHAPE
from ..ops.reduce import REDUCE_SUM
from ..ops.rows import SLICE
from ..ops.structure import DOT
from .graph import Graph, INode, Ref, is_number, like, runs_on

__all__ = ["MIN_TERMS", "SUM_OF_DOTS", "SUM_OF_REDUCE_SUMS", "add_tree", "merge_sums"]

MIN_TERMS = 3
"""Fewest terms worth a concatenation (two terms: one add saved for a copy of both)."""
SUM_OF_DOTS = "sum of dots -> one dot of concatenations"
SUM_OF_REDUCE_SUMS = "sum of reduce_sums -> one reduce_sum of a concatenation"

Concats = dict[tuple[int, tuple[Ref, ...]], int]
"""(axis, operands) -> the slot of their concatenation, made once per graph."""


def merge_sums(g: Graph, alive: list[bool], uses: list[int]) -> list[str]:
    """Replace each add-tree of like terms by one op; returns a name per tree merged."""
    absorbed: set[int] = set()
    concats: Concats = {}
    fired: list[str] = []
    for s in reversed(g.order):  # a tree's root comes after its inner adds
        tree = add_tree(g, s, uses) if alive[s] and s not in absorbed else None
        if tree is None or len(tree[0]) < MIN_TERMS or any(uses[t] != 1 for t in tree[0]):
            continue
        merged = _merge(g, g.nodes[s], [g.nodes[t] for t in tree[0]], concats, uses)
        if merged is not None:
            g.nodes[s] = merged[1]
            absorbed.update(tree[1])
            fired.append(merged[0])
    return fired


def _is_add(g: Graph, ref: Ref) -> bool:
    """An ``add`` of two slots of its own shape and dtype (no broadcast, no number)."""
    n = g.node(ref)
    if n is None or n.decl is not ADD or any(is_number(a) for a in n.args):
        return False
    return all(g.nodes[a].shape == n.shape and g.nodes[a].dtype == n.dtype for a in n.args)


def add_tree(g: Graph, root: int, uses: list[int]) -> tuple[list[int], list[int]] | None:
    """The terms of the add-tree at ``root`` (inner adds read only by the tree expand) and
    its inner adds; None where ``root`` is no such add."""
    if not _is_add(g, root):
        return None
    terms: list[int] = []
    inner: list[int] = []
    todo = [root]
    while todo:
        for a in g.nodes[todo.pop()].args:
            if _is_add(g, a) and uses[a] == 1:
                inner.append(a)
                todo.append(a)
            else:
                terms.append(a)
    return terms, inner


def _merge(
    g: Graph, root: INode, terms: list[INode], concats: Concats, uses: list[int]
) -> tuple[str, INode] | None:
    first = terms[0]
    same = all(t.decl is first.decl and t.params == first.params for t in terms)
    if not same or not runs_on(root.device, first.decl, CONCAT, PERMUTE):
        return None
    for view in (PERMUTE, RESHAPE):
        if first.decl is view:
            return _merge_under_view(g, root, view, terms, concats, uses)
    if first.decl is DOT:
        return _merge_dots(g, root, terms, concats)
    if first.decl is REDUCE_SUM:
        return _merge_reduce_sums(g, root, terms, concats)
    return None


def _merge_under_view(
    g: Graph, root: INode, view: OpDecl, terms: list[INode], concats: Concats, uses: list[int]
) -> tuple[str, INode] | None:
    """``Σ view(t_i)`` = ``view(Σ t_i)`` for one linear view (a transpose, a reshape) of
    like terms: each step's use of a weight through its own ``transpose(w)`` node gives
    transposed terms."""
    inner = [t.args[0] for t in terms]
    if any(is_number(a) or uses[a] != 1 for a in inner):
        return None
    nodes = [g.nodes[a] for a in inner]
    if any(n.shape != nodes[0].shape or n.dtype != nodes[0].dtype for n in nodes):
        return None
    total = like(nodes[0], ADD, (), [], nodes[0].shape)  # stands for the sum of the terms
    merged = _merge(g, total, nodes, concats, uses)
    if merged is None:
        return None
    return merged[0], like(root, view, terms[0].params, [g.append(merged[1])], obj=root.obj)


def _merge_dots(
    g: Graph, root: INode, terms: list[INode], concats: Concats
) -> tuple[str, INode] | None:
    """``Σ a_i·b_i`` of matrices = ``concat(a_i, axis 1)·concat(b_i, axis 0)``; a left side of
    transposes ``p_iᵀ`` is concatenated as ``concat(p_i, axis 0)ᵀ`` (rows: one block copy,
    and BLAS reads the transposed left operand as fast)."""
    if terms[0].params != (1,) or not _same_shapes(g, terms, (2, 2)):
        return None
    terms = sorted(terms, key=lambda t: t.args[1], reverse=True)
    lefts = [t.args[0] for t in terms]
    if all(_transposed(g, a) for a in lefts):
        rows = _concat(g, [_rows_of(g, a) for a in lefts], 0, concats)
        shape = g.nodes[rows].shape
        left = g.append(like(root, PERMUTE, ((1, 0),), [rows], (shape[1], shape[0])))
    else:
        left = _concat(g, lefts, 1, concats)
    right = _concat(g, [t.args[1] for t in terms], 0, concats)
    return SUM_OF_DOTS, like(root, DOT, (1,), [left, right], obj=root.obj)


def _merge_reduce_sums(
    g: Graph, root: INode, terms: list[INode], concats: Concats
) -> tuple[str, INode] | None:
    """``Σ reduce_sum(x_i, dims)`` = ``reduce_sum(concat(x_i, axis dims[0]), dims)``."""
    dims = terms[0].params[0]
    if not isinstance(dims, tuple) or not dims or not _same_shapes(g, terms, (-1,)):
        return None
    terms = sorted(terms, key=lambda t: t.args[0], reverse=True)
    stacked = _concat(g, [t.args[0] for t in terms], dims[0], concats)
    return SUM_OF_REDUCE_SUMS, like(root, REDUCE_SUM, terms[0].params, [stacked], obj=root.obj)


def _same_shapes(g: Graph, terms: list[INode], ranks: tuple[int, ...]) -> bool:
    """Every term's operands are slots of the first term's shapes and dtypes, of ``ranks``
    (-1: any)."""
    first = terms[0]
    if any(is_number(a) for t in terms for a in t.args) or len(first.args) != len(ranks):
        return False
    want = [(g.nodes[a].shape, g.nodes[a].dtype) for a in first.args]
    if any(r != -1 and len(shape) != r for (shape, _), r in zip(want, ranks, strict=True)):
        return False
    return all(
        t.dtype == first.dtype and [(g.nodes[a].shape, g.nodes[a].dtype) for a in t.args] == want
        for t in terms
    )


def _transposed(g: Graph, ref: Ref) -> bool:
    """Whether ``ref`` is a transposed matrix: ``transpose(p)``, or an item of a batched
    transpose (batching made ``transpose(x[t])`` over every step item ``t`` of a permute)."""
    n = g.nodes[ref]
    if n.decl is not ITEM:
        return g.transposed(ref) is not None
    n = g.nodes[n.args[0]]
    return n.decl is PERMUTE and n.params == ((0, 2, 1),)


def _rows_of(g: Graph, ref: Ref) -> Ref:
    """The matrix a :func:`_transposed` ``ref`` transposes (for a batch item, that item of
    the batch before its permute: a view)."""
    n = g.nodes[ref]
    if n.decl is not ITEM:
        return n.args[0]
    batch = g.nodes[n.args[0]].args[0]
    return g.append(like(n, ITEM, n.params, [batch], (n.shape[1], n.shape[0])))


def _concat(g: Graph, refs: list[Ref], axis: int, concats: Concats) -> int:
    """The slot of ``concat(refs, axis)``, made once per graph."""
    key = (axis, tuple(refs))
    slot = concats.get(key)
    if slot is None:
        item = g.nodes[refs[0]]
        shape = list(item.shape)
        shape[axis] = sum(g.nodes[r].shape[axis] for r in refs)
        whole = _sliced_whole(g, refs) if axis == 0 else None
        node = (
            like(item, CONCAT, (axis,), list(refs), tuple(shape))
            if whole is None
            else like(item, RESHAPE, (tuple(shape),), [whole], tuple(shape))
        )
        slot = concats[key] = g.append(node)
    return slot


def _sliced_whole(g: Graph, refs: list[Ref]) -> Ref | None:
    """The tensor ``x`` when ``refs`` are its every slice ``x[0] … x[n-1]`` in order (their
    rows concatenated are ``x`` reshaped, a view: a sequence's steps in a weight gradient),
    else None."""
    nodes = [g.nodes[r] for r in refs]
    base = nodes[0].args[0] if nodes[0].args else None
    if base is None or is_number(base) or g.nodes[base].shape[:1] != (len(refs),):
        return None
    for t, n in enumerate(nodes):
        if n.decl is not SLICE or n.params != (t,) or n.args[0] != base:
            return None
    return base

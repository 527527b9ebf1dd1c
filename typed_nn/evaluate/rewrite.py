"""Algebraic rewrites (docs/evaluation.md, *Rewrites*): MetaNN's ``OperSeq``, a chain of
small declared :func:`rule`\\ s per op name, tried in order before the node runs as built. A
rule returns a ref (the node's value *is* that value: ``log(exp(x))`` is ``x``), a new node,
or None; it sees operands after earlier rewrites. After batching, :func:`after_batching`
runs the whole-graph rewrites that read use counts. Each rewrite that fires is counted in
``stats.rewrites[name]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

from ..devices import device_of
from ..ops import batching
from ..ops.declare import Batching, OpDecl, internal_op
from ..ops.join import CONCAT, NARROW
from ..ops.layout import PERMUTE, RESHAPE, TILE
from ..ops.rows import SLICE
from ..ops.special import ZEROS
from ..ops.structure import DOT
from .graph import Graph, INode, Ref, is_number, like, runs_on
from .sums import merge_sums

__all__ = [
    "FOLDED_BIAS",
    "FOLDED_BIAS_GRADIENT",
    "RULES",
    "SCALAR_BROADCAST",
    "SHARED_TRANSPOSE",
    "TRANSPOSED_PRODUCT",
    "after_batching",
    "rewrite",
    "rule",
]

RuleFn = Callable[[Graph, INode], Ref | INode | None]
RULES: dict[str, list[tuple[str, RuleFn]]] = {}
"""Op name -> its chain of (rule name, rule), tried in order."""


def rule(*ops: str, name: str) -> Callable[[RuleFn], RuleFn]:
    """Append the decorated function to the chain of each op in ``ops``."""

    def register(fn: RuleFn) -> RuleFn:
        for op in ops:
            RULES.setdefault(op, []).append((name, fn))
        return fn

    return register


def _internal(name: str, arity: int, batching: Batching | None = None) -> OpDecl:
    return internal_op(name, arity, "rewrites", batching=batching)


PICK_ROW = _internal("pick_row", 2)
"""``pick_row(m, s, pos)`` = ``s * m[pos]``: a one-hot vector dotted with ``m``."""
PICK_COL = _internal("pick_col", 2)
"""``pick_col(m, s, pos)`` = ``s * m[..., pos]``: ``m`` dotted with a one-hot vector."""
SOFTMAX_NLL_GRAD = _internal(
    "softmax_nll_grad", 3, batching=batching.by(batching.SOFTMAX_NLL, "sbb")
)
"""``softmax_nll_grad(g, t, y, k)``: softmax_grad(nll_loss_grad(g, t, y), y, k) in one pass."""
LOG_SOFTMAX_PICK_GRAD = _internal("log_softmax_pick_grad", 3)
"""``log_softmax_pick_grad(s, labels, y)``: log_softmax_grad(label_pick_grad(s, labels), y)
over the last dim in one pass, ``s (onehot(labels) - exp(y))``: cross_entropy's backward."""
SOFTMAX_PICK_GRAD = _internal("softmax_pick_grad", 3)
"""``softmax_pick_grad(s, labels, p)``: the same from ``p = softmax(x)``, where the graph
computes it anyway (the log-softmax is then not computed)."""
SUM_OF_PRODUCTS = _internal("sum_of_products", 2)
"""``sum_of_products(a, b, count)`` = ``reduce_sum(a * b) / count``: one BLAS dot, no array
of products."""
APPEND_ONES = _internal("append_ones", 1)
"""``append_ones(x)``: ``x`` with a column of ones after its last column."""
CONTIGUOUS = _internal("contiguous", 1)
"""``contiguous(x)``: ``x``'s values in a fresh row-major array."""
SCALAR_BROADCAST = "op(tile(c), d) -> tile(op(c, d)) for rank-0 c and d"
"""Equal numbers (a mean's gradient spread over the batch) are computed once, not per element."""
SHARED_TRANSPOSE = "dot(a, transpose(w)) read by many dots -> one row-major copy of it"
MIN_TRANSPOSED_READS = 4
MAX_COPIED_ELEMENTS = 1 << 16
"""Copy a transposed right operand row-major for at least ``MIN_TRANSPOSED_READS`` dots, at
most ``MAX_COPIED_ELEMENTS`` values: one-thread OpenBLAS is up to 2x slower on it (BPTT's
(32, 256)·(256, 64)ᵀ: 13.5 vs 7.4 us, the copy 6.5 us); numpy's transposing copy grows worse
than linearly past ~256 KB."""
TRANSPOSED_PRODUCT = "transpose(a·b) -> bᵀ·aᵀ"
FOLDED_BIAS = "dot(x, w) + b -> dot([x | 1], [w; b])"
MIN_FOLDED_ELEMENTS = 1 << 14
FOLDED_BIAS_GRADIENT = "xᵀ·g and reduce_sum(g, rows) -> [x | 1]ᵀ·g"


def rewrite(g: Graph) -> list[str]:
    """Apply the chains to every node in order; returns the names of the rules that fired."""
    fired: list[str] = []
    size = len(g.nodes)
    for s, n in enumerate(g.nodes):  # nodes a rule appends are visited too
        if n.op == "leaf" or n.op == "alias":
            continue
        n.args = [g.resolve(a) for a in n.args]
        chain = RULES.get(n.op, ())
        if n.decl is not None and n.decl.ufunc is not None:
            chain = [(SCALAR_BROADCAST, _scalar_broadcast), *chain]
        for name, fn in chain:
            r = fn(g, n)
            if r is None or (isinstance(r, INode) and not runs_on(r.device, r.decl)):
                continue
            if not isinstance(r, INode):
                r = INode("alias", None, (), [r], n.shape, n.dtype, n.device, n.obj)
            elif r.obj is None:
                r.obj = n.obj
            g.nodes[s] = r
            fired.append(name)
            break
    if len(g.nodes) > size:  # a rule appended nodes: they read, and are read, out of order
        g.reorder()
    return fired


def after_batching(g: Graph) -> list[str]:
    """The whole-graph rewrites, each on the graph the one before left; returns the names of
    those that fired. After batching: a sum it made one contraction is not re-merged."""
    fired: list[str] = []
    for run in (
        merge_sums,
        fold_row_biases,
        fold_bias_gradients,
        transpose_products,
        materialise_shared_transposes,
    ):
        alive = g.live()
        made = run(g, alive, g.uses(alive))
        if made:  # appended nodes read, and are read, out of order
            g.reorder()
        fired += made
    return fired


def transpose_products(g: Graph, alive: list[bool], uses: list[int]) -> list[str]:
    """``(a·b)ᵀ`` of matrices, where nothing else reads ``a·b``, as ``bᵀ·aᵀ``: the same numbers
    row-major (a weight kept (out, in) gets its gradient in its own layout)."""
    fired: list[str] = []
    for s in g.order:
        d = g.transposed(s) if alive[s] else None
        if d is None or g.op(d) != "dot" or uses[d] != 1:
            continue
        n, prod = g.nodes[s], g.nodes[d]
        if prod.params != (1,) or len(prod.shape) != 2:
            continue
        a, b = prod.args
        if any(is_number(r) or len(g.nodes[r].shape) != 2 for r in (a, b)):
            continue
        swapped = like(n, DOT, (1,), [_transposed(g, b), _transposed(g, a)], obj=n.obj)
        if runs_on(swapped.device, swapped.decl):
            g.nodes[s] = swapped
            fired.append(TRANSPOSED_PRODUCT)
    return fired


def _transposed(g: Graph, ref: Ref) -> Ref:
    """A matrix's transpose: the operand of a transpose, else a new transpose (a view)."""
    t = g.transposed(ref)
    if t is not None:
        return t
    m = g.nodes[ref]
    return g.append(like(m, PERMUTE, ((1, 0),), [ref], m.shape[::-1]))


def materialise_shared_transposes(g: Graph, alive: list[bool], uses: list[int]) -> list[str]:
    """Give the dots that share a small transposed right operand one row-major copy of it (see
    ``MAX_COPIED_ELEMENTS``; host BLAS only)."""
    readers: dict[int, list[INode]] = {}
    for s in g.order:
        n = g.nodes[s]
        if alive[s] and n.op == "dot" and n.params == (1,) and g.op(n.args[1]) == "permute":
            readers.setdefault(n.args[1], []).append(n)
    fired: list[str] = []
    for t, dots in readers.items():
        m = g.nodes[t]
        small = len(m.shape) == 2 and m.shape[0] * m.shape[1] <= MAX_COPIED_ELEMENTS
        if len(dots) < MIN_TRANSPOSED_READS or not small or g.transposed(t) is None:
            continue
        copy = like(m, CONTIGUOUS, (), [t])
        if runs_on(copy.device, copy.decl) and device_of(m.device).host_pool:
            slot = g.append(copy)
            for n in dots:
                n.args[1] = slot
            fired.append(SHARED_TRANSPOSE)
    return fired


def fold_row_biases(g: Graph, alive: list[bool], uses: list[int]) -> list[str]:
    """``x·w + b`` (a row bias on a product nothing else reads) as ``[x | 1]·[w; b]`` on host
    BLAS, where the product has ``MIN_FOLDED_ELEMENTS`` values and twice what the copies write."""
    fired: list[str] = []
    ones_of: dict[int, int] = {}  # x -> its append_ones slot: one copy of x for every fold
    for s in g.order:
        n = g.nodes[s]
        if not alive[s] or n.op != "add" or n.dtype.kind != "f" or any(map(is_number, n.args)):
            continue
        for d, b in (n.args, n.args[::-1]):
            folded = _folded(g, n, d, b, uses, ones_of)
            if folded is not None:
                g.nodes[s] = folded
                fired.append(FOLDED_BIAS)
                break
    return fired


def _folded(
    g: Graph, n: INode, d: int, b: int, uses: list[int], ones_of: dict[int, int]
) -> INode | None:
    """The folded product for ``n = d + b`` when ``d`` is such a product and ``b`` its row bias."""
    prod, bias = g.nodes[d], g.nodes[b]
    if prod.op != "dot" or prod.params != (1,) or uses[d] != 1 or prod.shape != n.shape:
        return None
    x, w = (g.node(a) for a in prod.args)
    if x is None or w is None or len(x.shape) < 2 or len(w.shape) != 2:
        return None
    (k, cols), rows = w.shape, math.prod(x.shape[:-1])
    if bias.shape != (cols,) or not all(m.dtype == n.dtype for m in (x, w, bias)):
        return None
    copied = rows * (k + 1) + (k + 1) * cols
    if rows * cols < max(MIN_FOLDED_ELEMENTS, 2 * copied):
        return None
    ones = like(n, APPEND_ONES, (), [prod.args[0]], (*x.shape[:-1], k + 1))
    if not device_of(n.device).host_pool or not runs_on(ones.device, ones.decl):
        return None
    if prod.args[0] not in ones_of:
        ones_of[prod.args[0]] = g.append(ones)
    row = g.append(like(n, RESHAPE, ((1, cols),), [b], (1, cols)))
    stacked = g.append(like(n, CONCAT, (0,), [prod.args[1], row], (k + 1, cols)))
    return like(n, DOT, (1,), [ones_of[prod.args[0]], stacked], obj=n.obj)


def fold_bias_gradients(g: Graph, alive: list[bool], uses: list[int]) -> list[str]:
    """The backward of :func:`fold_row_biases`: where ``[x | 1]`` was made, the weight's
    gradient ``xᵀ·g`` (``x`` maybe through a row-major reshape) and the bias's column sums
    ``reduce_sum(g, rows)`` are the row blocks of one product ``[x | 1]ᵀ·g``."""
    ones_of = {n.args[0]: u for u, n in enumerate(g.nodes) if alive[u] and n.op == APPEND_ONES.name}
    readers = g.readers(alive) if ones_of else {}
    fired: list[str] = []
    for s in g.order:
        total = g.nodes[s]
        if not ones_of or not alive[s] or total.op != "reduce_sum" or len(total.shape) != 1:
            continue
        grad = total.args[0]
        rows = None if is_number(grad) else tuple(range(len(g.nodes[grad].shape) - 1))
        for d in readers[grad] if total.params == (rows, False) else ():
            prod = g.nodes[d]
            if prod.op != "dot" or prod.args[1] != grad or len(prod.shape) != 2:
                continue
            left = _ones_transposed(g, prod.args[0], prod.params, ones_of, total, {s, d})
            if left is None:
                continue
            k = prod.shape[0]
            both = g.append(like(total, DOT, prod.params, [left, grad], (k + 1, total.shape[0])))
            g.nodes[d] = like(prod, NARROW, (0, 0, k), [both], obj=prod.obj)
            g.nodes[s] = like(total, SLICE, (k,), [both], obj=total.obj)
            fired.append(FOLDED_BIAS_GRADIENT)
            break
    return fired


def _reaches(g: Graph, start: int, targets: set[int]) -> bool:
    """Whether ``start``'s value is computed from one of ``targets``."""
    seen: set[int] = set()
    todo = [start]
    while todo:
        s = todo.pop()
        if s in targets:
            return True
        if s not in seen:
            seen.add(s)
            todo.extend(a for a in g.nodes[s].args if not is_number(a))
    return False


def _ones_transposed(
    g: Graph,
    left: Ref,
    params: tuple[object, ...],
    ones_of: dict[int, int],
    total: INode,
    folded: set[int],
) -> int | None:
    """``[x | 1]ᵀ`` (appended to the graph) when ``left`` is ``xᵀ`` — ``x``'s last dim moved
    first and contracted with ``g`` over the others — or that of a row-major reshape of
    ``x``, and ``append_ones(x)`` was made, not from the ``folded`` nodes themselves (the
    fold would make a cycle); else None."""
    n = g.node(left)
    if n is None or n.op != "permute":
        return None
    a = g.nodes[n.args[0]]
    last = len(a.shape) - 1
    if n.params != ((last, *range(last)),) or params != (last,):
        return None
    for x in (n.args[0], a.args[0] if a.op == "reshape" else None):
        u = ones_of.get(x) if x is not None else None
        if u is None or g.nodes[u].dtype != total.dtype or _reaches(g, u, folded):
            continue
        shape = g.nodes[u].shape
        if math.prod(shape[:-1]) != math.prod(a.shape[:-1]) or shape[-1] != a.shape[-1] + 1:
            continue
        table = (*a.shape[:-1], shape[-1])
        if shape != table:
            u = g.append(like(total, RESHAPE, (table,), [u], table))
        order = n.params[0]
        return g.append(like(total, PERMUTE, (order,), [u], (shape[-1], *a.shape[:-1])))
    return None


def _same_value_type(g: Graph, n: INode, ref: Ref) -> bool:
    """``ref`` can stand for ``n``: a slot of the same shape and dtype."""
    m = g.node(ref)
    return m is not None and m.shape == n.shape and m.dtype == n.dtype


def _scalar_broadcast(g: Graph, n: INode) -> INode | None:
    """``op(tile(c), d)`` -> ``tile(op(c, d))`` for an element-wise ``op`` whose operands
    are one tile of a rank-0 ``c`` and numbers or rank-0 values (see SCALAR_BROADCAST)."""
    tiles = [a for a in n.args if g.op(a) == "tile" and g.nodes[a].shape == n.shape]
    if len(tiles) != 1 or not n.shape or _scalar_of(g, tiles[0], n.shape) == tiles[0]:
        return None
    if not all(a == tiles[0] or is_number(a) or g.nodes[a].shape == () for a in n.args):
        return None
    (c,) = g.nodes[tiles[0]].args
    assert n.decl is not None
    inner = g.append(like(n, n.decl, n.params, [c if a == tiles[0] else a for a in n.args], ()))
    return like(n, TILE, (n.shape, tuple(range(len(n.shape)))), [inner])


def _scalar_of(g: Graph, ref: Ref, shape: tuple[int, ...]) -> Ref:
    """The rank-0 value ``ref`` repeats over ``shape`` (a tile of one), else ``ref``."""
    m = g.node(ref)
    if m is not None and m.op == "tile" and m.shape == shape and g.nodes[m.args[0]].shape == ():
        return m.args[0]
    return ref


@rule("log", name="log(exp(x)) -> x")
def _log_exp(g: Graph, n: INode) -> Ref | None:
    (x,) = n.args
    return g.nodes[x].args[0] if g.op(x) == "exp" else None


@rule("exp_grad", name="exp_grad(log_grad(g, exp(x)), x) -> g")
def _log_exp_grad(g: Graph, n: INode) -> Ref | None:
    """log(exp(x))'s backward, (g / exp(x)) * exp(x), is g as its forward is x: computed, it
    is NaN where exp(x) overflows or underflows."""
    h, x = n.args
    inner = g.node(h)
    if inner is None or inner.op != "log_grad":
        return None
    grad, u = inner.args
    e = g.node(u)
    if e is None or e.op != "exp" or e.args[0] != x or not _same_value_type(g, n, grad):
        return None
    return grad


@rule("stop_gradient", name="stop_gradient(x) -> x")
def _stop_gradient(g: Graph, n: INode) -> Ref | None:
    return n.args[0]  # it only cuts gradients, which are built before evaluation


def _zeros(g: Graph, ref: Ref) -> bool:
    return g.op(ref) == "zeros"


def _one(g: Graph, ref: Ref) -> bool:
    return is_number(ref) and ref[1] == 1


def _identity(
    is_identity: Callable[[Graph, Ref], bool], sides: tuple[int, ...], g: Graph, n: INode
) -> Ref | None:
    """The other operand, where the one at a position in ``sides`` is the op's identity."""
    for side in sides:
        other = n.args[1 - side]
        if is_identity(g, n.args[side]) and _same_value_type(g, n, other):
            return other
    return None


rule("add", name="x + 0 -> x")(partial(_identity, _zeros, (1, 0)))
rule("sub", name="x - 0 -> x")(partial(_identity, _zeros, (1,)))


@rule("mul", name="x * 0 -> 0")
def _mul_zero(g: Graph, n: INode) -> INode | None:
    if not any(g.op(a) == "zeros" for a in n.args):
        return None
    return like(n, ZEROS, (n.shape, n.obj.elem, n.device), [])


rule("mul", name="x * 1 -> x")(partial(_identity, _one, (1, 0)))
rule("div", name="x / 1 -> x")(partial(_identity, _one, (1,)))


@rule("permute", name="transpose(transpose(x)) -> x")
def _permute_twice(g: Graph, n: INode) -> Ref | None:
    """Also any permute(permute(x, p), q) where q undoes p."""
    (y,) = n.args
    if g.op(y) != "permute":
        return None
    inner = g.nodes[y]
    p, q = inner.params[0], n.params[0]
    if not isinstance(p, tuple) or not isinstance(q, tuple) or len(p) != len(q):
        return None
    return inner.args[0] if all(p[q[i]] == i for i in range(len(q))) else None


def _pick(side: int, decl: OpDecl, g: Graph, n: INode) -> INode | None:
    """``dot`` with a one-hot vector (a ``BiasVector``) at ``side`` as a scaled row or column
    pick of the other operand."""
    if n.params != (1,) or g.op(n.args[side]) != "one_hot":
        return None
    hot = g.nodes[n.args[side]]
    return like(n, decl, (hot.params[1],), [n.args[1 - side], hot.args[0]])


rule("dot", name="dot(BiasVector, m) -> row pick")(partial(_pick, 0, PICK_ROW))
rule("dot", name="dot(m, BiasVector) -> column pick")(partial(_pick, 1, PICK_COL))


@rule("reduce_sum", "reduce_mean", name="reduce_sum(a * b) -> one dot")
def _sum_of_products(g: Graph, n: INode) -> INode | None:
    """A full float reduction of ``square(a)`` or of ``a * b`` (same shapes, no broadcast)."""
    (x,) = n.args
    if n.shape != () or n.dtype.kind != "f" or g.op(x) not in ("square", "mul"):
        return None
    m = g.nodes[x]
    pair = m.args * 2 if m.op == "square" else m.args
    if not all(_same_value_type(g, m, a) and g.nodes[a].dtype == n.dtype for a in pair):
        return None
    count = math.prod(m.shape) if n.op == "reduce_mean" else 1
    return like(n, SUM_OF_PRODUCTS, (count,), list(pair), ())


@rule("log_softmax_grad", name="log_softmax_grad(label_pick_grad(s, labels), y) in one pass")
def _log_softmax_pick(g: Graph, n: INode) -> INode | None:
    grad, y = n.args[0], n.args[1]
    k = n.params[0] if n.params else 1
    if g.op(grad) != "label_pick_grad" or k != 1:
        return None
    s, labels = g.nodes[grad].args
    s = _scalar_of(g, s, g.nodes[labels].shape)  # the kernels take one number as it is
    p = _softmax_beside(g, n, y)
    if p is not None:
        fused = like(n, SOFTMAX_PICK_GRAD, (), [s, labels, p])
        # host memory only: its one (numpy) form reads the labels' range on the host, which
        # a device's own log_softmax_pick_grad avoids (no synchronisation per step)
        if runs_on(fused.device, fused.decl) and device_of(n.device).host_pool:
            return fused
    return like(n, LOG_SOFTMAX_PICK_GRAD, (), [s, labels, y])


def _softmax_beside(g: Graph, n: INode, y: Ref) -> int | None:
    """The slot of ``softmax(x)`` over the last dim, for ``y = log_softmax(x)``, where the
    graph computes it before ``n`` (so the rewritten ``n`` still reads earlier slots)."""
    m = g.node(y)
    if m is None or m.op != "log_softmax" or (m.params and m.params[0] != 1):
        return None
    x = m.args[0]
    for slot in range(g.nodes.index(n)):
        p = g.nodes[slot]
        if p.op == "softmax" and p.args[0] == x and (not p.params or p.params[0] == 1):
            return slot if p.dtype == n.dtype and p.device is n.device else None
    return None


@rule("softmax_grad", name="softmax_grad(nll_loss_grad(g, t, y), y) in one pass")
def _softmax_nll(g: Graph, n: INode) -> INode | None:
    grad, y = n.args[0], n.args[1]
    if g.op(grad) != "nll_loss_grad":
        return None
    gs, t, p = g.nodes[grad].args
    k = n.params[0] if n.params else 1
    return like(n, SOFTMAX_NLL_GRAD, (k,), [gs, t, y]) if p == y else None

"""Algebraic rewrites, run before execution as a chain of responsibility per op.

MetaNN gives each op an ``OperSeq``: special-case calculators tried in order before the
general one. Here each op name has a list of small declared :func:`rule`\\ s; the first that
returns a replacement handles the node, otherwise the node runs as built (the tail). A rule
returns a ref (the node's value *is* that value: ``log(exp(x))`` is ``x``), a new node, or
None. Rules see operands after earlier rewrites. Every rule that fires is counted in
``stats.rewrites[name]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..devices import device_of
from ..ops import batching
from ..ops.declare import Batching, OpDecl, internal_op
from ..ops.join import CONCAT, NARROW
from ..ops.layout import PERMUTE, RESHAPE, TILE
from ..ops.rows import SLICE
from ..ops.special import ZEROS
from ..ops.structure import DOT
from .graph import Graph, INode, Ref, is_number, like, runs_on

__all__ = [
    "FOLDED_BIAS",
    "FOLDED_BIAS_GRADIENT",
    "RULES",
    "SCALAR_BROADCAST",
    "SHARED_TRANSPOSE",
    "TRANSPOSED_PRODUCT",
    "fold_bias_gradients",
    "fold_row_biases",
    "materialise_shared_transposes",
    "rewrite",
    "rule",
    "transpose_products",
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
"""``softmax_pick_grad(s, labels, p)``: the same with the probabilities ``p = softmax(x)``
in place of ``exp(log_softmax(x))``, where the graph computes ``softmax(x)`` anyway (a
classifier's step that returns its probabilities): the log-softmax is then not computed."""
SUM_OF_PRODUCTS = _internal("sum_of_products", 2)
"""``sum_of_products(a, b, count)`` = ``reduce_sum(a * b) / count`` over every element, with
no array of products (one BLAS dot: an MSE loss ``reduce_mean(square(d))`` reads ``d`` once
where ``square`` then ``mean`` wrote and re-read a copy of it)."""
APPEND_ONES = _internal("append_ones", 1)
"""``append_ones(x)``: ``x`` with a column of ones after its last column."""
CONTIGUOUS = _internal("contiguous", 1)
"""``contiguous(x)``: ``x``'s values in a fresh row-major array."""
SCALAR_BROADCAST = "op(tile(c), d) -> tile(op(c, d)) for rank-0 c and d"
"""An element-wise op of a rank-0 value repeated over a shape (a mean's gradient, spread
over the batch, then divided and negated) is computed once on the rank-0 value: numbers
that are all equal are not computed once per element, nor repeated before they must be."""
SHARED_TRANSPOSE = "dot(a, transpose(w)) read by many dots -> one row-major copy of it"
MIN_TRANSPOSED_READS = 4
MAX_COPIED_ELEMENTS = 1 << 16
"""A transposed matrix is copied row-major once when at least ``MIN_TRANSPOSED_READS`` dots
read it as their right operand and it has at most ``MAX_COPIED_ELEMENTS`` values. BLAS
(OpenBLAS, one thread) multiplies by a transposed right operand up to 2x slower than by a
row-major one on small left operands — BPTT's ``dA_t·W_hhᵀ`` per step, (32, 256)·(256, 64):
13.5 vs 7.4 us — while the copy costs about one product (6.5 us for (256, 64)); numpy's
transposing copy grows worse than linearly past ~256 KB (4 MB: 7 ms), hence the cap."""


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


TRANSPOSED_PRODUCT = "transpose(a·b) -> bᵀ·aᵀ"


def transpose_products(g: Graph) -> list[str]:
    """``(a·b)ᵀ`` of matrices, where nothing else reads ``a·b``, as the product ``bᵀ·aᵀ``:
    the same numbers written row-major, where the transpose was a view read across rows. A
    weight kept (out, in) (``nn.Linear``'s, PyTorch's layout) gets its gradient ``(xᵀ·g)ᵀ``
    this way, so the update that reads it goes along rows (BLAS takes the operands'
    transposes as views: ``gᵀ·x`` costs what ``xᵀ·g`` does)."""
    alive = g.live()
    uses = g.uses(alive)
    fired: list[str] = []
    for s in list(g.order):
        n = g.nodes[s]
        if not alive[s] or n.op != "permute" or n.params != ((1, 0),) or is_number(n.args[0]):
            continue
        d = n.args[0]
        prod = g.nodes[d]
        if prod.op != "dot" or prod.params != (1,) or uses[d] != 1 or len(prod.shape) != 2:
            continue
        a, b = prod.args
        if any(is_number(r) or len(g.nodes[r].shape) != 2 for r in (a, b)):
            continue
        swapped = like(n, DOT, (1,), [_transposed(g, b), _transposed(g, a)], n.shape, n.obj)
        if not runs_on(swapped.device, swapped.decl):
            continue
        g.nodes[s] = swapped
        fired.append(TRANSPOSED_PRODUCT)
    if fired:
        g.reorder()
    return fired


def _transposed(g: Graph, ref: Ref) -> Ref:
    """A matrix's transpose: the operand of a transpose where ``ref`` is one, else a new
    transpose (a view)."""
    m = g.nodes[ref]
    if m.op == "permute" and m.params == ((1, 0),):
        return m.args[0]
    return g.append(like(m, PERMUTE, ((1, 0),), [ref], m.shape[::-1]))


def materialise_shared_transposes(g: Graph) -> list[str]:
    """Give the dots that share a transposed right operand one row-major copy of it (see
    ``MIN_TRANSPOSED_READS``); returns the name of the rewrite once per copy made."""
    alive = g.live()
    readers: dict[int, list[INode]] = {}
    for s in g.order:
        n = g.nodes[s]
        if alive[s] and n.op == "dot" and n.params == (1,) and _op(g, n.args[1]) == "permute":
            readers.setdefault(n.args[1], []).append(n)
    fired: list[str] = []
    for t, dots in readers.items():
        m = g.nodes[t]
        small = len(m.shape) == 2 and m.shape[0] * m.shape[1] <= MAX_COPIED_ELEMENTS
        if len(dots) < MIN_TRANSPOSED_READS or not small or m.params != ((1, 0),):
            continue
        copy = like(m, CONTIGUOUS, (), [t], m.shape)
        if (
            not runs_on(copy.device, copy.decl) or not device_of(m.device).host_pool
        ):  # host BLAS only
            continue
        slot = g.append(copy)
        for n in dots:
            n.args[1] = slot
        fired.append(SHARED_TRANSPOSE)
    if fired:
        g.reorder()
    return fired


FOLDED_BIAS = "dot(x, w) + b -> dot([x | 1], [w; b])"
MIN_FOLDED_ELEMENTS = 1 << 14


def fold_row_biases(g: Graph) -> list[str]:
    """``x·w + b`` (``b`` one value per column, added to every row of a product that nothing
    else reads) as one product ``[x | 1]·[w; b]``: the bias rides in the GEMM, where adding it
    after was one more pass over the product. Taken where that pass is the larger cost: the
    product has at least ``MIN_FOLDED_ELEMENTS`` values and twice the values the two copies
    write (``x`` with its column of ones, ``w`` with its row ``b``). An LSTM's input part over
    the whole sequence, (640, 32)·(32, 256), qualifies; a batch of 32 rows does not. Run after
    batching, which makes those tall products. The sum is the same up to float rounding (the
    GEMM adds ``b`` among its terms)."""
    alive = g.live()
    uses = g.uses(alive)
    fired: list[str] = []
    ones_of: dict[int, int] = {}  # x -> its append_ones slot: one copy of x for every fold
    for s in list(g.order):
        n = g.nodes[s]
        if not alive[s] or n.op != "add" or n.dtype.kind != "f" or any(map(is_number, n.args)):
            continue
        for d, b in (n.args, n.args[::-1]):
            folded = _folded(g, n, d, b, uses, ones_of)
            if folded is not None:
                g.nodes[s] = folded
                fired.append(FOLDED_BIAS)
                break
    if fired:
        g.reorder()
    return fired


def _folded(
    g: Graph, n: INode, d: int, b: int, uses: list[int], ones_of: dict[int, int]
) -> INode | None:
    """The folded product for ``n = d + b`` when ``d`` is such a product and ``b`` its row bias."""
    prod, bias = g.nodes[d], g.nodes[b]
    if prod.op != "dot" or prod.params != (1,) or uses[d] != 1 or prod.shape != n.shape:
        return None
    x, w = (g.nodes[a] if not is_number(a) else None for a in prod.args)
    if x is None or w is None or len(x.shape) < 2 or len(w.shape) != 2:
        return None
    (k, cols), rows = w.shape, math.prod(x.shape[:-1])
    if bias.shape != (cols,) or not all(m.dtype == n.dtype for m in (x, w, bias)):
        return None
    copied = rows * (k + 1) + (k + 1) * cols
    if rows * cols < max(MIN_FOLDED_ELEMENTS, 2 * copied):
        return None
    ones = like(n, APPEND_ONES, (), [prod.args[0]], (*x.shape[:-1], k + 1))
    if not device_of(n.device).host_pool or not runs_on(ones.device, ones.decl):  # host BLAS only
        return None
    if prod.args[0] not in ones_of:
        ones_of[prod.args[0]] = g.append(ones)
    row = g.append(like(n, RESHAPE, ((1, cols),), [b], (1, cols)))
    stacked = g.append(like(n, CONCAT, (0,), [prod.args[1], row], (k + 1, cols)))
    return like(n, DOT, (1,), [ones_of[prod.args[0]], stacked], n.shape, n.obj)


FOLDED_BIAS_GRADIENT = "xᵀ·g and reduce_sum(g, rows) -> [x | 1]ᵀ·g"


def fold_bias_gradients(g: Graph) -> list[str]:
    """The backward of :func:`fold_row_biases`: where ``[x | 1]`` was made for the forward,
    the weight's gradient ``xᵀ·g`` (a contraction over every row dim) and the bias's
    ``reduce_sum(g, rows)`` (its column sums) are the row blocks of one product
    ``[x | 1]ᵀ·g``: one more row in a GEMM that reads ``g`` anyway, instead of a second pass
    over ``g``. ``x`` may be read through a row-major reshape (a sequence's steps as rows).
    The column sums are BLAS's, as ``reduce_sum`` takes them (``backends/numpy/reduce.py``)."""
    alive = g.live()
    ones_of = {n.args[0]: u for u, n in enumerate(g.nodes) if alive[u] and n.op == APPEND_ONES.name}
    if not ones_of:
        return []
    products: dict[int, list[int]] = {}
    sums: list[int] = []
    for s in g.order:
        n = g.nodes[s]
        if not alive[s] or any(map(is_number, n.args)):
            continue
        if n.op == "dot" and len(n.shape) == 2:
            products.setdefault(n.args[1], []).append(s)
        elif n.op == "reduce_sum" and len(n.shape) == 1:
            rank = len(g.nodes[n.args[0]].shape)
            if n.params == (tuple(range(rank - 1)), False):
                sums.append(s)
    fired: list[str] = []
    for s in sums:
        total = g.nodes[s]
        grad = total.args[0]
        for d in products.get(grad, ()):
            prod = g.nodes[d]
            left = _ones_transposed(g, prod.args[0], prod.params, ones_of, total, {s, d})
            if left is None:
                continue
            k = prod.shape[0]
            both = g.append(like(total, DOT, prod.params, [left, grad], (k + 1, total.shape[0])))
            g.nodes[d] = like(prod, NARROW, (0, 0, k), [both], prod.shape, prod.obj)
            g.nodes[s] = like(total, SLICE, (k,), [both], total.shape, total.obj)
            fired.append(FOLDED_BIAS_GRADIENT)
            break
    if fired:
        g.reorder()
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
    n = g.nodes[left]
    a = g.nodes[n.args[0]] if n.op == "permute" else None
    if a is None or n.params != ((len(a.shape) - 1, *range(len(a.shape) - 1)),):
        return None
    if params != (len(a.shape) - 1,):
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


def _op(g: Graph, ref: Ref) -> str:
    return "" if is_number(ref) else g.nodes[ref].op


def _same_value_type(g: Graph, n: INode, ref: Ref) -> bool:
    """``ref`` can stand for ``n``: a slot of the same shape and dtype."""
    if is_number(ref):
        return False
    m = g.nodes[ref]
    return m.shape == n.shape and m.dtype == n.dtype


def _is_one(ref: Ref) -> bool:
    return is_number(ref) and ref[1] == 1


def _scalar_broadcast(g: Graph, n: INode) -> INode | None:
    """``op(tile(c), d)`` -> ``tile(op(c, d))`` for an element-wise ``op`` whose operands
    are one tile of a rank-0 ``c`` and numbers or rank-0 values (see SCALAR_BROADCAST)."""
    tiles = [a for a in n.args if _op(g, a) == "tile" and g.nodes[a].shape == n.shape]
    if len(tiles) != 1 or not n.shape:
        return None
    tile = g.nodes[tiles[0]]
    (c,) = tile.args
    if g.nodes[c].shape != () or not all(
        a == tiles[0] or is_number(a) or g.nodes[a].shape == () for a in n.args
    ):
        return None
    args = [c if a == tiles[0] else a for a in n.args]
    assert n.decl is not None
    inner = g.append(INode(n.op, n.decl, n.params, args, (), n.dtype, n.device))
    return INode(
        "tile", TILE, (n.shape, tuple(range(len(n.shape)))), [inner], n.shape, n.dtype, n.device
    )


def _scalar_of(g: Graph, ref: Ref, shape: tuple[int, ...]) -> Ref:
    """The rank-0 value ``ref`` repeats over ``shape`` (a tile of one), else ``ref``."""
    m = g.node(ref)
    if m is not None and m.op == "tile" and m.shape == shape and g.nodes[m.args[0]].shape == ():
        return m.args[0]
    return ref


@rule("log", name="log(exp(x)) -> x")
def _log_exp(g: Graph, n: INode) -> Ref | None:
    (x,) = n.args
    if _op(g, x) == "exp":
        return g.nodes[x].args[0]
    return None


@rule("stop_gradient", name="stop_gradient(x) -> x")
def _stop_gradient(g: Graph, n: INode) -> Ref | None:
    return n.args[0]  # it only cuts gradients, which are built before evaluation


@rule("add", name="x + 0 -> x")
def _add_zero(g: Graph, n: INode) -> Ref | None:
    a, b = n.args
    if _op(g, b) == "zeros" and _same_value_type(g, n, a):
        return a
    if _op(g, a) == "zeros" and _same_value_type(g, n, b):
        return b
    return None


@rule("sub", name="x - 0 -> x")
def _sub_zero(g: Graph, n: INode) -> Ref | None:
    a, b = n.args
    return a if _op(g, b) == "zeros" and _same_value_type(g, n, a) else None


@rule("mul", name="x * 0 -> 0")
def _mul_zero(g: Graph, n: INode) -> INode | None:
    if not any(_op(g, a) == "zeros" for a in n.args):
        return None
    elem = n.obj.elem
    return INode("zeros", ZEROS, (n.shape, elem, n.device), [], n.shape, n.dtype, n.device)


@rule("mul", name="x * 1 -> x")
def _mul_one(g: Graph, n: INode) -> Ref | None:
    a, b = n.args
    if _is_one(b) and _same_value_type(g, n, a):
        return a
    if _is_one(a) and _same_value_type(g, n, b):
        return b
    return None


@rule("div", name="x / 1 -> x")
def _div_one(g: Graph, n: INode) -> Ref | None:
    a, b = n.args
    return a if _is_one(b) and _same_value_type(g, n, a) else None


@rule("permute", name="transpose(transpose(x)) -> x")
def _permute_twice(g: Graph, n: INode) -> Ref | None:
    """Also any permute(permute(x, p), q) where q undoes p."""
    (y,) = n.args
    if _op(g, y) != "permute":
        return None
    inner = g.nodes[y]
    p, q = inner.params[0], n.params[0]
    if not isinstance(p, tuple) or not isinstance(q, tuple) or len(p) != len(q):
        return None
    if all(p[q[i]] == i for i in range(len(q))):
        return inner.args[0]
    return None


@rule("dot", name="dot(BiasVector, m) -> row pick")
def _dot_bias_left(g: Graph, n: INode) -> INode | None:
    a, b = n.args
    if n.params != (1,) or _op(g, a) != "one_hot":
        return None
    hot = g.nodes[a]
    pos = hot.params[1]
    return INode("pick_row", PICK_ROW, (pos,), [b, hot.args[0]], n.shape, n.dtype, n.device)


@rule("dot", name="dot(m, BiasVector) -> column pick")
def _dot_bias_right(g: Graph, n: INode) -> INode | None:
    a, b = n.args
    if n.params != (1,) or _op(g, b) != "one_hot":
        return None
    hot = g.nodes[b]
    pos = hot.params[1]
    return INode("pick_col", PICK_COL, (pos,), [a, hot.args[0]], n.shape, n.dtype, n.device)


@rule("reduce_sum", "reduce_mean", name="reduce_sum(a * b) -> one dot")
def _sum_of_products(g: Graph, n: INode) -> INode | None:
    """A full float reduction of ``square(a)`` or of ``a * b`` (same shapes, no broadcast)."""
    (x,) = n.args
    if n.shape != () or n.dtype.kind != "f" or _op(g, x) not in ("square", "mul"):
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
    if _op(g, grad) != "label_pick_grad" or k != 1:
        return None
    s, labels = g.nodes[grad].args
    s = _scalar_of(g, s, g.nodes[labels].shape)  # the kernels take one number as it is
    p = _softmax_beside(g, n, y)
    if p is not None:
        fused = like(n, SOFTMAX_PICK_GRAD, (), [s, labels, p], n.shape)
        # host memory only: its one (numpy) form reads the labels' range on the host, which
        # a device's own log_softmax_pick_grad avoids (no synchronisation per step)
        if runs_on(fused.device, fused.decl) and device_of(n.device).host_pool:
            return fused
    op = "log_softmax_pick_grad"
    return INode(op, LOG_SOFTMAX_PICK_GRAD, (), [s, labels, y], n.shape, n.dtype, n.device)


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
    if _op(g, grad) != "nll_loss_grad":
        return None
    gs, t, p = g.nodes[grad].args
    if p != y:
        return None
    k = n.params[0] if n.params else 1
    return INode("softmax_nll_grad", SOFTMAX_NLL_GRAD, (k,), [gs, t, y], n.shape, n.dtype, n.device)

"""Turn an analysed graph into a straight-line Python function (the plan's program): a
cached plan then costs one call per step, with no interpretation of the schedule."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..devices import device_of
from ..ops.batching import ITEM
from ..ops.declare import Inline, passes
from ..tags import DeviceTag, is_float_dtype
from . import fuse
from .fuse import Blocks, alias_safe, fusable, plan_blocks
from .graph import Graph, INode, Ref, is_number, number_operand
from .lower import Pass, fold, readers_of, ufunc_pass
from .memory import Memory, plan_memory, small
from .memory import form as memory_form
from .options import options
from .pool import kept
from .reference import NodeChecks, wrong_result
from .sanitize import Sanitizer
from .split import SplitBlocks
from .trace import Number

__all__ = ["Program", "generate"]


class Program:
    """A compiled schedule: ``fn(env, alloc)`` fills ``env`` at ``results`` (an evaluation's),
    or ``fn(A, N, alloc)`` returns a compiled step's outputs (see ``generate``)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        results: list[int],
        calls: Counter[str],
        fired: list[str],
        source: str,
    ) -> None:
        self.fn = fn
        self.results = results  # slots written back: returned, and cached unless lean
        self.calls = calls  # op name -> kernel applications per run
        self.fired = fired  # rewrite rules applied when this plan was analysed
        self.source = source
        self.pooled = "alloc(" in source
        self.writing: list[bool] = fn.__globals__.get("WRITING", [False])
        """``[True]`` once a run began writing a target (an ``out=`` array) in place."""
        self.used = 0  # when the plan cache last handed it out (its thread's evaluations)
        self.number_dtypes: dict[int, Any] = {}
        """A compiled step's float number index -> its operands' one dtype (None: several)."""
        self.devices: frozenset[type[DeviceTag]] = frozenset()
        self.checks: NodeChecks | None = fn.__globals__.get("CHK")  # a by-node program's


class _Gen:
    def __init__(self, g: Graph, specialise: bool) -> None:
        self.g = g
        self.specialise = specialise
        self.watch: list[str] = []
        """Names of the objects called before and after each step (``SAN``, ``CHK``)."""
        self.ns: dict[str, Any] = {"np": np}
        self.lines: list[str] = []
        self.calls: Counter[str] = Counter()
        self.sources: dict[int, Any] | None = None
        """A compiled step's program: env index -> its source (``A[k]``, or an array bound)."""
        self.buffers: dict[int, str] = {}  # Memory.buffers number -> its name
        self.planned: set[int] = set()
        """Steps whose out is an aligned C array the plan made (not a target or rows)."""
        self.names: dict[int, str] = {}
        self.registers: dict[tuple[tuple[int, ...], str, int], str] = {}
        self.sanitizer: Sanitizer | None = None
        self.number_dtypes: dict[str, Any] = {}  # a float number's name -> its operand's dtype
        self.bfloat16_numbers: dict[int, Any] = {}  # a call's number read by bfloat16 nodes

    def register(self, shape: tuple[int, ...], dtype: Any, i: int) -> str:
        """Scratch register ``i`` of the straight regions of ``shape`` and ``dtype``: all share
        one set, which stays in cache (a set per region pushed an LSTM backward out of L2)."""
        key = (shape, np.dtype(dtype).str, i)
        name = self.registers.get(key)
        if name is None:
            name = self.const(f"R{len(self.registers)}", kept(shape, dtype))
            self.registers[key] = name
        return name

    def env(self, i: int) -> str:
        """The expression of input ``i``: ``env[i]``, or a compiled step's source of it."""
        if self.sources is None:
            return f"env[{i}]"
        source = self.sources[i]
        return source if isinstance(source, str) else self.constant(source)

    def const(self, name: str, value: Any) -> str:
        self.ns[name] = value
        return name

    def arg(self, ref: Ref, s: int, i: int, dtype: Any = None) -> str:
        """Operand ``i`` of step ``s``; a float number's operand dtype (``dtype``, else the
        node's) is noted (``Program.number_dtypes``)."""
        if is_number(ref):
            name = self.const(f"C{s}_{i}", self.number_value(s, i, ref[1]))
            if type(ref[1]) is Number:
                n = self.g.nodes[s]
                found = np.dtype(dtype) if dtype is not None else n.dtype
                self.number_dtypes[name] = found if found.kind == "f" else None
            return name
        return f"v{ref}"

    def constant(self, value: Any) -> str:
        """A name for ``value`` in the generated namespace (one per distinct object)."""
        name = self.names.get(id(value))
        if name is None:
            name = self.names[id(value)] = self.const(f"N{len(self.names)}", value)
        return name

    def number_value(self, s: int, i: int, value: Any) -> Any:
        """Operand ``i`` of node ``s``, a constant number: of a float node whose array operands
        have its dtype, a 0-d array of it (the same numbers under NEP 50, but a ufunc call
        takes half the time: numpy converts a Python number on every call)."""
        n = self.g.nodes[s]
        if type(value) is Number and n.dtype.name == "bfloat16":
            self.bfloat16_numbers[value.index] = n.dtype  # rounded when the program reads it
        arrays = [self.g.nodes[a].dtype for a in n.args if not is_number(a)]
        if n.dtype.kind == "f" and arrays and all(dt == n.dtype for dt in arrays):
            return _number_as_array(value, n.dtype, n.device)
        return number_operand(n, value)

    def emit(self, line: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + line)


def _check(value: Any, shape: tuple[int, ...], dtype: Any, device: type[DeviceTag]) -> None:
    received = wrong_result(value, shape, dtype, device)
    if received is not None:
        raise TypeError(f"kernel returned {received}")  # the caller re-runs by node


def _device_region(gen: _Gen, s: int, members: list[int], kernel: Any, out: str) -> None:
    """A region as one call of its device's compiled kernel (operands in the kernel's order)."""
    fn, refs = kernel
    spec = getattr(fn, "spec", None)  # the kernel's parameter dtypes (region.FusedKernel)
    dtypes = [inp.dtype for inp in spec.inputs] if spec is not None else [None] * len(refs)
    args = "".join(gen.arg(r, s, i, dtypes[i]) + ", " for i, r in enumerate(refs))
    gen.emit(f"v{s} = {gen.const(f'F{s}', fn)}({args}out={out})")
    for m in members:
        gen.calls[gen.g.nodes[m].op] += 1


def _number_as_array(value: Any, dtype: Any, device: Any) -> Any:
    """A Python number as a 0-d array of ``dtype`` where the device allows it
    (``Device.numbers_as_arrays``), else ``value`` itself."""
    if type(value) in (float, int) and device_of(device).numbers_as_arrays:
        with np.errstate(all="ignore"):  # an overflow is the same inf numpy gives
            return np.asarray(value, dtype)
    return value


def _kernel(gen: _Gen, s: int, n: INode, out: str) -> None:
    """A non-fused node: its specialised kernel, else its write-into form, else the plain
    implementation (whose result is checked: a registered kernel may be anyone's)."""
    operands = [gen.arg(a, s, i) for i, a in enumerate(n.args)]
    gen.calls[n.op] += 1
    kind, form = memory_form(gen.g, n, gen.specialise)
    special = kind in ("special", "view")  # its parameters are bound in it
    if special and isinstance(form.fn, Inline):
        _inline(gen, s, form.fn, operands, out if kind == "special" else None)
        return
    k = gen.const(f"S{s}", form.fn) if special else gen.const(f"K{s}", form)
    args = _call_args(gen, operands, () if special else n.params, f"P{s}")
    if kind in ("special", "out"):
        gen.emit(f"v{s} = {k}({args}out={out})")
        return
    gen.emit(f"v{s} = {k}({args.rstrip(', ')})")
    if kind == "view" or "CHK" in gen.watch:  # CHK checks it, with the node's message
        return
    gen.const("_check", _check)
    sh, dt = gen.const(f"SH{s}", n.shape), gen.const(f"DT{s}", n.dtype)
    check = f"_check(v{s}, {sh}, {dt}, {gen.const(f'DV{s}', n.device)})"
    array_type = device_of(n.device).array_type
    if array_type is None:
        gen.emit(check)
        return
    at = gen.const(f"AT_{array_type.__name__}", array_type)
    # The common case (an array of the node's shape and dtype) inline, without a call.
    gen.emit(f"if type(v{s}) is not {at} or v{s}.shape != {sh} or v{s}.dtype != {dt}:")
    gen.emit(check, 2)


def _inline(gen: _Gen, s: int, form: Inline, operands: list[str], out: str | None) -> None:
    """A specialised kernel's body in place of its call (``declare.Inline``): a writing
    kernel's statements fill ``v{s}`` (``out``); a view's expression is its value."""

    def name(key: str) -> str:
        return gen.const(f"I{s}_{key}", form.names[key])

    if out is None:
        (expression,) = form.lines(operands, None, name)
        gen.emit(f"v{s} = {expression}")
        return
    gen.emit(f"v{s} = {out}")
    for line in form.lines(operands, f"v{s}", name, s in gen.planned):
        gen.emit(line)


Instr = tuple[Pass, list[tuple[str, Any]], int]
"""One pass of a region: (the pass, operands as ("num" | "reg" | "val", value), destination
register; -1: the region's output)."""


def _region(gen: _Gen, root: int, members: list[int], out: str) -> None:
    """One fused pass over ``members`` (root last) into ``out``."""
    shape = gen.g.nodes[root].shape
    size = int(np.prod(shape)) if shape else 1
    instrs, n_regs = _registers(_passes(gen, root, members))
    if size > fuse.BLOCK and len(members) > 1:
        _blocked_region(gen, root, instrs, n_regs, out)
    else:
        _straight_region(gen, root, instrs, n_regs, out)


def _passes(gen: _Gen, root: int, members: list[int]) -> list[Pass]:
    """The region's write-into calls, root last: each member's kernel, or in a floating
    region the passes its op registers, folded with their neighbours (``lower.py``)."""
    g = gen.g
    node = g.nodes[root]
    floating = is_float_dtype(node.dtype)
    of: dict[int, Pass] = {}
    out: list[Pass] = []
    for m in members:
        n = g.nodes[m]
        gen.calls[n.op] += 1
        args: list[tuple[str, Any]] = [
            ("num", gen.number_value(m, i, a[1]))
            if is_number(a)
            else ("pass", of[a])
            if a in of
            else ("val", a)
            for i, a in enumerate(n.args)
        ]
        steps = passes(n.op, n.device) if floating and not n.params else None
        if steps is not None and len(args) == 1 and args[0][0] != "num":
            value = args[0]
            for fn, numbers in steps:
                extra = [("num", _number_as_array(x, node.dtype, node.device)) for x in numbers]
                step = ufunc_pass(fn, [value, *extra], m)
                out.append(step)
                value = ("pass", step)
            of[m] = out[-1]
            continue
        impl = fusable(n)
        assert impl is not None
        of[m] = Pass(impl, f"K{m}", args, n.params, alias_safe(n), m)
        out.append(of[m])
    return fold(out) if floating and options.rewrite else out


def _registers(passes: list[Pass]) -> tuple[list[Instr], int]:
    """Each pass with scratch registers for interior values (a register is reused once its
    value's last reader ran; an alias-safe pass may overwrite an operand's register), and
    the number of registers."""
    reads = readers_of(passes)
    reg_of: dict[int, int] = {}
    free: list[int] = []
    n_regs = 0
    instrs: list[Instr] = []
    for p in passes:
        args: list[tuple[str, Any]] = []
        freed: list[int] = []
        for kind, v in p.args:
            if kind == "pass":
                args.append(("reg", reg_of[id(v)]))
                reads[id(v)] -= 1
                if reads[id(v)] == 0:
                    freed.append(reg_of[id(v)])
            else:
                args.append((kind, v))
        if p is passes[-1]:
            dst = -1
        elif p.alias_safe and freed:
            dst = freed.pop(0)
        elif free:
            dst = free.pop()
        else:
            dst, n_regs = n_regs, n_regs + 1
        free.extend(freed)
        reg_of[id(p)] = dst
        instrs.append((p, args, dst))
    return instrs, n_regs


def _straight_region(gen: _Gen, root: int, instrs: list[Instr], n_regs: int, out: str) -> None:
    """A small region: one whole-array call per pass, registers kept by the program."""
    node = gen.g.nodes[root]
    names = [gen.register(node.shape, node.dtype, i) for i in range(n_regs)]
    _emit_passes(gen, instrs, names, out, None, 1, result=f"v{root}")


def _blocked_region(gen: _Gen, root: int, instrs: list[Instr], n_regs: int, out: str) -> None:
    """A large region: a loop over cache-sized blocks, every pass applied to each block."""
    g = gen.g
    shape, dtype = g.nodes[root].shape, g.nodes[root].dtype
    split = Blocks(shape)
    shapes = sorted(
        {g.nodes[v].shape for _, args, _ in instrs for kind, v in args if kind == "val"}
    )
    shapes = [o for o in shapes if split.operand_index(split.index[0], shape, o) is not None]
    blocks = plan_blocks(split, shape, shapes, n_regs, dtype)
    # The loop is a function of its blocks, so that SplitBlocks may hand runs of them to
    # threads (each run on its own registers: plan_blocks again).
    size = int(np.prod(shape))
    again = partial(plan_blocks, split, shape, shapes, n_regs, dtype)
    bl = gen.const(f"BL{root}", SplitBlocks(blocks, size, again))
    ix_names = [f"_i{i}" for i in range(len(shapes))]
    reg_names = [f"_r{i}" for i in range(n_regs)]
    gen.emit(f"_o = {out}")
    gen.emit(f"def _blocks{root}(_part):")
    gen.emit(f"for _ix, {''.join(n + ', ' for n in ix_names + reg_names)}in _part:", 2)
    _emit_passes(gen, instrs, reg_names, "_o[_ix]", dict(zip(shapes, ix_names, strict=True)), 3)
    gen.emit(f"{bl}(_blocks{root})")
    gen.emit(f"v{root} = _o")


def _emit_passes(
    gen: _Gen,
    instrs: list[Instr],
    regs: list[str],
    out: str,
    blocked: Any,
    indent: int,
    result: str = "",
) -> None:
    """Each pass as ``fn(a, b, *P, out=target)``, the last (dst -1) into ``out`` (as
    ``result = fn(...)`` where ``result`` names the region's value); in a blocked loop
    (``blocked``: operand shape -> its block index name) operands are read by block."""
    for p, args, dst in instrs:
        parts = [_operand(gen, kind, v, regs, blocked) for kind, v in args]
        call = _call_args(gen, parts, p.params, f"P_{p.label}")
        line = f"{gen.const(p.label, p.fn)}({call}out={out if dst < 0 else regs[dst]})"
        gen.emit(f"{result} = {line}" if result and dst < 0 else line, indent)


def _call_args(gen: _Gen, parts: list[str], params: tuple[Any, ...], name: str) -> str:
    """``a, b, `` plus ``name_0, name_1, `` for the parameters (ufuncs take none): each its
    own constant, as a call with ``*params`` builds a tuple per call."""
    parts = [*parts, *(gen.const(f"{name}_{i}", p) for i, p in enumerate(params))]
    return "".join(q + ", " for q in parts)


def _operand(gen: _Gen, kind: str, v: Any, regs: list[str], blocked: Any) -> str:
    if kind == "num":
        return gen.constant(v)
    if kind == "reg":
        reg: str = regs[v]
        return reg
    if blocked is None:
        return f"v{v}"
    ix = blocked.get(gen.g.nodes[v].shape)
    # Operands that lie inside the block's inner dims are read whole.
    return f"v{v}" if ix is None else f"v{v}[{ix}]"


def _copy_and_write_back(
    gen: _Gen, copies: dict[int, list[int]], results: list[int], memory: Memory
) -> None:
    """The schedule's end: copy the roots that may view an input or a target (and the values
    to copy into targets that may, ``memory.aside``), copy the roots computed aside into their
    targets, then (an evaluation's program) fill ``env``."""
    for s in (*memory.copied, *memory.aside):
        gen.emit(f"v{s} = v{s}.copy()")
    if copies and "WRITING" not in gen.ns:
        gen.emit(f"{gen.const('WRITING', [False])}[0] = True")
    for s, into in copies.items():
        # The device's copy goes through a temporary where the value overlaps the target; the
        # root's value is then the target (a second copy would read changed memory).
        copy = gen.const(f"copyto{s}", device_of(gen.g.nodes[s].device).copy)
        for e in into:
            gen.emit(f"{copy}({gen.env(e)}, v{s})")
        gen.emit(f"v{s} = {gen.env(into[-1])}")
    if gen.sources is None:  # an evaluation's program: its values go back into env
        for s in results:
            gen.emit(f"env[{s}] = v{s}")


def _view(gen: _Gen, s: int, n: INode) -> None:
    """An alias (a copy where it is returned) or a batch item: no kernel, a view."""
    if n.op == "alias":
        copy = ".copy()" if s in gen.g.roots else ""
        gen.emit(f"v{s} = v{n.args[0]}{copy}")
    else:
        gen.calls[n.op] += 1
        gen.emit(f"v{s} = v{n.args[0]}[{n.params[0]}, ...]")


def _step(
    gen: _Gen,
    s: int,
    n: INode,
    out: str,
    regions: dict[int, list[int]],
    kernels: dict[int, tuple[Any, list[Ref]]],
) -> None:
    """Node ``s``'s step into ``out``: a device region, a host region, or one kernel."""
    if s in kernels:
        _device_region(gen, s, regions[s], kernels[s], out)
    elif s in regions and (
        len(regions[s]) > 1 or memory_form(gen.g, n, gen.specialise)[0] == "out"
    ):
        _region(gen, s, regions[s], out)  # a lone element-wise node too, but for a site kernel
    else:
        _kernel(gen, s, n, out)


def _outside_operands(g: Graph, s: int, members: list[int]) -> str:
    """The operands step ``s`` (its region's ``members``) reads, as a tuple expression."""
    inside = set(members)
    refs = [a for m in members for a in g.nodes[m].args if not is_number(a) and a not in inside]
    return "(" + "".join(f"v{a}, " for a in dict.fromkeys(refs)) + ")"


def _sanitizer(
    gen: _Gen,
    steps: list[int],
    regions: dict[int, list[int]],
    direct: dict[int, int],
    copies: dict[int, list[int]],
    memory: Memory,
    lean: bool,
) -> Sanitizer:
    """The sanitizer of the program ``gen`` writes (``options.sanitize``), bound as ``SAN``."""
    g = gen.g
    # Values cached on their nodes must last, but in a program that writes a target: the
    # cache is dropped after it (a cached view of the target changes with it).
    writes_target = bool(direct or copies)
    cached = {s for s in steps if g.nodes[s].obj is not None and not lean and not writes_target}
    escaping = set(g.roots) | cached
    returned = {
        r for r in g.roots if r not in direct and r not in copies and g.nodes[r].op != "leaf"
    }
    # a cached value is handed out too: a later evaluation of its node returns it
    returned |= {s for s in cached if g.nodes[s].op != "leaf" and s not in memory.uncached}
    ns = gen.ns

    def kept() -> list[Any]:
        return [v for k, v in ns.items() if k[:1] in "BR" and type(v) is np.ndarray]

    san = Sanitizer(g, steps, regions, memory.written, escaping, returned, kept)
    gen.const("SAN", san)
    gen.watch.append("SAN")
    gen.emit("SAN.start()")
    return san


def generate(
    g: Graph,
    alive: list[bool],
    regions: dict[int, list[int]],
    direct: dict[int, int],
    copies: dict[int, list[int]],
    fired: list[str],
    kernels: dict[int, tuple[Any, list[Ref]]] | None = None,
    *,
    lean: tuple[dict[int, Any], int] | None = None,
    by_node: bool = False,
) -> Program:
    """The plan's program. ``direct``/``copies``: root slot -> env index of the ``out`` array
    its step writes into / it is copied into; ``kernels``: region root -> (compiled device
    kernel, operand refs). An evaluation's program is ``fn(env, alloc)`` (inputs read from and
    values to cache written into ``env``); ``lean`` = (sources, outputs) makes a compiled
    step's ``fn(A, N, alloc)``: inputs from their sources, float numbers from ``N``, the first
    ``outputs`` roots returned, nothing cached. ``by_node``: plain kernels, each node checked
    after its step (``reference.NodeChecks``)."""
    kernels = kernels or {}
    gen = _Gen(g, options.specialise and not by_node)
    interior = {m for members in regions.values() for m in members[:-1]}
    steps = [s for s in g.order if alive[s] and s not in interior]
    memory = plan_memory(
        g, alive, regions, direct, kernels, copies, lean is not None, gen.specialise
    )
    if by_node:
        gen.const("CHK", NodeChecks(g))
        gen.watch.append("CHK")
    if options.sanitize:
        gen.sanitizer = _sanitizer(gen, steps, regions, direct, copies, memory, lean is not None)
        gen.sanitizer.operands_only = by_node  # no buffer shared: a step can touch only those
    if lean is not None:
        gen.sources = lean[0]
    results = _steps(gen, steps, regions, direct, kernels, memory, lean is not None)
    _copy_and_write_back(gen, copies, results, memory)
    # a returned value that is also written into a target is that target's memory: a copy
    returned = "".join(
        f"v{r}.copy(), " if r in direct or r in copies else f"v{r}, "
        for r in (g.roots[: lean[1]] if lean else ())
    )
    if gen.sanitizer is not None:
        gen.emit(f"SAN.finish({''.join(f'v{r}, ' for r in gen.sanitizer.returned)})")
    head = "def _run(env, alloc):"
    if lean is not None:  # a call's float numbers: locals in place of their constants
        head = "def _run(A, N, alloc):"
        numbers = [(k, v.index) for k, v in gen.ns.items() if type(v) is Number]
        gen.lines[:0] = [f"    {k} = {_bound(gen, i)}" for k, i in numbers]
        gen.emit(f"return ({returned})")
    source = head + "\n" + ("\n".join(gen.lines) or "    pass") + "\n"
    exec(compile(source, "<typed_nn plan>", "exec"), gen.ns)
    # popped: a cycle through its globals would keep a dropped plan until the cyclic collector
    program = Program(gen.ns.pop("_run"), results, gen.calls, fired, source)
    program.devices = frozenset(g.nodes[s].device for s in steps)
    if lean is not None:
        program.number_dtypes = _number_dtypes(gen)
    return program


def _bound(gen: _Gen, i: int) -> str:
    """A call's float number ``i`` as the program reads it: a bfloat16 scalar where bfloat16
    nodes read it, as eager evaluation's constants are (``graph.number_operand``: ml_dtypes'
    bfloat16 takes no part in NEP 50, and computes with a Python number in float32)."""
    dtype = gen.bfloat16_numbers.get(i)
    return f"N[{i}]" if dtype is None else f"{gen.const(f'DT{i}', dtype.type)}(N[{i}])"


def _number_dtypes(gen: _Gen) -> dict[int, Any]:
    """Each float number's index -> the one dtype its operands have (None: several)."""
    found: dict[int, Any] = {}
    for name, dtype in gen.number_dtypes.items():
        index = gen.ns[name].index
        found[index] = dtype if found.get(index, dtype) == dtype else None
    return found


def _steps(
    gen: _Gen,
    steps: list[int],
    regions: dict[int, list[int]],
    direct: dict[int, int],
    kernels: dict[int, tuple[Any, list[Ref]]],
    memory: Memory,
    lean: bool,
) -> list[int]:
    """Write each step of the schedule; returns the slots whose values are written back
    (returned, or cached on their nodes)."""
    g, started, results = gen.g, set[int](), []
    # The steps that write targets in place come last (executor._writes_last): the first of
    # them marks the point after which a failure leaves targets half-written — from its start
    # on the host (blocked passes may stop part-way), from its end on a device (one launch:
    # a kernel that failed wrote nothing, and the step re-runs node by node).
    first_write = next((s for s in steps if s in direct), None)
    marked_after = first_write is not None and not device_of(g.nodes[first_write].device).host_pool
    for s in steps:
        n = g.nodes[s]
        if s == first_write and not marked_after:
            gen.emit(f"{gen.const('WRITING', [False])}[0] = True")
        if n.op == "leaf":
            gen.emit(f"v{s} = {gen.env(s)}")
        elif n.op == "alias" or n.decl is ITEM:
            _view(gen, s, n)
        elif s not in started:  # started: a gather its operands were written into
            for w in gen.watch:
                gen.emit(f"{w}.before({s}, *{_outside_operands(g, s, regions.get(s, [s]))})")
            _step(gen, s, n, _out(gen, s, memory, started), regions, kernels)
        if s == first_write and marked_after:
            gen.emit(f"{gen.const('WRITING', [False])}[0] = True")
        for w in gen.watch:
            gen.emit(f"{w}.after({s}, v{s})")
        handed = n.op != "leaf" and n.obj is not None and (not lean or s in g.roots)
        if handed and s not in memory.uncached:
            results.append(s)
    return results


def _out(gen: _Gen, s: int, memory: Memory, started: set[int]) -> str:
    """The expression of the memory step ``s`` writes into (``Memory.storage``); a gather
    written in rows takes its own before the first of its operands is computed."""
    kind, where = memory.storage.get(s, ("fresh", None))
    if kind == "target":
        return gen.env(where)
    if kind == "rows":
        c, rows = where
        if c not in started:
            started.add(c)
            gen.emit(f"v{c} = {_out(gen, c, memory, started)}")
        return f"v{c}[{gen.const(f'IX{s}', rows)}]"
    n = gen.g.nodes[s]
    device = device_of(n.device)
    gen.planned.add(s)
    if kind == "buffer" and where in gen.buffers:
        return gen.buffers[where]
    if kind == "buffer" and memory.buffers[where][2]:  # small: kept by the program
        gen.buffers[where] = gen.const(f"B{where}", kept(n.shape, n.dtype))
        return gen.buffers[where]
    sh, dt = gen.const(f"SH{s}", n.shape), gen.const(f"DT{s}", n.dtype)
    if not device.host_pool:
        return f"{gen.const(f'XP{s}', device.module())}.empty({sh}, {dt})"
    allocate = "np.empty" if small(n) else "alloc"
    fresh = f"{allocate}({sh}, {dt})"
    if gen.sanitizer is not None:
        fresh = f"SAN.alloc({allocate}, {sh}, {dt})"
    if kind != "buffer":
        return fresh
    gen.buffers[where] = f"b{where}"  # a pooled buffer, taken at its first value's step
    gen.emit(f"b{where} = {fresh}")
    return f"b{where}"

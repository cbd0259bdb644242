"""The offline tuner: the default proposer when no model is configured.

It reads a Triton kernel file's *knobs* from its source and proposes rewrites that change them, in
the direction the diagnosis points:

- block sizes: constexpr keyword arguments of a launch (``k[grid](..., BLOCK_K=BLOCK_K)``) whose value
  is an int literal, a name assigned an int literal once in the wrapper (``BLOCK_K = 512``, or
  ``BLOCK_M, BLOCK_N = 64, 64``), else, when it is no parameter of the wrapper, once at the module's
  top level (``BLOCK_SIZE = 1024``), or the int cap of a
  ``min(...)``/``max(...)`` (``BLOCK_CO = min(next_power_of_2(C), 32)``); kept powers of two;
- ``num_warps`` and ``num_stages`` of each launch, added to the launch when absent (Triton's defaults
  are 4 warps and 3 stages; stages only for kernels that loop);
- the grid mapping: for a launch with a grid of two or more axes (a tuple, inline or assigned once),
  swap axes 0 and 1 in the grid and in the kernel's ``tl.program_id``/``tl.num_programs`` calls, which
  changes the order programs run in and so what they share in L2.

Directions: memory-bound wants more bytes in flight (wider blocks, more warps, deeper pipelining);
underutilized wants more programs with fewer warps each (smaller blocks); compute-bound tries both
sizes and more warps. Single changes come first, then pairs; ties are broken by a seeded shuffle, so
a seed gives the same proposals every time. A kernel already tried (by hash) is never proposed again.
Each proposal is an ordinary candidate: verified, then timed (a swap that breaks a grid limit fails there).
"""

from __future__ import annotations

import ast
import itertools
import random
import re
from dataclasses import dataclass
from typing import Literal

from beamsearch.records.schema import Attempt, Diagnosis, Kernel

KnobKind = Literal["block", "warps", "stages", "grid", "loads", "loop_stages", "unroll", "math", "maxnreg"]
TRITON_DEFAULTS = {"num_warps": 4, "num_stages": 3}
# The launch knobs the tuner proposes moves of; the other kinds are knob-space moves only (``knob_moves.find_moves``).
LAUNCH_KINDS = ("block", "warps", "stages", "grid")
# The knobs that rewrite a jit function's code, not a literal: ``knob_moves.apply_moves`` writes them, ``apply`` refuses.
CODE_KINDS = ("loads", "loop_stages", "unroll", "math")
LIMITS = {"block": (1, 8192), "warps": (1, 16), "stages": (1, 6), "grid": (0, 1)}
# Multipliers per knob kind for each bottleneck; stages move by +-1; the grid knob goes 0 -> 1 (swapped).
MOVES: dict[str, dict[KnobKind, list[float]]] = {
    "memory": {"block": [2, 4], "warps": [2], "stages": [+1], "grid": [+1]},
    "underutilized": {"block": [0.5, 0.25], "warps": [0.5, 2], "stages": [-1], "grid": []},
    "compute": {"block": [2, 0.5], "warps": [2, 0.5], "stages": [+1], "grid": [+1]},
    "unknown": {"block": [2, 0.5], "warps": [2, 0.5], "stages": [+1, -1], "grid": [+1]},
}


@dataclass(frozen=True)
class Knob:
    name: str  # the constexpr or launch option, e.g. "BLOCK_K" or "num_warps"
    kind: KnobKind
    value: int
    line: int  # 1-based
    col: int  # where the literal starts, or where to insert ", name=value" (after the last argument)
    end_col: int  # == col for an insertion
    launch: str  # the launched kernel's name (a jit function's, for loads and loops), to tell knobs apart
    site: tuple[int, int] = (0, 0)  # (line, col) of the launch call: one kernel's launches apart
    ordinal: int = 0  # a loop knob's loop: its place among its function's candidate loops, in source order

    @property
    def inserted(self) -> bool:
        return self.col == self.end_col


def find_knobs(source: str) -> list[Knob]:
    """The tunable knobs of every Triton launch in ``source`` (empty if it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    jits = jit_functions(tree)
    knobs: list[Knob] = []
    seen: set[tuple[int, int]] = set()
    for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)] + [tree]:
        for call in launches(func, set(jits)):
            launch = call.func.value.id
            info = jits[launch]
            for kw in call.keywords:
                if kw.arg in TRITON_DEFAULTS:
                    const = kw.value if is_int(kw.value) else None
                    kind: KnobKind = "warps" if kw.arg == "num_warps" else "stages"
                elif kw.arg in info.constexprs:
                    const = _block_literal(kw.value, func, tree)
                    kind = "block"
                else:
                    continue  # a runtime argument (a size, a stride) is not a knob
                if const is not None and (const.lineno, const.col_offset) not in seen and (kind != "block" or _pow2(const.value)):
                    seen.add((const.lineno, const.col_offset))
                    knobs.append(Knob(kw.arg, kind, const.value, const.lineno, const.col_offset, const.end_col_offset, launch,
                                      (call.lineno, call.col_offset)))  # fmt: skip
            if _grid_tuple(call, func) is not None and _program_id_calls(tree, launch) is not None:
                knobs.append(Knob("grid axes 0<->1", "grid", 0, call.lineno, call.col_offset, call.col_offset, launch,
                                  (call.lineno, call.col_offset)))  # fmt: skip
            present = {kw.arg for kw in call.keywords}
            arguments = [*call.args, *(kw.value for kw in call.keywords)]
            for option, default in TRITON_DEFAULTS.items():
                if option in present or info.autotuned or not arguments or (option == "num_stages" and not info.loops):
                    continue
                kind = "warps" if option == "num_warps" else "stages"
                line, col = launch_insertion(source, call)
                knobs.append(Knob(option, kind, default, line, col, col, launch, (call.lineno, call.col_offset)))
    return knobs


def apply(source: str, changes: dict[Knob, int]) -> str:
    """``source`` with each knob set to its new value (``apply_literals``), then grid swaps (``swap_grids``).
    Raises ValueError for a loads or loop knob (``CODE_KINDS``): ``knob_moves.apply_all`` writes every kind."""
    if code := sorted(k.name for k in changes if k.kind in CODE_KINDS):
        raise ValueError(f"code knobs are knob_moves.apply_all's to write, not the tuner's: {', '.join(code)}")
    return swap_grids(apply_literals(source, changes), changes)


def swap_grids(source: str, changes: dict[Knob, int]) -> str:
    """``source`` with the grid axes swapped of each launch whose grid knob ``changes`` sets to 1."""
    for launch in [k.launch for k, v in changes.items() if k.kind == "grid" and v == 1]:
        source = swap_grid_axes(source, launch)
    return source


def source_lines(source: str) -> list[str]:
    """``source``'s lines as ``ast`` numbers them (ended by newlines only; ``str.splitlines`` also splits at
    form feeds and other separators, and every later line number would point elsewhere)."""
    return re.split(r"(?<=\n)", source)


def line_starts(source: str) -> list[int]:
    """The byte offset in ``source.encode()`` where each of its lines (``source_lines``) starts, and its end."""
    starts = [0]
    for line in source_lines(source):
        starts.append(starts[-1] + len(line.encode()))
    return starts


def launch_insertion(source: str, call: ast.Call) -> tuple[int, int]:
    """(line, byte column) where ``, name=value`` goes into ``call``'s arguments: before a trailing comma,
    else before the closing parenthesis (a parenthesised last argument ends after the ast's end of it).
    ``call`` has at least one argument."""
    starts, raw = line_starts(source), source.encode()
    arguments = [*call.args, *(kw.value for kw in call.keywords)]
    last = max(arguments, key=lambda n: (n.end_lineno, n.end_col_offset))
    start, close = starts[last.end_lineno - 1] + last.end_col_offset, starts[call.end_lineno - 1] + call.end_col_offset - 1
    at, i = close, start
    while i < close:
        if raw[i : i + 1] == b"#":
            i = raw.find(b"\n", i, close) if raw.find(b"\n", i, close) >= 0 else close
            continue
        if raw[i : i + 1] == b",":
            at = i
            break
        i += 1
    line = max(n for n, first in enumerate(starts[:-1]) if first <= at)
    return line + 1, at - starts[line]


def apply_literals(source: str, changes: dict[Knob, int]) -> str:
    """``source`` with each literal knob of ``changes`` set to its new value (grid and code knobs are left
    alone); edits go right to left so offsets stay valid."""
    changes = {k: v for k, v in changes.items() if k.kind != "grid" and k.kind not in CODE_KINDS}
    lines = source_lines(source)
    for knob in sorted(changes, key=lambda k: (k.line, k.col), reverse=True):
        raw = lines[knob.line - 1].encode()
        value = "None" if knob.kind == "maxnreg" and changes[knob] == 0 else str(changes[knob])  # 0: no cap
        text = f", {knob.name}={value}" if knob.inserted else value
        lines[knob.line - 1] = (raw[: knob.col] + text.encode() + raw[knob.end_col :]).decode()
    return "".join(lines)


def moves_for(knob: Knob, bottleneck: str) -> list[int]:
    lo, hi = LIMITS[knob.kind]
    steps = MOVES.get(bottleneck, MOVES["unknown"])[knob.kind]
    values = [knob.value + int(s) if knob.kind in ("stages", "grid") else int(knob.value * s) for s in steps]
    return [v for v in dict.fromkeys(values) if lo <= v <= hi and v != knob.value]


class TunerProposer:
    """Proposes ``per_call`` knob rewrites of the parent per call; deterministic for ``seed``."""

    name = "tuner"

    def __init__(self, per_call: int = 4, seed: int = 0) -> None:
        self.per_call = per_call
        self.seed = seed
        self._proposed: set[str] = set()

    def propose(self, parent: Kernel, diagnosis: Diagnosis, history: list[Attempt]) -> list[Kernel]:
        bottleneck = _bottleneck_of(diagnosis)
        tried = {a.kernel_hash for a in history} | self._proposed | {parent.hash}
        out: list[Kernel] = []
        for changes in self._candidate_changes(parent.source, bottleneck, parent.hash):
            kernel = Kernel(source=apply(parent.source, changes), origin="tuner", parent_hash=parent.hash,
                            note=_describe(changes))  # fmt: skip
            if kernel.hash in tried:
                continue
            tried.add(kernel.hash)
            self._proposed.add(kernel.hash)
            out.append(kernel)
            if len(out) == self.per_call:
                break
        return out

    def _candidate_changes(self, source: str, bottleneck: str, parent_hash: str) -> list[dict[Knob, int]]:
        knobs = find_knobs(source)
        singles = [{k: v} for k in knobs for v in moves_for(k, bottleneck)]
        pairs = [a | b for a, b in itertools.combinations(singles, 2) if next(iter(a)) != next(iter(b))]
        rng = random.Random(f"{self.seed}:{parent_hash}")
        ranked: list[dict[Knob, int]] = []
        for tier in (singles, pairs):
            tier = list(tier)
            rng.shuffle(tier)
            # Within a tier, block sizes first (the largest lever), then warps, then stages.
            order = {"block": 0, "warps": 1, "grid": 2, "stages": 3}
            ranked += sorted(tier, key=lambda c: min(order[k.kind] for k in c))
        return ranked


def _bottleneck_of(diagnosis: Diagnosis) -> str:
    if diagnosis.bottlenecks:
        return diagnosis.bottlenecks[0].category
    if diagnosis.roofline is not None:
        return diagnosis.roofline.bottleneck
    return "unknown"


def _describe(changes: dict[Knob, int]) -> str:
    return ", ".join((f"{k.name} ({k.launch})" if k.kind == "grid" else f"{k.name} {k.value} -> {v}")
                     + (f" ({k.launch})" if k.kind in ("warps", "stages") else "")
                     for k, v in sorted(changes.items(), key=lambda kv: (kv[0].line, kv[0].col)))  # fmt: skip


@dataclass(frozen=True)
class JitInfo:
    constexprs: frozenset[str]  # parameters annotated tl.constexpr: the only block-size knobs
    loops: bool  # num_stages matters only for kernels that loop
    autotuned: bool  # @triton.autotune configs set num_warps/num_stages: do not add them at launch


def jit_functions(tree: ast.Module) -> dict[str, JitInfo]:
    """The module's @triton.jit functions by name."""
    nodes = {}
    for node in tree.body:
        decorators = [ast.unparse(d) for d in node.decorator_list] if isinstance(node, ast.FunctionDef) else []
        if any("jit" in d for d in decorators):
            nodes[node.name] = (node, decorators)
    loops = _loops_of({name: node for name, (node, _) in nodes.items()})
    found = {}
    for name, (node, decorators) in nodes.items():
        args = node.args.args + node.args.kwonlyargs
        found[name] = JitInfo(
            constexprs=frozenset(a.arg for a in args if a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr")),
            loops=loops[name],
            autotuned=any("autotune" in d for d in decorators),
        )
    return found


def kernel_loops(tree: ast.Module, name: str) -> bool:
    """Whether jit function ``name`` of the module runs a loop Triton compiles as one, itself or in a jit
    function it calls: only then does ``num_stages`` change its code (True for a name it cannot find)."""
    info = jit_functions(tree).get(name)
    return info.loops if info is not None else True


def _loops_of(functions: dict[str, ast.FunctionDef]) -> dict[str, bool]:
    """Whether each jit function runs a loop Triton compiles as one (``compiled_loop``), itself or in a jit
    function it calls."""

    def callees(func: ast.FunctionDef) -> set[str]:
        return {n.func.id for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)} & set(functions)

    loops = {name: compiled_loop(func) for name, func in functions.items()}
    calls = {name: callees(func) for name, func in functions.items()}
    changed = True
    while changed:  # through calls, to a fixed point
        changed = False
        for name in functions:
            if not loops[name] and any(loops[c] for c in calls[name]):
                loops[name] = changed = True
    return loops


def compiled_loop(func: ast.AST) -> bool:
    """Whether ``func``'s own body has a loop Triton compiles as one: the only kind ``num_stages`` can
    pipeline. A ``tl.static_range`` loop is unrolled before compiling, so every stage count compiles the
    same code there."""
    return any(isinstance(n, ast.While) or (isinstance(n, ast.For) and not _unrolled(n)) for n in ast.walk(func))


def _unrolled(loop: ast.For) -> bool:
    call = loop.iter
    if not isinstance(call, ast.Call):
        return False
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return name == "static_range"


def launches(func: ast.AST, jit_names: set[str]) -> list[ast.Call]:
    """``kernel[grid](...)`` calls directly inside ``func`` (nested functions are visited on their own)."""
    calls = []
    for node in _own_nodes(func):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                and isinstance(node.func.value, ast.Name) and node.func.value.id in jit_names):  # fmt: skip
            calls.append(node)
    return calls


def _own_nodes(func: ast.AST) -> list[ast.AST]:
    nodes, stack = [], list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        nodes.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return nodes


def _block_literal(value: ast.expr, scope: ast.AST, module: ast.Module) -> ast.Constant | None:
    """The int literal that sets a block-size argument: inline, via a name (``_value_of``), or a min/max cap."""
    if is_int(value):
        return value
    if isinstance(value, ast.Name):
        assigned = _value_of(value.id, scope, module)
        return _block_literal(assigned, scope, module) if assigned is not None and not isinstance(assigned, ast.Name) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("min", "max"):
        ints = [a for a in value.args if is_int(a)]
        return ints[0] if len(ints) == 1 else None
    return None


def is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def swap_grid_axes(source: str, launch: str) -> str:
    """Swap grid axes 0 and 1 of ``launch``: in its grid tuple and its program_id/num_programs calls."""
    tree = ast.parse(source)
    grid = next((g for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)] + [tree]
                 for call in launches(func, {launch}) if (g := _grid_tuple(call, func)) is not None), None)  # fmt: skip
    axis_literals = _program_id_calls(tree, launch)
    if grid is None or axis_literals is None:
        return source
    first, second = grid.elts[0], grid.elts[1]
    edits = [(first, ast.get_source_segment(source, second)), (second, ast.get_source_segment(source, first))]
    edits += [(lit, str(1 - lit.value)) for lit in axis_literals if lit.value in (0, 1)]
    lines = source.splitlines(keepends=True)
    for node, text in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        if node.lineno != node.end_lineno:
            return source  # a grid element over several lines: leave the kernel alone
        raw = lines[node.lineno - 1].encode()
        lines[node.lineno - 1] = (raw[: node.col_offset] + text.encode() + raw[node.end_col_offset :]).decode()
    return "".join(lines)


def single_assignment(name: str, scope: ast.AST, top_level: bool = False) -> ast.expr | None:
    """The value ``name`` is assigned in ``scope`` (only its own statements when ``top_level``), if it is
    assigned exactly once (else ambiguous); one element of a tuple assignment (``A, B = 16, 64``) counts."""
    nodes = scope.body if top_level else _own_nodes(scope)
    assigned = []
    for node in nodes:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            assigned.append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.For, ast.With, ast.NamedExpr)) and name in _bound_names(node):
            assigned.append(None)  # changed again, or bound by a loop: no one literal sets it
        for target in node.targets if isinstance(node, ast.Assign) else []:
            if isinstance(target, ast.Name) and target.id == name:
                assigned.append(node.value)
            elif isinstance(target, (ast.Tuple, ast.List)) and any(isinstance(e, ast.Name) and e.id == name for e in target.elts):
                values = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) else []
                names = [e.id if isinstance(e, ast.Name) else None for e in target.elts]
                assigned.append(values[names.index(name)] if len(values) == len(names) else None)
    return assigned[0] if len(assigned) == 1 else None


def _value_of(name: str, scope: ast.AST, module: ast.Module) -> ast.expr | None:
    """What ``name`` holds where a launch in ``scope`` reads it: its one assignment there, else the module's
    top-level assignment when that is the name's only binding anywhere in the module (no parameter, local,
    import, loop or comprehension variable of that name, no second assignment), else None: unknown."""
    if any(name in _bound_names(n) for n in _own_nodes(scope)):
        return single_assignment(name, scope)
    if scope is module or _bindings(name, module) != 1:
        return None
    return single_assignment(name, module, top_level=True)


def _bindings(name: str, module: ast.Module) -> int:
    """How many times ``name`` is bound anywhere in ``module``, parameters and imports included."""
    count = 0
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            count += 1
        elif isinstance(node, ast.arg) and node.arg == name:
            count += 1
        elif isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            count += 1
        elif isinstance(node, (ast.ExceptHandler, ast.FunctionDef, ast.ClassDef)) and node.name == name:
            count += 1
    return count


def _bound_names(node: ast.AST) -> set[str]:
    """Names a statement binds (stored to), not those it reads (``x[:BLOCK] = 0`` binds no ``BLOCK``)."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With, ast.NamedExpr)):
        return set()
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    if isinstance(node, ast.With):
        targets = [item.optional_vars for item in node.items]
    return {n.id for t in targets if t is not None for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}  # fmt: skip


def _grid_tuple(call: ast.Call, scope: ast.AST) -> ast.Tuple | None:
    grid = call.func.slice
    if isinstance(grid, ast.Name):
        grid = single_assignment(grid.id, scope)
    return grid if isinstance(grid, ast.Tuple) and len(grid.elts) >= 2 else None


def _program_id_calls(tree: ast.Module, launch: str) -> list[ast.Constant] | None:
    """The axis literals of ``tl.program_id``/``tl.num_programs`` in the jit function ``launch``;
    None when the function is not found or an axis is not a literal (then a swap is unsafe)."""
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == launch), None)
    if func is None:
        return None
    literals = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("program_id", "num_programs"):
            axis = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "axis"), None)
            if not is_int(axis):
                return None
            literals.append(axis)
    return literals

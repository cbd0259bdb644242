"""A kernel's joint knob space: every knob the tuner reads, of every launch, with its legal values.

A *point* is a plain ``dict[str, int]`` from dimension name to value; ``render`` writes the kernel at a
point. Names are ``"<launch>:<knob>"`` (``"matmul_kernel:BLOCK_K"``, ``"matmul_kernel:num_warps"``,
``"matmul_kernel:grid_swap"``), so knobs of several launches stay apart.

Legal values:

- block constexprs: powers of two, from a sixteenth of the kernel's own value (at least 16 in a kernel
  that calls ``tl.dot``) up to the next power of two of the matching problem size when ``sizes`` is given,
  else sixteen times the kernel's own value; a block its launch's grid says must divide a size (a compiler
  seed's axis without bounds masks, ``whole_blocks``) only up to the largest power of two dividing it;
- ``num_warps``: 1 to 16, powers of two; ``num_stages``: 1 to 5, only for kernels that loop (as the tuner);
- the grid axis swap: 0 (as written) or 1 (axes 0 and 1 swapped);
- the moves beyond the launch knobs (``knob_moves.find_moves``, ``MOVE_VALUES``), each a rewrite that leaves
  what the kernel computes alone: a jit function's loads hint (``"<fn>:loads"``: -1 as written where its
  loads differ, 0 none, 1 ``evict_first``, 2 ``evict_last``, 3 ``.cg``), each ``range``/``tl.range``
  loop's own ``num_stages`` (``"<fn>:loop<i>_stages"``: 0 the launch's, 1 to 4), the function's loops'
  ``loop_unroll_factor`` (``"<fn>:unroll"``: 1, 2, 4), its precise transcendentals or libdevice's fast
  approximations (``"<fn>:math"``: 0 as written, 1 fast; the one move that changes the values computed,
  within the approximations' error, which the verifier judges) and, on a GPU only (``shared_bytes`` given), each
  launch's ``maxnreg`` (0 no cap, 64, 96, 128). They come after the launch knobs, in source order, on a
  GPU (``space_of(moves=True/False)`` to say otherwise): they make the bundled problems' spaces 4 to 2,400
  times larger, which paid on a GPU side by side (``scripts/knob_moves_bench.py``, docs/optimiser.md), and
  on the CPU, whose interpreter ignores them all, every one would be a candidate that cannot differ.

Points past what a GPU's registers or shared memory hold are legal values but over the space's limits
(``over_limits``): the searcher never suggests them, and a sweep covers the rest.

A persistent grid (programs = SMs, each looping) is not a knob: it needs the kernel body rewritten into
a loop over tiles, which is not safe for an arbitrary body, and where it was safe it did not pay
(docs/optimiser.md). A kernel written that way keeps it, with its tiles as knobs: the compiler seed of
Inductor's persistent TMA matmul template launches ``min(SMs, tiles)`` programs (``compile_seed``).
"""

from __future__ import annotations

import ast
import itertools
import math
import re

from beamsearch.records.search import BlockTile, DotTile, KnobDim, KnobSpace
from workers.proposers.autotune_configs import without_autotune
from workers.proposers.knob_moves import LOAD_HINTS, LOOP_STAGES, MATH, MAXNREG, UNROLL, apply_all, find_moves
from workers.proposers.tuner import LAUNCH_KINDS, Knob, find_knobs

BLOCK_CAP = 1 << 16  # the largest block value considered; larger tiles do not fit a program's registers
WARPS = [1, 2, 4, 8, 16]
STAGES = [1, 2, 3, 4, 5]
GRID_SWAP = "grid_swap"
# Output tiles (BLOCK_M, BLOCK_N, BLOCK_K) that keep tensor cores busy, in order of preference: each loaded
# operand feeds 64 to 256 multiply-adds, and the accumulator still fits a program's registers. A kernel's
# own tile from a first draft (32s and 64s) leaves most of that on the table, and one knob step at a time
# reaches these only after several rounds.
MMA_TILES = [(128, 256, 64), (256, 128, 64), (128, 128, 64), (128, 128, 32), (64, 256, 64), (128, 64, 64)]
MMA_WIDE_TILE = 128 * 256  # tiles at least this large get 8 warps, smaller ones 4
# Shared memory one tile's operand pipeline may take (each stage a tile of A and one of B): enough stages to
# hide the loads, within an A100's 164 KB and an H100's 227 KB.
MMA_PIPELINE_BYTES = 160 * 1024
# A thread of an NVIDIA GPU addresses at most 255 registers, and a program's threads share one SM's file of
# 64 K: a dot launch whose fp32 accumulator alone needs that many a thread spills it to local memory, or
# fails in ptxas (its compile outlasting a search's limit first, often).
REGISTERS_PER_THREAD = 256
REGISTER_FILE = 65536
# A launch without tl.dot holds its block's tile in registers: at this many elements a thread, twice the
# registers a thread has, it spills; on an H200 and an H100 every such point compiled past the search's
# limit or ran at 2.3 to 23 times its space's best time (GELU, cumsum, a mean reduction).
ELEMENTS_PER_THREAD = 512
# The legal values of the knobs beyond the launch's (``knob_moves.find_moves``); each kernel's own value is added.
MOVE_VALUES = {"loads": sorted(LOAD_HINTS), "loop_stages": LOOP_STAGES, "unroll": UNROLL, "math": MATH, "maxnreg": MAXNREG}
# How ``describe`` names their values where a number would not say it.
VALUE_NAMES = {"loads": {-1: "as written", 0: "no hint", 1: "evict_first", 2: "evict_last", 3: ".cg"},
               "loop_stages": {0: "the launch's"}, "unroll": {1: "none"}, "math": {0: "as written", 1: "fast"},
               "maxnreg": {0: "none"}}  # fmt: skip


def space_of(source: str, sizes: dict[str, int] | None = None, operand_bytes: int = 2,
             shared_bytes: int | None = None, moves: bool | None = None) -> KnobSpace:  # fmt: skip
    """Every knob of every launch in ``source``, with legal values; no dims when it has none or does not
    parse. ``sizes`` maps problem dimension names (``{"M": 4096, "N": 4096, "K": 4096}``) to sizes: a
    block knob whose name names an axis (``BLOCK_K``, ``BLOCK_SIZE_K``, ``K_BLOCK``, ``TILE_K``, ``BK``:
    ``_axis_of``) is bounded by that size, any other by the largest. Each ``tl.dot`` launch with M, N and
    K block knobs gets a ``DotTile``: its knobs, its operands' ``operand_bytes`` and the ``shared_bytes``
    of the GPU's shared memory a program may take; any other launch with block knobs and readable warps a
    ``BlockTile`` (``over_limits``). With ``moves``, also the knobs ``knob_moves.find_moves`` reads:
    loads hints, loop options, and, on a GPU (``shared_bytes`` given: the CPU's interpreter has no
    registers to cap), each launch's ``maxnreg``. ``moves`` None: on a GPU only, since the CPU's
    interpreter ignores every one of them and each would be a candidate that cannot differ."""
    detuned = without_autotune(source)
    source = detuned.source
    dot_kernels = _kernels_calling_dot(source)
    gpu = shared_bytes is not None
    named = _named_knobs(source, moves=gpu if moves is None else moves, maxnreg=gpu)
    divides = whole_blocks(source)
    authored = _config_values(named, detuned.configs)
    dims = []
    for name, knob in named.items():
        if knob.kind == "block":
            values = _block_values(knob, sizes, floor=16 if knob.launch in dot_kernels else 1)
            if (size := divides.get(knob.site, {}).get(knob.name)) is not None:
                values = [v for v in values if size % v == 0]
        elif knob.kind == "warps":
            values = WARPS
        elif knob.kind == "stages":
            values = STAGES
        elif knob.kind in MOVE_VALUES:
            values = MOVE_VALUES[knob.kind]
        else:
            values = [0, 1]
        values = {*values, knob.value, *(c[name] for c in authored if name in c)}
        dims.append(KnobDim(name=name, kind=knob.kind, values=sorted(values), start=knob.value))
    launches = _launches(named, dims)
    tiles = [DotTile(m=axes["M"].name, n=axes["N"].name, k=axes["K"].name, warps=_name(knobs.get("num_warps")),
                     stages=_name(knobs.get("num_stages")), operand_bytes=operand_bytes, shared_bytes=shared_bytes)
             for knobs, axes in _dot_launches(dot_kernels, launches)]  # fmt: skip
    # A dot kernel's blocks are not one register tile (BLOCK_K is no part of its accumulator), nor are the M, N
    # and K blocks of a launch whose dot the source hides from us: those launches get no BlockTile.
    blocks = [BlockTile(blocks=[d.name for d in knobs.values() if d.kind == "block"], warps=knobs["num_warps"].name)
              for (launch, _), knobs in launches.items()
              if launch not in dot_kernels and "num_warps" in knobs and any(d.kind == "block" for d in knobs.values())
              and not {"M", "N", "K"} <= {_axis_of(n) for n, d in knobs.items() if d.kind == "block"}]  # fmt: skip
    space = KnobSpace(dims=dims, tiles=tiles, blocks=blocks)
    # A config sets launch knobs only: its point names those (the moves keep their start where it is used).
    launch = [d.name for d in dims if d.kind in LAUNCH_KINDS]
    configs = [{n: v for n, v in space.complete(p).items() if n in launch} for p in authored]
    return space.model_copy(update={"configs": configs})


def autotune_points(space: KnobSpace) -> list[dict[str, int]]:
    """The configs of the ``@triton.autotune`` kernels ``space`` was built from (``space_of``), as its
    points, in the decorators' order: the i-th point sets every such kernel's launches to its i-th config."""
    return [dict(p) for p in space.configs]


def _config_values(named: dict[str, Knob], configs: dict[str, list[dict[str, int]]]) -> list[dict[str, int]]:
    """Per config index, the knob values its configs give the launches of their kernels."""
    points = []
    for i in range(max((len(c) for c in configs.values()), default=0)):
        point = {name: configs[k.launch][i][k.name] for name, k in named.items()
                 if len(configs.get(k.launch, ())) > i and k.name in configs[k.launch][i]}  # fmt: skip
        if point:
            points.append(point)
    return points


def over_limits(space: KnobSpace, point: dict[str, int]) -> str | None:
    """Why ``point`` cannot run well on a GPU, or None: a dot launch whose fp32 accumulator alone takes
    all the registers a thread may have (``REGISTERS_PER_THREAD``, or its share of ``REGISTER_FILE``),
    or whose operand pipeline needs more shared memory than a program may take (``pipeline_bytes``); or
    another launch whose block tile takes ``ELEMENTS_PER_THREAD`` elements a thread or more. ``point`` has
    every name of the space."""
    for limit in [*space.blocks, *space.tiles]:
        if why := _over(limit, point):
            return why
    return None


def _over(limit: BlockTile | DotTile, point: dict[str, int]) -> str | None:
    return _block_over(limit, point) if isinstance(limit, BlockTile) else _dot_over(limit, point)


def _block_over(block: BlockTile, point: dict[str, int]) -> str | None:
    warps = point[block.warps]
    per_thread = math.prod(point[name] for name in block.blocks) // (32 * warps)
    if per_thread < ELEMENTS_PER_THREAD:
        return None
    return (f"{' x '.join(block.blocks)} = {' x '.join(str(point[n]) for n in block.blocks)} over {warps} "
            f"warps: {per_thread} elements a thread, twice or more the registers a thread has")  # fmt: skip


def _dot_over(tile: DotTile, point: dict[str, int]) -> str | None:
    """A launch whose warps the tuner cannot read (``num_warps=nw``) has no register limit; one with no
    stages knob (it does not loop, or sets them in a way the tuner cannot read) counts one operand buffer."""
    bm, bn = point[tile.m], point[tile.n]
    if tile.warps is not None:
        threads = 32 * point[tile.warps]
        per_thread, most = bm * bn // threads, min(REGISTERS_PER_THREAD, REGISTER_FILE // threads)
        if per_thread >= most:
            return (f"{tile.m} x {tile.n} = {bm} x {bn} over {point[tile.warps]} warps: an accumulator of "
                    f"{per_thread} registers a thread, which may have fewer than {most}")  # fmt: skip
    shared = pipeline_bytes(tile, point)
    if tile.shared_bytes is not None and shared > tile.shared_bytes:
        stages = f"{point[tile.stages]} stages" if tile.stages else "one stage"
        return (f"{tile.m}, {tile.n}, {tile.k} = {bm}, {bn}, {point[tile.k]} with {stages}: {shared} bytes of "
                f"shared memory, and a program may take {tile.shared_bytes}")  # fmt: skip
    return None


def pipeline_bytes(tile: DotTile, point: dict[str, int]) -> int:
    """The shared memory a dot launch's operand tiles take at ``point``: one BLOCK_M x BLOCK_K and one
    BLOCK_K x BLOCK_N tile a buffer; ``num_stages`` buffers where a warp group's MMA can take the tile (4
    warps or more, BLOCK_M of 64 or more), which reads its operands there; else one fewer; one without a
    stages knob. Triton's OutOfResources on an H200 required exactly this every time, and no point it ran
    needed more (tests/data/gpu_limits)."""
    if tile.stages is None:
        buffers = 1
    else:
        stages = point[tile.stages]
        warp_group = tile.warps is not None and point[tile.warps] >= 4 and point[tile.m] >= 64
        buffers = stages if warp_group else max(stages - 1, 1)
    return buffers * (point[tile.m] + point[tile.n]) * point[tile.k] * tile.operand_bytes


def points_within_limits(space: KnobSpace) -> int:
    """How many points of ``space`` are within its limits (``over_limits``): for each launch with limits,
    the combinations of its knobs within them (launches share no knob), times the values of every other knob."""
    limits: list[BlockTile | DotTile] = [*space.blocks, *space.tiles]
    by_name = {d.name: d for d in space.dims}
    within, named = 1, set()
    for limit in limits:
        names = limit.knobs()
        named |= set(names)
        within *= sum(_over(limit, dict(zip(names, values, strict=True))) is None
                      for values in itertools.product(*(by_name[n].values for n in names)))  # fmt: skip
    return within * math.prod(len(d.values) for d in space.dims if d.name not in named)


def tensor_core_tiles(space: KnobSpace) -> list[dict[str, int]]:
    """Points of ``space`` at the MMA_TILES, for each of its dot launches (``space.tiles``): as many stages
    as fit MMA_PIPELINE_BYTES with the launch's operand size, and 8 warps for wide tiles. A tile value the
    space does not allow (a problem smaller than the tile) becomes the nearest legal one. Other knobs stay
    at their start. Empty for a space without dot launches: these are first points for the searcher, never
    a limit."""
    start = space.start()
    points: list[dict[str, int]] = []
    for launch in space.tiles:
        m, n, k = space.dim(launch.m), space.dim(launch.n), space.dim(launch.k)
        for tile in MMA_TILES:
            bm, bn, bk = (_nearest_legal(dim, v) for dim, v in zip((m, n, k), tile, strict=True))
            point = {m.name: bm, n.name: bn, k.name: bk}
            if launch.warps is not None:
                point[launch.warps] = _nearest_legal(space.dim(launch.warps), 8 if bm * bn >= MMA_WIDE_TILE else 4)
            if launch.stages is not None:
                per_stage = (bm + bn) * bk * launch.operand_bytes
                stages = space.dim(launch.stages).values
                point[launch.stages] = max([s for s in stages if s * per_stage <= MMA_PIPELINE_BYTES], default=stages[0])
            point = start | point
            if point != start and point not in points:
                points.append(point)
    return points


def _launches(named: dict[str, Knob], dims: list[KnobDim]) -> dict[tuple[str, tuple[int, int]], dict[str, KnobDim]]:
    """Each launch's knobs by knob name (``num_warps``, ``BLOCK_K``), by (kernel, the launch call's place)."""
    launches: dict[tuple[str, tuple[int, int]], dict[str, KnobDim]] = {}
    for dim in dims:
        knob = named.get(dim.name)
        if knob is not None:
            launches.setdefault((knob.launch, knob.site), {})[knob.name] = dim
    return launches


def _dot_launches(dot_kernels: set[str], launches: dict[tuple[str, tuple[int, int]], dict[str, KnobDim]]
                  ) -> list[tuple[dict[str, KnobDim], dict[str, KnobDim]]]:  # fmt: skip
    """For each launch of a ``tl.dot`` kernel with M, N and K block knobs: its knobs by knob name, and its
    block knobs by axis."""
    found = []
    for (launch, _), knobs in launches.items():
        if launch not in dot_kernels:
            continue
        axes = {_axis_of(name): dim for name, dim in knobs.items() if dim.kind == "block"}
        if {"M", "N", "K"} <= axes.keys():
            found.append((knobs, axes))
    return found


def _name(dim: KnobDim | None) -> str | None:
    return dim.name if dim is not None else None


def render(source: str, space: KnobSpace, point: dict[str, int]) -> str:
    """``source`` with every knob at ``point``'s value (knobs at their start value are left as written).
    Raises ValueError when ``space`` is not ``source``'s space or the point has an unknown name or an
    illegal value. A point missing some names keeps those knobs at their start. An ``@triton.autotune``
    kernel is written as plain launches at the point (``autotune_configs``), its start included."""
    point = space.complete(point)
    source = without_autotune(source).source
    names = {d.name for d in space.dims}
    # A space built without the moves (``space_of(moves=False)``, or on the CPU without maxnreg) lacks some.
    knobs = {n: k for n, k in _named_knobs(source, moves=True, maxnreg=True).items() if k.kind in LAUNCH_KINDS or n in names}
    if [d.name for d in space.dims] != list(knobs) or any(d.start != knobs[d.name].value for d in space.dims):
        raise ValueError("this knob space was not built from this source (its knobs or their values differ)")
    return apply_all(source, {knobs[name]: value for name, value in point.items() if value != knobs[name].value})


def describe(space: KnobSpace, point: dict[str, int]) -> str:
    """The point's changes from the start, for a candidate's note: ``"k:BLOCK 1024 -> 4096, k:num_warps 4 -> 16"``."""
    changes = []
    for dim in space.dims:
        value = point.get(dim.name, dim.start)
        if value == dim.start:
            continue
        names = VALUE_NAMES.get(dim.kind, {})
        changes.append(
            f"{dim.name} (axes 0<->1)" if dim.kind == "grid"
            else f"{dim.name} {names.get(dim.start, dim.start)} -> {names.get(value, value)}"
        )
    return ", ".join(changes) or "the kernel as written"


def whole_blocks(source: str) -> dict[tuple[int, int], dict[str, int]]:
    """By launch call site (``Knob.site``): the sizes each block constexpr must divide, from a grid written
    ``lambda meta: _grid(meta, axes, [(numel, 'XBLOCK'), ...])``, as ``compile_seed`` writes a launch whose
    axes Inductor compiled without bounds masks (its ``_grid`` refuses any other block at launch). A block
    named twice must divide both (their gcd). Empty for any other grid, or a source that does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found: dict[tuple[int, int], dict[str, int]] = {}
    for call in ast.walk(tree):
        grid = call.func.slice if isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript) else None
        if not (isinstance(grid, ast.Lambda) and isinstance(grid.body, ast.Call) and len(grid.body.args) == 3
                and isinstance(grid.body.args[2], ast.List)):  # fmt: skip
            continue
        sizes: dict[str, int] = {}
        for pair in grid.body.args[2].elts:
            if isinstance(pair, ast.Tuple) and len(pair.elts) == 2 and all(isinstance(e, ast.Constant) for e in pair.elts):
                numel, block = (e.value for e in pair.elts)
                if type(numel) is int and numel > 0 and isinstance(block, str):
                    sizes[block] = math.gcd(sizes.get(block, 0), numel)
        if sizes:
            found[(call.lineno, call.col_offset)] = sizes
    return found


def _named_knobs(source: str, moves: bool = False, maxnreg: bool = False) -> dict[str, Knob]:
    """The tuner's knobs by space name, in source order; a later launch of the same kernel gets ``#2``...
    With ``moves``, ``find_moves``'s after them (``maxnreg``: with the launches' register caps), so a
    kernel's launch knobs keep their places."""
    named: dict[str, Knob] = {}
    found = sorted(find_knobs(source), key=lambda k: (k.line, k.col))
    found += sorted(find_moves(source, maxnreg) if moves else [], key=lambda k: (k.line, k.col, k.name))
    for knob in found:
        base = f"{knob.launch}:{GRID_SWAP if knob.kind == 'grid' else knob.name}"
        name, n = base, 1
        while name in named:
            n += 1
            name = f"{base}#{n}"
        named[name] = knob
    return named


def _block_values(knob: Knob, sizes: dict[str, int] | None, floor: int) -> list[int]:
    low = max(floor, knob.value >> 4, 1)
    size = _size_for(knob.name, sizes) if sizes else None
    high = _next_pow2(size) if size else knob.value << 4
    high = max(min(high, BLOCK_CAP), knob.value)  # the kernel's own value and all between stay legal
    return [1 << e for e in range(low.bit_length() - 1, high.bit_length())]


def _size_for(block_name: str, sizes: dict[str, int]) -> int | None:
    """The problem size a block knob tiles: ``BLOCK_K``/``BLOCK_SIZE_K``/``K_BLOCK``/``TILE_K``/``BK`` ->
    ``sizes["K"]`` (any case), else the largest size."""
    by_name = {k.upper(): v for k, v in sizes.items() if v > 0}
    axis = _axis_of(block_name)
    if axis and axis in by_name:
        return by_name[axis]
    return max(by_name.values(), default=None)


def _axis_of(block_name: str) -> str:
    """``BLOCK_K``, ``BLOCK_SIZE_K``, ``K_BLOCK``, ``TILE_K``, ``BK`` -> ``"K"``; ``BLOCK`` -> ``""``."""
    axis = re.sub(r"^(BLOCK|TILE)_(SIZE_)?|_?(BLOCK|TILE)(_SIZE)?$", "", block_name.upper())
    return axis[1] if re.fullmatch(r"B[MNK]", axis) else axis


def _nearest_legal(dim: KnobDim, value: int) -> int:
    # Block and warp values are consecutive powers of two, so the nearest is by exponent, ties to the smaller.
    return min(dim.values, key=lambda v: (abs(v.bit_length() - value.bit_length()), v))


def _next_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _kernels_calling_dot(source: str) -> set[str]:
    """Names of the module's functions that call ``tl.dot``, themselves or through functions of the module
    they call (its operands need tiles of at least 16)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    calls = {name: {n.func.id for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
             for name, f in functions.items()}  # fmt: skip
    found = {name for name, f in functions.items()
             if any(isinstance(n, ast.Attribute) and n.attr == "dot" for n in ast.walk(f))}  # fmt: skip
    while more := {name for name in functions if name not in found and calls[name] & found}:
        found |= more
    return found

"""A starting kernel from torch.compile's own Triton: Inductor's kernels, made standalone.

``seed_from_inductor`` reads a recorded Inductor wrapper (``output_code.py``) and the configs Inductor's
autotuner chose, and writes a Triton module whose ``kernel_function`` allocates what Inductor's ``call``
allocates and launches each kernel as a plain ``@triton.jit`` function. The chosen config is written as
launch keywords with int literals (``XBLOCK=2048, num_warps=4, num_stages=1``): the tuner's knobs.

Pure: no GPU, no torch.compile. Where the wrapper calls an extern library or a PyTorch operator (the
verifier would reject that as PyTorch compute), or holds something this module does not reproduce, the
result is ``unavailable`` with the reason.

Inductor compiles for the shapes it saw: sizes and strides are literals in the kernels (and masks are
dropped where blocks divide them), so a seed is valid only at the recorded input shapes; its
``kernel_function`` checks them and raises a ValueError naming both shapes otherwise.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from pydantic import Field

from beamsearch.records.schema import Record
from workers.proposers.inductor_code import (
    Alloc,
    InductorCodeError,
    InductorModule,
    Launch,
    Plain,
    TritonKernel,
    parse_output_code,
    resolve_multi_kernels,
)
from workers.proposers.seed_portfolio import code_key

LAUNCH_OPTIONS = ("num_warps", "num_stages")
# Inductor's split of one reduction across RSPLIT programs a row, combined through a workspace after a grid
# barrier (``triton.cooperative_reductions``): grid (RSPLIT, cdiv(xnumel, XBLOCK)).
COOPERATIVE_GRID = "CooperativeReductionGrid"
# Grid types Inductor launches as cdiv(numel, BLOCK) per axis; the axis order is Inductor's (x, y, z). A
# cooperative reduction's x axis comes after its RSPLIT programs (``_cooperative_grid``).
GRID_AXES = {"Grid1D": ("x",), "Grid2D": ("x", "y"), "Grid3D": ("x", "y", "z"), COOPERATIVE_GRID: ("x",)}
# A compiler builtin of Inductor's (its cooperative reductions size their blocks with it) that Triton's
# interpreter cannot call; the seed defines the same function as a constexpr function, which both run.
NEXT_POWER_OF_2 = "triton_helpers.constexpr_next_power_of_2("
# A template (max-autotune's matmul) fixes its config in its body; these tile constexprs become launch
# knobs when its grid is the matmul's cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) programs (GROUP_M only orders them).
TEMPLATE_KNOBS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")


class SeedResult(Record):
    """A standalone kernel module, or why there is none."""

    source: str | None = None
    unavailable: str | None = Field(None, description="why no seed was written; None when source is set")
    kernels: list[str] = Field(default_factory=list, description="the Triton kernels it launches, in order")
    configs: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="Inductor's chosen config of each kernel (num_stages is written only where a kernel loops)",
    )
    input_shapes: list[list[int]] = Field(default_factory=list, description="the only shapes it is valid for")
    notes: list[str] = Field(
        default_factory=list, description="what the reader should know (config matching...)"
    )
    variant: str = Field("default", description="the portfolio variant recorded (workers/harness/inductor_portfolio.py)")
    options: dict[str, bool | int | float | str] = Field(
        default_factory=dict, description="the Inductor options the variant set on top of max-autotune"
    )
    code_key: str | None = Field(
        None, description="equal for recordings that give the same seed up to names and configs (seed_portfolio)"
    )

    @property
    def available(self) -> bool:
        return self.source is not None


def seed_from_recording(folder: Path, graph_args: list[int | str] | None = None) -> SeedResult:
    """``seed_from_inductor`` on a folder written by workers/harness/record_inductor.py: ``output_code.py``,
    ``chosen_configs.json`` and/or ``best_configs.json``, ``graph_args.json`` (what each graph argument
    is, unless ``graph_args`` is given) and ``meta.json`` for the input shapes and the inputs that are
    plain numbers."""
    code = folder / "output_code.py"
    if not code.is_file():
        return SeedResult(unavailable=f"no Inductor output code at {code}")
    if graph_args is None and (folder / "graph_args.json").is_file():
        recorded = json.loads((folder / "graph_args.json").read_text())
        if not isinstance(recorded, list):
            return SeedResult(unavailable=f"{folder / 'graph_args.json'} is not a list: {recorded!r}")
        unknown = [i for i, g in enumerate(recorded) if not isinstance(g, (int, str))]
        if unknown:
            return SeedResult(unavailable=f"graph arguments {unknown} are neither forward inputs nor model values "
                                          f"the verifier binds (recorded: {recorded})")  # fmt: skip
        graph_args = recorded
    configs = {name: _read_json(folder / f"{name}.json") for name in ("chosen_configs", "best_configs")}
    meta = _read_json(folder / "meta.json") or {}
    shapes, values = meta.get("input_shapes"), meta.get("input_values")
    picked = {name: entry.get("picked") if isinstance(entry, dict) else entry
              for name, entry in (_read_json(folder / "multi_kernel_choices.json") or {}).items()}  # fmt: skip
    result = seed_from_inductor(code.read_text(), chosen_configs=configs["chosen_configs"],
                                best_configs=configs["best_configs"], graph_args=graph_args,
                                input_shapes=shapes if isinstance(shapes, list) else None,
                                input_values={int(i): v for i, v in values.items()} if isinstance(values, dict) else None,
                                multi_kernel_choices={k: v for k, v in picked.items() if isinstance(v, str)})  # fmt: skip
    variant, options = meta.get("variant"), meta.get("options")
    return result.model_copy(update={"variant": variant if isinstance(variant, str) else "default",
                                     "options": options if isinstance(options, dict) else {}})  # fmt: skip


def seed_from_inductor(
    output_code: str,
    *,
    chosen_configs: dict[str, Any] | None = None,
    best_configs: dict[str, Any] | None = None,
    graph_args: list[int | str] | None = None,
    input_shapes: list[list[int]] | None = None,
    input_values: dict[int, int | float | bool] | None = None,
    multi_kernel_choices: dict[str, str] | None = None,
) -> SeedResult:
    """Inductor's kernels of ``output_code`` as a standalone module with their chosen configs.

    ``chosen_configs``: workers/harness/record_inductor.py's ``chosen_configs.json`` (kernel name -> {"config": ...}),
    preferred. ``best_configs``: the ``.best_config`` files by hash (``best_configs.json``); matched to
    kernels by the block constexprs each kernel takes, then by their order. ``graph_args``: what each of
    the compiled graph's arguments is, in order: an int is the index of a forward input, a str the name of
    a model value (``"weight"``) the verifier binds by keyword. Without it, ``input_shapes`` (the
    problem's forward inputs' shapes, in order) picks the arguments that are inputs, by their recorded
    shapes; a graph with arguments left over (model parameters) is then unavailable, naming them. With
    neither, every argument is the forward input of the same position. ``input_values``: forward inputs
    that are plain numbers, by position; Dynamo bakes them into the kernels, so ``kernel_function`` takes
    them where the problem passes them and refuses any other value. ``multi_kernel_choices``: the kernel
    each of Inductor's multi-kernels picked at run time (multi-kernel name -> kernel name); the seed
    launches that kernel alone. Never raises for bad input: the result says what is wrong.
    """
    choices = multi_kernel_choices or {}
    key = code_key(output_code, choices)
    try:
        result = _build(output_code, chosen_configs or {}, best_configs or {}, graph_args, input_shapes,
                        input_values or {}, choices)  # fmt: skip
    except InductorCodeError as e:
        result = SeedResult(unavailable=str(e))
    return result.model_copy(update={"code_key": key})


def _build(
    output_code: str,
    chosen_configs: dict[str, Any],
    best_configs: dict[str, Any],
    graph_args: list[int | str] | None,
    input_shapes: list[list[int]] | None,
    input_values: dict[int, int | float | bool],
    multi_kernel_choices: dict[str, str],
) -> SeedResult:
    """The seed, checked in order of what matters most to the reader: PyTorch compute, kernels this
    module cannot launch, missing configs, then the arguments."""
    module = parse_output_code(output_code)
    if module.call.foreign:
        names = ", ".join(dict.fromkeys(module.call.foreign))
        raise InductorCodeError(f"Inductor's call() runs PyTorch operators or extern kernels ({names}); "
                                "the verifier rejects PyTorch compute")  # fmt: skip
    module, multi_notes = resolve_multi_kernels(module, multi_kernel_choices)
    launched = list(dict.fromkeys(s.kernel for s in module.call.steps if isinstance(s, Launch)))
    if not launched:
        raise InductorCodeError("Inductor's call() launches no Triton kernel")
    templates = [name for name in launched if module.kernels[name].heuristics == "template"]
    axes = {name: _grid_axes(module.kernels[name]) for name in launched if name not in templates}
    configs, notes = _configs_for(module, list(axes), chosen_configs, best_configs)
    notes = multi_notes + notes
    launches: dict[str, tuple[str, list[str]]] = {}
    for name in templates:
        kernel, grid, configs[name] = _template(module.kernels[name], _template_grid(module, name))
        module = dataclasses.replace(module, kernels={**module.kernels, name: kernel})
        launches[name] = grid, [f"{k}={v}" for k, v in configs[name].items()]
    configs = {name: configs[name] for name in launched}
    if graph_args is None and input_shapes is not None:
        graph_args = _inputs_by_shape(module, input_shapes)
    signature, renames, baked = _signature(module.call.args, graph_args, input_values)
    launches |= {name: _launch_source(module.kernels[name], axes[name], configs[name]) for name in axes}
    outputs = module.call.outputs
    if module.training_forward and len(outputs) > 1:
        notes.append(f"a training forward graph: kernel_function returns its first of {len(outputs)} outputs "
                     "(the rest are saved for the backward); record under torch.no_grad() to avoid them")  # fmt: skip
        outputs = outputs[:1]
    source = _render(module, signature, renames, launches, outputs, baked)
    shapes = [list(c.size) for c in module.call.checks]
    return SeedResult(source=source, kernels=launched, configs=configs, input_shapes=shapes, notes=notes)


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _configs_for(
    module: InductorModule, launched: list[str], chosen: dict[str, Any], best: dict[str, Any]
) -> tuple[dict[str, dict[str, int]], list[str]]:
    """The config of each of the ``launched`` kernels (all but templates, whose config is their own) as
    ints: its constexprs plus num_warps/num_stages."""
    found: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for name in launched:
        entry = chosen.get(name)
        config = entry.get("config") if isinstance(entry, dict) else None
        if isinstance(config, dict):
            found[name] = config
    pending = [name for name in launched if name not in found]
    pool = [v["config"] for v in best.values() if isinstance(v, dict) and isinstance(v.get("config"), dict)]
    for name in pending:
        wanted = set(module.kernels[name].constexprs)
        fits = [c for c in pool if {k for k in c if k.isupper()} == wanted]
        if not fits:
            raise InductorCodeError(f"no recorded config for kernel {name} (it takes {sorted(wanted) or 'no'} "
                                    "constexprs)")  # fmt: skip
        if len(fits) > 1 or sum(1 for n in pending if set(module.kernels[n].constexprs) == wanted) > 1:
            notes.append(f"{name}: config matched by order among {len(fits)} with the same constexprs")
        found[name] = fits[0]
        pool.remove(fits[0])
    return {name: _int_config(module.kernels[name], found[name]) for name in launched}, notes


def _int_config(kernel: TritonKernel, config: dict[str, Any]) -> dict[str, int]:
    out = {}
    for key in (*kernel.constexprs, *LAUNCH_OPTIONS):
        value = config.get(key)
        if value is None and key in LAUNCH_OPTIONS:
            continue
        if type(value) is not int:
            raise InductorCodeError(f"kernel {kernel.name}: its config has no int {key} ({config})")
        out[key] = value
    return out


def _inputs_by_shape(module: InductorModule, input_shapes: list[list[int]]) -> list[int | str]:
    """Graph arguments numbered as forward inputs where their recorded shapes match, in order."""
    sizes = {c.name: list(c.size) for c in module.call.checks}
    graph_args: list[int | str] = []
    left: list[str] = []
    for name in module.call.args:
        n = sum(isinstance(g, int) for g in graph_args)
        if n < len(input_shapes) and sizes.get(name) == list(input_shapes[n]):
            graph_args.append(n)
        else:
            graph_args.append(name)
            left.append(f"{name} {tuple(sizes[name]) if name in sizes else '(no recorded shape)'}")
    found = sum(isinstance(g, int) for g in graph_args)
    if found != len(input_shapes):
        raise InductorCodeError(f"the compiled graph's arguments ({', '.join(module.call.args)}) do not take the "
                                f"problem's {len(input_shapes)} inputs of shapes {input_shapes} in order")  # fmt: skip
    if left:
        raise InductorCodeError(f"the compiled graph also takes {', '.join(left)}: model parameters, and the "
                                "recording does not say which model value each is (pass graph_args)")  # fmt: skip
    return graph_args


def _signature(
    args: list[str], graph_args: list[int | str] | None, input_values: dict[int, int | float | bool]
) -> tuple[list[str], dict[str, str], dict[str, int | float | bool]]:
    """kernel_function's parameters (forward inputs first, then model values), graph name <- parameter,
    and the parameters whose value Dynamo baked into the kernels (a number no graph argument takes)."""
    graph_args = list(range(len(args))) if graph_args is None else graph_args
    if len(graph_args) != len(args):
        raise InductorCodeError(f"the compiled graph takes {len(args)} arguments ({', '.join(args)}), "
                                f"graph_args describes {len(graph_args)}")  # fmt: skip
    inputs = sorted((g, a) for g, a in zip(graph_args, args, strict=True) if isinstance(g, int))
    baked = {i: v for i, v in input_values.items() if i not in {g for g, _ in inputs}}
    if sorted([g for g, _ in inputs] + list(baked)) != list(range(len(inputs) + len(baked))):
        raise InductorCodeError(f"graph_args must number the forward inputs 0..n-1 once each, with the inputs "
                                f"that are numbers ({sorted(input_values)}), got {graph_args}")  # fmt: skip
    values = [(g, a) for g, a in zip(graph_args, args, strict=True) if isinstance(g, str)]
    renames = {a: f"input{g}" for g, a in inputs} | {a: g for g, a in values}
    forward = [f"input{i}" for i in range(len(inputs) + len(baked))]
    return forward + [g for g, _ in values], renames, {f"input{i}": v for i, v in sorted(baked.items())}


def _template_grid(module: InductorModule, name: str) -> tuple[int, int, int]:
    """The fixed grid every launch of template ``name`` passes after the kernel's own arguments."""
    kernel = module.kernels[name]
    if kernel.grid_type != "FixedGrid":
        raise InductorCodeError(f"kernel {name}: Inductor's template kernels with grid type {kernel.grid_type} "
                                "are not supported")  # fmt: skip
    n = len(kernel.runtime_params)
    grids = {step.args[n:] for step in module.call.steps if isinstance(step, Launch) and step.kernel == name}
    if len(grids) != 1 or not all(len(g) == 3 and all(a.isdigit() for a in g) for g in grids):
        raise InductorCodeError(f"kernel {name}: its launches do not pass one fixed grid of three ints "
                                f"after its {n} arguments ({sorted(grids)})")  # fmt: skip
    x, y, z = (int(a) for a in grids.pop())
    return x, y, z


def _template(kernel: TritonKernel, grid: tuple[int, int, int]) -> tuple[TritonKernel, str, dict[str, int]]:
    """A template kernel, its grid's source and its config. Where the grid is the matmul's, its tiles
    become constexpr parameters (launch knobs, the grid following them): one program per tile, or for a
    persistent template (programs = SMs, each looping over tiles ``NUM_SMS`` apart) the smaller of the
    two. A convolution template's grid (output pixels by BLOCK_M, output channels by BLOCK_N) likewise.
    Otherwise the kernel keeps its fixed grid and tiles, and only num_warps and num_stages are knobs."""
    config = dict(kernel.options)
    tiles, sizes = kernel.body_constexprs, kernel.body_ints
    conv = _conv_grid(tiles, sizes, grid)
    if conv is not None:  # masked along every axis (pixels, output and input channels): any tile is safe
        return _lift(kernel, [k for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K") if k in tiles], conv, config, repr(grid))
    m, n = sizes.get("M"), sizes.get("N")
    programs = (-(-m // tiles["BLOCK_M"]) * -(-n // tiles["BLOCK_N"])
                if {"BLOCK_M", "BLOCK_N"} <= tiles.keys() and m is not None and n is not None else None)  # fmt: skip
    sms = tiles.get("NUM_SMS") if re.search(r"range\([^)\n]*\bNUM_SMS\b", kernel.jit_source) else None
    matmul_grid = programs is not None and grid[0] == (programs if sms is None else min(sms, programs))
    # constexprs Inductor derives from the tiles (scaled mm's MIN_BLOCK_TILE_*) would go stale if the tiles
    # moved; a persistent template's NUM_SMS is the GPU's, whatever the tiles
    derived = [k for k in tiles if k not in (*TEMPLATE_KNOBS, *(["NUM_SMS"] if sms else []))
               and ("BLOCK" in k or "SMS" in k)]  # fmt: skip
    lifted = [k for k in TEMPLATE_KNOBS if k in tiles] if matmul_grid and not derived else []
    if "BLOCK_K" in lifted:
        source, even_k = _even_k_follows_block_k(kernel.jit_source, sizes.get("K"))
        kernel = dataclasses.replace(kernel, jit_source=source)
        if not even_k:
            lifted.remove("BLOCK_K")
    tile_count = f"triton.cdiv({m}, meta['BLOCK_M']) * triton.cdiv({n}, meta['BLOCK_N'])"
    first = tile_count if sms is None else f"min({sms}, {tile_count})"
    return _lift(kernel, lifted, f"lambda meta: ({first}, {grid[1]}, {grid[2]})", config, repr(grid))


def _conv_grid(tiles: dict[str, Any], sizes: dict[str, int], grid: tuple[int, int, int]) -> str | None:
    """The grid source of Inductor's convolution template (2-D or 3-D) following its tiles, when the
    recorded grid is ``cdiv(BATCH * [OUT_D *] OUT_H * OUT_W, BLOCK_M)`` by ``cdiv(OUT_C, BLOCK_N)``."""
    names = ("BATCH", "OUT_C", "OUT_H", "OUT_W")
    if not ({"BLOCK_M", "BLOCK_N", "KERNEL_H", "KERNEL_W"} <= tiles.keys() and all(k in sizes for k in names)):
        return None
    pixels = sizes["BATCH"] * sizes.get("OUT_D", 1) * sizes["OUT_H"] * sizes["OUT_W"]
    if grid[:2] != (-(-pixels // tiles["BLOCK_M"]), -(-sizes["OUT_C"] // tiles["BLOCK_N"])):
        return None
    return (f"lambda meta: (triton.cdiv({pixels}, meta['BLOCK_M']), triton.cdiv({sizes['OUT_C']}, meta['BLOCK_N']), "
            f"{grid[2]})")  # fmt: skip


def _lift(kernel: TritonKernel, lifted: list[str], grid_source: str, config: dict[str, int],
          recorded: str) -> tuple[TritonKernel, str, dict[str, int]]:  # fmt: skip
    """``kernel`` with the ``lifted`` tile constexprs of its body made parameters (launch knobs) and
    launched on ``grid_source``; as it was, on its ``recorded`` grid, when there is nothing to lift or a
    tile is not written once as a literal."""
    source, tiles = kernel.jit_source, kernel.body_constexprs
    signature = re.search(rf"^def {kernel.name}\((.*)\):$", source, re.MULTILINE)
    unchanged = kernel, recorded, config
    if not lifted or signature is None:
        return unchanged
    for knob in lifted:
        source, found = re.subn(
            rf"^[ \t]+{knob}\s*:\s*tl\.constexpr\s*=\s*\d+[ \t]*\n", "", source, flags=re.MULTILINE
        )
        if found != 1:
            return unchanged
    params = signature.group(1) + "".join(f", {k} : tl.constexpr" for k in lifted)
    source = source.replace(signature.group(0), f"def {kernel.name}({params}):", 1)
    lifted_kernel = dataclasses.replace(kernel, jit_source=source, params=(*kernel.params, *lifted),
                                        constexprs=(*kernel.constexprs, *lifted))  # fmt: skip
    return lifted_kernel, grid_source, {k: tiles[k] for k in lifted} | config


def _even_k_follows_block_k(source: str, k: int | None) -> tuple[str, bool]:
    """``source`` made safe for any BLOCK_K the tuner picks, and whether it could be. Inductor's matmul
    template decides ``EVEN_K`` (BLOCK_K divides K) when it writes the kernel: true, the text has no masks
    along K, so the kernel gets a static assert that BLOCK_K divides K (a tile that does not is refused
    when it compiles instead of reading past K); false, the masks are in the text and any BLOCK_K is
    safe. Where the kernel itself branches on ``EVEN_K`` (bmm), it is computed from BLOCK_K."""
    definition = re.compile(r"^([ \t]+)EVEN_K\s*:\s*tl\.constexpr\s*=\s*(True|False)[ \t]*$", re.MULTILINE)
    found = definition.search(source)
    if found is None:
        return source, "EVEN_K" not in source  # no EVEN_K: the K loop masks whatever BLOCK_K is
    if k is None:
        return source, False
    indent, even = found.group(1), found.group(2) == "True"
    if len(re.findall(r"\bEVEN_K\b", source)) > 1:  # read by the kernel: let it follow BLOCK_K
        line = f"{indent}EVEN_K : tl.constexpr = {k} % BLOCK_K == 0"
    elif even:
        line = (f"{found.group(0)}\n{indent}tl.static_assert({k} % BLOCK_K == 0, "
                f"'Inductor wrote this kernel without masks along K: BLOCK_K must divide {k}')")  # fmt: skip
    else:
        return source, True
    return source[: found.start()] + line + source[found.end() :], True


def _grid_axes(kernel: TritonKernel) -> tuple[str, ...]:
    """The grid axes of a kernel this module can launch; raises for any other."""
    if kernel.heuristics not in ("pointwise", "reduction", "persistent_reduction", "cooperative_reduction"):
        raise InductorCodeError(f"kernel {kernel.name}: Inductor's {kernel.heuristics or 'undecorated'} kernels "
                                "are not supported")  # fmt: skip
    if (kernel.grid_type == COOPERATIVE_GRID) != (kernel.heuristics == "cooperative_reduction"):
        raise InductorCodeError(f"kernel {kernel.name}: a {kernel.heuristics} kernel on grid type {kernel.grid_type} "
                                "is not supported")  # fmt: skip
    if kernel.grid_type == COOPERATIVE_GRID and "RSPLIT" not in kernel.constexprs:
        raise InductorCodeError(f"kernel {kernel.name}: a cooperative reduction that takes no RSPLIT")
    axes = GRID_AXES.get(kernel.grid_type or "")
    if axes is None:
        raise InductorCodeError(f"kernel {kernel.name}: grid type {kernel.grid_type} is not supported")
    return axes


def _launch_source(
    kernel: TritonKernel, axes: tuple[str, ...], config: dict[str, int]
) -> tuple[str, list[str]]:
    """(grid source, keyword sources) for launching ``kernel`` at ``config``."""
    # num_stages pipelines loops only: leaving it out of a loop-free kernel keeps it out of the knob space
    keywords = [f"{k}={v}" for k, v in config.items() if k != "num_stages" or kernel.loops]
    if kernel.grid_type == COOPERATIVE_GRID:
        # its programs wait for each other at a grid barrier: CUDA must run them all at once or refuse
        keywords.append("launch_cooperative_grid=True")
        return _grid(kernel, axes, helper="_cooperative_grid", whole=[f"({config['RSPLIT']}, 'RSPLIT')"]), keywords
    return _grid(kernel, axes), keywords


def _grid(kernel: TritonKernel, axes: tuple[str, ...], helper: str = "_grid", whole: list[str] | None = None) -> str:
    """A grid lambda over the launch's numel arguments (``{xnumel}``, filled in per launch), read at launch
    time so a block constexpr the tuner changes changes the grid with it. Axes Inductor compiled without a
    bounds mask are listed as whole: there a block that does not divide the size is refused by ``_grid``
    instead of reading and writing out of bounds. A cooperative reduction's ``helper`` puts its RSPLIT
    programs first, RSPLIT listed as whole in its recorded value: the workspace Inductor sized holds that
    many partial results a row, so the knob space offers its divisors only."""
    grid, whole = [], list(whole or [])
    for axis in axes:
        numel = f"{axis}numel"
        if numel not in kernel.runtime_params:
            raise InductorCodeError(f"kernel {kernel.name}: grid axis {axis} has no {numel} argument")
        grid.append(f"({{{numel}}}, {_block_of(kernel, axis)})")
    for axis in sorted(kernel.unmasked):
        block = f"{axis.rstrip('_').upper()}{'_' if axis.endswith('_') else ''}BLOCK"
        if block in kernel.constexprs and f"{axis}numel" in kernel.runtime_params:
            whole.append(f"({{{axis}numel}}, {block!r})")
    return f"lambda meta: {helper}(meta, [{', '.join(grid)}], [{', '.join(whole)}])"


def _block_of(kernel: TritonKernel, axis: str) -> str:
    """The block of a grid axis: a launch constexpr's name (quoted), or the int the kernel fixes (1 when it
    has none: Inductor's grid then launches one program per element)."""
    block = f"{axis.upper()}BLOCK"
    return repr(block) if block in kernel.constexprs else str(kernel.body_constexprs.get(block, 1))


def _render(module: InductorModule, signature: list[str], renames: dict[str, str],
            launches: dict[str, tuple[str, list[str]]], outputs: list[str],
            baked: dict[str, int | float | bool]) -> str:  # fmt: skip
    kernels = [module.kernels[name] for name in launches]
    helpers = set().union(*(k.helpers for k in kernels))
    cooperative = any(k.grid_type == COOPERATIVE_GRID for k in kernels)
    lines = [
        '"""Inductor\'s own Triton kernels for this problem (torch.compile, max-autotune), made standalone.',
        "",
        "Valid only at the input shapes and strides Inductor compiled for (sizes are literals in the kernels);",
        "each launch carries the config Inductor's autotuner chose.",
        '"""',
        "",
        *(["import os"] if "libdevice" in helpers or cooperative else []),
        "",
        "import torch",
        "import triton",
        "import triton.language as tl",
    ]
    if "libdevice" in helpers:
        lines += ["", _LIBDEVICE_SOURCE]
    if any("make_tensor_descriptor" in k.jit_source for k in kernels):
        lines += ["", "", _SCRATCH_SOURCE]
    if "tl_math" in helpers:
        lines.append("from triton.language import math as tl_math")
    if "triton_helpers" in helpers:  # Inductor's @triton.jit device functions; not its launch runtime
        lines.append("from torch._inductor.runtime import triton_helpers")
    for source in _device_functions(kernels).values():
        lines += ["", "", source]
    if any(NEXT_POWER_OF_2 in k.jit_source for k in kernels):
        lines += ["", "", _NEXT_POWER_OF_2_SOURCE]
    for kernel in kernels:
        lines += ["", "", kernel.jit_source.replace(NEXT_POWER_OF_2, "_next_power_of_2(")]
    checks = [(renames.get(c.name, c.name), c) for c in module.call.checks]
    lines += ["", "", f"_SHAPES = {{{', '.join(f'{n!r}: ({c.size!r}, {c.stride!r})' for n, c in checks)}}}"]
    if baked:
        lines += ["", "", f"_VALUES = {baked!r}", "", "", _CHECK_VALUES_SOURCE]
    lines += ["", "", _CHECK_SOURCE, "", "", _GRID_SOURCE, "", ""]
    if cooperative:
        lines += [_COOPERATIVE_GRID_SOURCE, "", ""]
    lines.append(f"def kernel_function({', '.join(signature)}):")
    lines.append(f"    _check_shapes({', '.join(f'{n}={n}' for n, _ in checks)})")
    if baked:
        lines.append(f"    _check_values({', '.join(f'{n}={n}' for n in baked)})")
    lines += [f"    {graph} = {param}" for graph, param in renames.items() if graph != param]
    tensors = [n for n in signature if n not in baked]
    lines.append(f"    device = {tensors[0]}.device" if tensors else "    device = None")
    for step in module.call.steps:
        if isinstance(step, Alloc):
            lines.append(f"    {step.name} = torch.empty_strided({step.size}, {step.stride}, dtype={step.dtype}, "
                         "device=device)")  # fmt: skip
        elif isinstance(step, Plain):
            lines.append(f"    {step.source}")
        else:
            lines.append(_launch_line(module.kernels[step.kernel], step, *launches[step.kernel]))
    returned = outputs[0] if len(outputs) == 1 else "(" + ", ".join(outputs) + ",)"
    lines.append(f"    return {returned}")
    return "\n".join(lines) + "\n"


def _device_functions(kernels: list[TritonKernel]) -> dict[str, str]:
    """The kernels' own @triton.jit helpers, once each; two different ones of one name cannot share a module."""
    found: dict[str, str] = {}
    for kernel in kernels:
        for name, source in kernel.device_functions:
            if found.setdefault(name, source) != source:
                raise InductorCodeError(f"kernels define device function {name} differently")
    return found


def _launch_line(kernel: TritonKernel, launch: Launch, grid: str, keywords: list[str]) -> str:
    args = launch.args
    if kernel.heuristics == "template":
        args = args[: len(args) - 3]  # less its fixed grid, which the launch's grid source holds
    if len(args) != len(kernel.runtime_params):
        raise InductorCodeError(f"kernel {kernel.name} takes {len(kernel.runtime_params)} arguments, "
                                f"call() passes {len(args)}")  # fmt: skip
    values = dict(zip(kernel.runtime_params, args, strict=True))
    for name, value in values.items():
        if name.endswith("numel"):
            grid = grid.replace("{" + name + "}", value)
    return f"    {kernel.name}[{grid}]({', '.join([*args, *keywords])})"


_CHECK_SOURCE = """def _check_shapes(**tensors):
    for name, t in tensors.items():
        size, stride = _SHAPES[name]
        if tuple(t.shape) != size or tuple(t.stride()) != stride:
            raise ValueError(
                f"this seed holds Inductor's kernels compiled for {name} of shape {size}, strides {stride}; "
                f"got shape {tuple(t.shape)}, strides {tuple(t.stride())}"
            )"""


# Device-side TMA descriptors (``tl.make_tensor_descriptor``) take scratch memory from Triton's allocator at
# launch; Inductor's runtime sets one, and the seed has none of that runtime.
_SCRATCH_SOURCE = """def _scratch(size, alignment, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


triton.set_allocator(_scratch)"""


_CHECK_VALUES_SOURCE = """def _check_values(**values):
    for name, value in values.items():
        if type(value) is not type(_VALUES[name]) or value != _VALUES[name]:
            raise ValueError(f"this seed holds Inductor's kernels compiled for {name} = {_VALUES[name]!r}; got {value!r}")"""


# Triton's interpreter runs tl.math's functions but not libdevice's extern calls (they return None there):
# there tl.math stands in, and the libdevice functions Inductor calls that tl.math lacks (xlogy's isnan,
# GELU's tanh) are written with tl's own operations. On a GPU the kernels keep Inductor's libdevice calls.
_LIBDEVICE_SOURCE = """if os.environ.get("TRITON_INTERPRET") == "1":
    class _InterpretedLibdevice:
        isnan = staticmethod(lambda x: x != x)
        isinf = staticmethod(lambda x: tl.abs(x) == float("inf"))
        tanh = staticmethod(lambda x: 1.0 - 2.0 / (tl.math.exp(2.0 * x) + 1.0))
        log1p = staticmethod(lambda x: tl.math.log(1.0 + x))
        expm1 = staticmethod(lambda x: tl.math.exp(x) - 1.0)

        def __getattr__(self, name):
            return getattr(tl.math, name)

    libdevice = _InterpretedLibdevice()
else:
    from triton.language.extra import libdevice"""

_GRID_SOURCE = """def _grid(meta, axes, whole):
    for numel, block in whole:
        if numel % meta[block]:
            raise ValueError(
                f"{block}={meta[block]} does not divide {numel}: Inductor compiled this kernel without bounds "
                "masks on that axis, so its blocks must divide the size"
            )
    return tuple(triton.cdiv(numel, meta[block] if isinstance(block, str) else block) for numel, block in axes)"""


# Triton's interpreter runs a grid's programs one after another, so a program waiting at the barrier for
# its row's later programs would wait for ever: there only RSPLIT=1 (no barrier) can run.
_COOPERATIVE_GRID_SOURCE = """def _cooperative_grid(meta, axes, whole):
    rsplit = meta["RSPLIT"]
    for numel, block in whole:
        if block == "RSPLIT" and numel % rsplit:
            raise ValueError(
                f"RSPLIT={rsplit} does not divide {numel}: Inductor sized this cooperative reduction's workspace "
                f"for {numel} partial results a row"
            )
    if rsplit > 1 and os.environ.get("TRITON_INTERPRET") == "1":
        raise ValueError(
            f"RSPLIT={rsplit}: a cooperative reduction's programs wait for each other at a grid barrier, and "
            "Triton's interpreter runs programs one at a time; only RSPLIT=1 runs there"
        )
    return (rsplit, *_grid(meta, axes, [w for w in whole if w[1] != "RSPLIT"]))"""


_NEXT_POWER_OF_2_SOURCE = """@triton.constexpr_function
def _next_power_of_2(n):
    return triton.next_power_of_2(n)"""

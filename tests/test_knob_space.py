"""The joint knob space: every knob of every launch with legal values, and kernels written at a point."""

from __future__ import annotations

import ast
import itertools
import json
from pathlib import Path

import pytest

from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import RunSpec
from tests.conftest import DATA
from workers.harness.verify import verify_kernel
from workers.proposers.knob_space import (
    MMA_PIPELINE_BYTES,
    KnobSpace,
    describe,
    over_limits,
    pipeline_bytes,
    points_within_limits,
    render,
    space_of,
    tensor_core_tiles,
)
from workers.proposers.tuner import find_knobs

# Two kernels, three launches (one of them twice), a tl.dot, a grid of two axes: parsed, never run.
SOURCE = """
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc += tl.dot(tl.load(a), tl.load(b))
    tl.store(c, acc)


@triton.jit
def scale_kernel(x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)


def kernel_function(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    BLOCK_M = 32
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, 32))
    mm_kernel[grid](a, b, c, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=32, BLOCK_K=32)
    scale_kernel[(triton.cdiv(c.numel(), 1024),)](c, c.numel(), BLOCK=1024, num_warps=4)
    scale_kernel[(triton.cdiv(c.numel(), 256),)](c, c.numel(), BLOCK=256)
    return c
"""


def dims(space: KnobSpace) -> dict[str, tuple[str, list[int], int]]:
    return {d.name: (d.kind, d.values, d.start) for d in space.dims}


def test_every_knob_of_every_launch_with_legal_values() -> None:
    space = dims(space_of(SOURCE, moves=True))
    assert list(space) == ["mm_kernel:BLOCK_M", "mm_kernel:grid_swap", "mm_kernel:BLOCK_N", "mm_kernel:BLOCK_K",
                           "mm_kernel:num_warps", "mm_kernel:num_stages", "scale_kernel:BLOCK", "scale_kernel:num_warps",
                           "scale_kernel:BLOCK#2", "scale_kernel:num_warps#2",
                           # the moves beyond the launch knobs (tests/test_knob_moves.py), after them
                           "mm_kernel:loads", "mm_kernel:loop1_stages", "mm_kernel:unroll", "scale_kernel:loads"]  # fmt: skip
    # A tl.dot needs tiles of at least 16; without sizes, up to 16x the kernel's own value.
    assert space["mm_kernel:BLOCK_M"] == ("block", [16, 32, 64, 128, 256, 512], 32)
    assert space["mm_kernel:grid_swap"] == ("grid", [0, 1], 0)
    assert space["mm_kernel:num_warps"] == ("warps", [1, 2, 4, 8, 16], 4)
    assert space["mm_kernel:num_stages"] == ("stages", [1, 2, 3, 4, 5], 3)  # it loops
    assert space["scale_kernel:BLOCK"] == ("block", [1 << e for e in range(6, 15)], 1024)
    assert "scale_kernel:num_stages" not in space  # no loop: stages do nothing


def test_problem_sizes_bound_the_blocks_by_name() -> None:
    space = dims(space_of(SOURCE, sizes={"M": 100, "N": 5000, "K": 64}))
    assert space["mm_kernel:BLOCK_M"][1] == [16, 32, 64, 128]  # next power of two of M
    assert space["mm_kernel:BLOCK_N"][1][-1] == 8192
    assert space["mm_kernel:BLOCK_K"][1] == [16, 32, 64]
    assert space["scale_kernel:BLOCK"][1] == [1 << e for e in range(6, 14)]  # no axis named: the largest size


def test_size_counts_every_combination() -> None:
    space = space_of(SOURCE, sizes={"M": 64, "N": 64, "K": 64}, moves=True)
    assert space.size() == 3 * 2 * 3 * 3 * 5 * 5 * 5 * 5 * 5 * 5 * (4 * 5 * 3 * 4)  # blocks span up to their own values
    assert space_of(SOURCE, sizes={"M": 64, "N": 64, "K": 64}, moves=False).size() == 3 * 2 * 3 * 3 * 5 * 5 * 5 * 5 * 5 * 5
    assert space_of("def kernel_function(x):\n    return x\n").size() == 1  # no knobs: the kernel itself
    assert space_of("def broken(:\n").dims == []


def test_render_writes_every_knob_and_find_knobs_reads_it_back() -> None:
    space = space_of(SOURCE, moves=True)
    point = {"mm_kernel:BLOCK_M": 128, "mm_kernel:BLOCK_N": 256, "mm_kernel:BLOCK_K": 64, "mm_kernel:grid_swap": 1,
             "mm_kernel:num_warps": 8, "mm_kernel:num_stages": 4, "scale_kernel:BLOCK": 4096,
             "scale_kernel:num_warps": 16, "scale_kernel:BLOCK#2": 512, "scale_kernel:num_warps#2": 2,
             "mm_kernel:loads": 1, "mm_kernel:loop1_stages": 2, "mm_kernel:unroll": 4, "scale_kernel:loads": 3}  # fmt: skip
    new = render(SOURCE, space, point)
    ast.parse(new)
    assert space_of(new, moves=True).start() == point | {"mm_kernel:grid_swap": 0}  # the swapped grid is its own start
    assert {(k.launch, k.name, k.value) for k in find_knobs(new)} >= {("mm_kernel", "num_warps", 8),
                                                                      ("scale_kernel", "BLOCK", 512)}  # fmt: skip
    assert "grid = (triton.cdiv(N, 32), triton.cdiv(M, BLOCK_M))" in new and "pid_m = tl.program_id(1)" in new


def test_render_at_the_start_is_the_source_and_a_partial_point_keeps_the_rest() -> None:
    space = space_of(SOURCE)
    assert render(SOURCE, space, space.start()) == SOURCE
    new = render(SOURCE, space, {"scale_kernel:num_warps#2": 8})
    assert new == SOURCE.replace("BLOCK=256)", "BLOCK=256, num_warps=8)")
    assert describe(space, {"scale_kernel:num_warps#2": 8}) == "scale_kernel:num_warps#2 4 -> 8"
    assert describe(space, {"mm_kernel:grid_swap": 1}) == "mm_kernel:grid_swap (axes 0<->1)"
    assert describe(space, space.start()) == "the kernel as written"


def test_render_refuses_bad_points_and_another_kernels_space() -> None:
    space = space_of(SOURCE)
    with pytest.raises(ValueError, match="not a legal value"):
        render(SOURCE, space, {"mm_kernel:BLOCK_M": 48})
    with pytest.raises(ValueError, match="no knob 'BLOCK_M'"):
        render(SOURCE, space, {"BLOCK_M": 64})
    with pytest.raises(ValueError, match="not built from this source"):
        render(SOURCE.replace("BLOCK=1024", "BLOCK=2048"), space, {})


@pytest.mark.slow
def test_a_point_far_from_the_start_verifies_under_the_interpreter(tmp_path) -> None:
    problem = resolve_problem("43")  # max-pool 3D: a block, warps and stages
    source = open(problem.input_kernel_path).read()
    space = space_of(source)
    point = {
        d.name: d.values[-1] if d.kind == "warps" else d.values[0] for d in space.dims
    }  # 16 warps, small
    path = tmp_path / "kernel.py"
    path.write_text(render(source, space, point))
    spec = RunSpec(problem_path=problem.problem_path, shapes="small", device="cpu")
    verdict = verify_kernel(spec, str(path))
    assert verdict.passed, f"{describe(space, point)}: {verdict.status}: {verdict.reason}"


def test_tensor_core_tiles_are_legal_points_with_the_stages_that_fit_and_only_for_dot_launches() -> None:
    space = space_of(SOURCE, sizes={"M": 4096, "N": 4096, "K": 4096}, moves=True)
    tiles = tensor_core_tiles(space)
    assert tiles and all(space.complete(p) == p for p in tiles)  # every name, every value legal
    first = tiles[0]
    assert {k.split(":")[1]: v for k, v in first.items() if k.startswith("mm_kernel")} == {
        "BLOCK_M": 128, "grid_swap": 0, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3,
        "loads": 0, "loop1_stages": 0, "unroll": 1}  # fmt: skip
    for p in tiles:
        m, n, k, stages = (p[f"mm_kernel:{x}"] for x in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages"))
        assert stages * (m + n) * k * 2 <= MMA_PIPELINE_BYTES < (stages + 1) * (m + n) * k * 2 or stages == 5
        assert all(p[d.name] == d.start for d in space.dims if d.name.startswith("scale_kernel"))
    # A problem smaller than the tiles: the nearest legal values, each point once.
    small = space_of(SOURCE, sizes={"M": 64, "N": 4096, "K": 32})
    tiles = tensor_core_tiles(small)
    assert {p["mm_kernel:BLOCK_M"] for p in tiles} == {64} and {p["mm_kernel:BLOCK_K"] for p in tiles} == {32}
    assert len(tiles) == len({tuple(p.values()) for p in tiles})
    # Other spellings of the tiles' axes, each bounded by its own size.
    short = SOURCE.replace("BLOCK_M", "BM").replace("BLOCK_N", "BN").replace("BLOCK_K", "TILE_K")
    short_space = space_of(short, sizes={"M": 100, "N": 5000, "K": 64})
    assert (
        short_space.dim("mm_kernel:BM").values[-1] == 128
        and short_space.dim("mm_kernel:TILE_K").values[-1] == 64
    )
    assert {(p["mm_kernel:BM"], p["mm_kernel:BN"], p["mm_kernel:TILE_K"]) for p in tensor_core_tiles(short_space)} == {
        (128, 256, 64), (128, 128, 64), (128, 128, 32), (64, 256, 64), (128, 64, 64)}  # fmt: skip
    # fp32 operands (tf32 dot) take twice the shared memory a stage: fewer stages fit.
    assert tensor_core_tiles(space_of(SOURCE, sizes={"M": 4096, "N": 4096, "K": 4096}, operand_bytes=4))[0]["mm_kernel:num_stages"] == 1  # 96 KB a stage
    # No tl.dot, no tiles.
    scale_only = SOURCE.replace("acc += tl.dot(tl.load(a), tl.load(b))", "acc += tl.load(a)")
    assert tensor_core_tiles(space_of(scale_only)) == []


def test_inductors_matmul_template_gets_tensor_core_tiles_too() -> None:
    """The compiler seed of a matmul is Inductor's template, its tiles named BLOCK_M/N/K as ours."""
    from workers.proposers.compile_seed import seed_from_recording

    seed = seed_from_recording(DATA / "inductor_small" / "2_Standard_matrix_multiplication_")
    assert seed.unavailable is None
    space = space_of(seed.source, sizes={"M": 2048, "N": 4096, "K": 8192})
    tiles = tensor_core_tiles(space)
    assert tiles and {k.split(":")[1]: v for k, v in tiles[0].items() if ":BLOCK_" in k} == {
        "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}  # fmt: skip


def test_each_launch_of_a_dot_kernel_gets_its_own_tiles_and_none_is_the_start() -> None:
    twice = SOURCE.replace(
        "    return c\n",
        "    mm_kernel[grid](a, b, c, M, N, K, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)\n    return c\n",
    )
    space = space_of(twice, sizes={"M": 4096, "N": 4096, "K": 4096})
    assert "mm_kernel:BLOCK_M#2" in [d.name for d in space.dims]
    tiles = tensor_core_tiles(space)
    firsts = [p for p in tiles if p["mm_kernel:BLOCK_M"] != space.start()["mm_kernel:BLOCK_M"]]
    seconds = [p for p in tiles if p["mm_kernel:BLOCK_M#2"] != space.start()["mm_kernel:BLOCK_M#2"]]
    assert firsts and seconds and not [p for p in firsts if p in seconds]  # one launch moved at a time
    at_a_tile = SOURCE.replace("BLOCK_M = 32", "BLOCK_M = 128").replace("BLOCK_N=32", "BLOCK_N=256").replace(
        "BLOCK_K=32)", "BLOCK_K=64, num_warps=8, num_stages=3)")  # fmt: skip
    space = space_of(at_a_tile, sizes={"M": 4096, "N": 4096, "K": 4096})
    assert space.start()["mm_kernel:BLOCK_N"] == 256 and space.start() not in tensor_core_tiles(space)


def test_a_dot_launchs_tiles_past_a_threads_registers_or_the_shared_memory_are_over_its_limits() -> None:
    space = space_of(SOURCE, sizes={"M": 4096, "N": 4096, "K": 4096}, shared_bytes=232448)
    (tile,) = space.tiles  # the dot launch only, with the warps and stages the tuner adds (Triton's 4 and 3)
    assert (tile.m, tile.n, tile.k, tile.warps, tile.stages) == ("mm_kernel:BLOCK_M", "mm_kernel:BLOCK_N",
                                                                 "mm_kernel:BLOCK_K", "mm_kernel:num_warps",
                                                                 "mm_kernel:num_stages")  # fmt: skip
    start = space.start()
    assert over_limits(space, start) is None
    assert "registers" in over_limits(space, start | {"mm_kernel:BLOCK_M": 128, "mm_kernel:BLOCK_N": 256})
    assert over_limits(space, start | {"mm_kernel:BLOCK_M": 128, "mm_kernel:BLOCK_N": 128}) is None
    wide_k = start | {"mm_kernel:BLOCK_M": 64, "mm_kernel:BLOCK_N": 128, "mm_kernel:BLOCK_K": 1024}
    assert "shared memory" in over_limits(space, wide_k)  # 3 stages of 192 KB
    # Unknown shared memory (the CPU): only the registers limit points; a space without dots, nothing.
    cpu = space_of(SOURCE, sizes={"M": 4096, "N": 4096, "K": 4096})
    assert over_limits(cpu, wide_k) is None and "registers" in over_limits(cpu, start | {"mm_kernel:BLOCK_M": 4096})
    scale_only = SOURCE.replace("acc += tl.dot(tl.load(a), tl.load(b))", "acc += tl.load(a)")
    plain = space_of(scale_only, shared_bytes=232448)
    # no dot: each launch's blocks limit it, but for the M, N and K blocks of a launch that may hide one
    assert plain.tiles == [] and [b.blocks for b in plain.blocks] == [["scale_kernel:BLOCK"], ["scale_kernel:BLOCK#2"]]
    assert 0 < points_within_limits(space) < space.size()
    # Every tensor-core tile the optimiser tries first is within them.
    assert all(over_limits(space, p) is None for p in tensor_core_tiles(space))


def test_the_limits_agree_with_what_a_gpu_did_with_the_matmuls_points() -> None:
    """Every candidate of four matmul searches on an H200: each point past the 8 s compile limit or failed
    in ptxas is over the registers; each that ran out of shared memory needed what ``pipeline_bytes``
    says, byte for byte; an ok point over the limits is one that spilled (several times the best's time)."""
    record = json.loads((DATA / "gpu_limits" / "h200_matmul_points.json").read_text())
    source = (Path(__file__).parents[1] / "artifacts" / "2_Standard_matrix_multiplication_" / "input_kernel.py").read_text()
    space = space_of(source, sizes={"M": 4096, "N": 4096, "K": 4096}, shared_bytes=record["shared_bytes"])
    (tile,) = space.tiles
    best = min(p["ms"] for p in record["points"] if p["ms"])
    outcomes: dict[str, int] = {}
    for p in record["points"]:
        point = space.complete({f"_matmul_kernel:{k}": v for k, v in p["changes"].items()})
        over = over_limits(space, point)
        outcomes[p["outcome"]] = outcomes.get(p["outcome"], 0) + 1
        if p["outcome"] in ("compile_limit", "ptxas_error"):
            assert over is not None and "registers" in over, p
        elif p["outcome"] == "shared_memory":
            assert pipeline_bytes(tile, point) == p["required_bytes"] and over is not None, p
        else:
            assert over is None or ("registers" in over and p["ms"] > 5 * best), (p, over)
    assert outcomes == {"ok": 200, "shared_memory": 25, "compile_limit": 17, "ptxas_error": 14}


def test_a_launch_without_a_dot_is_limited_by_its_block_tile_per_thread() -> None:
    space = space_of(SOURCE, sizes={"M": 4096, "N": 4096, "K": 4096})
    assert [b.blocks for b in space.blocks] == [["scale_kernel:BLOCK"], ["scale_kernel:BLOCK#2"]]  # not the dot's
    start = space.start()
    assert over_limits(space, start) is None
    over = over_limits(space, start | {"scale_kernel:BLOCK": 16384, "scale_kernel:num_warps": 1})
    assert over is not None and "512 elements a thread" in over
    assert over_limits(space, start | {"scale_kernel:BLOCK": 16384, "scale_kernel:num_warps": 2}) is None  # 256
    # The count, launch by launch, is the count of every point one by one.
    small = space_of(SOURCE, sizes={"M": 64, "N": 64, "K": 32}, shared_bytes=16 * 1024, moves=False)  # a count by hand
    names = [d.name for d in small.dims]
    assert points_within_limits(small) == sum(
        over_limits(small, dict(zip(names, v, strict=True))) is None for v in itertools.product(*(d.values for d in small.dims)))


def test_the_block_limit_agrees_with_what_gpus_did_with_kernels_without_a_dot() -> None:
    """Every observation of six searches and sweeps of cumsum, a mean reduction (from its input and from
    Inductor's kernel) and GELU: a point past the compile limit that is not over the limit would be
    a miss, and an ok point over it ran at more than twice its search's best time."""
    from beamsearch.records.problems import problem_sizes

    record = json.loads((DATA / "gpu_limits" / "block_points.json").read_text())
    over_count = 0
    for search in record["searches"]:
        sizes = problem_sizes(resolve_problem(search["problem"]).problem_path, "full")
        space = space_of(search["source"], sizes)
        assert space.blocks and not space.tiles
        best = min(o["time_ms"] for o in search["observations"] if o["time_ms"])
        for o in search["observations"]:
            over = over_limits(space, space.complete(o["point"]))
            over_count += over is not None
            if o["failure"] and "compile time limit" in o["failure"]:
                assert over is not None, (search["run"], o)
            elif over is not None:
                assert o["time_ms"] is None or o["time_ms"] > 2 * best, (search["run"], o, best)
    assert over_count == 15


def test_limits_follow_each_launch_and_never_guess_what_the_tuner_cannot_read() -> None:
    """A dot in a helper is a dot; warps set by a name give no register limit; a kernel without a loop has
    one operand buffer; two launches of one kernel are limited each by its own warps."""
    helper = SOURCE.replace("acc += tl.dot(tl.load(a), tl.load(b))", "acc += _mma(tl.load(a), tl.load(b))").replace(
        "@triton.jit\ndef mm_kernel", "@triton.jit\ndef _mma(x, y):\n    return tl.dot(x, y)\n\n\n@triton.jit\ndef mm_kernel")  # fmt: skip
    space = space_of(helper, sizes={"M": 4096, "N": 4096, "K": 4096}, shared_bytes=232448)
    assert [t.m for t in space.tiles] == ["mm_kernel:BLOCK_M"]
    named = SOURCE.replace("BLOCK_M=BLOCK_M, BLOCK_N=32, BLOCK_K=32)", "BLOCK_M=BLOCK_M, BLOCK_N=32, BLOCK_K=32, num_warps=nw)").replace(
        "    BLOCK_M = 32\n", "    BLOCK_M = 32\n    nw = 8\n")  # fmt: skip
    space = space_of(named, sizes={"M": 4096, "N": 4096, "K": 4096}, shared_bytes=232448)
    (tile,) = space.tiles
    assert tile.warps is None and "mm_kernel:num_warps" not in [d.name for d in space.dims]
    assert over_limits(space, space.start() | {"mm_kernel:BLOCK_M": 128, "mm_kernel:BLOCK_N": 256}) is None
    no_loop = SOURCE.replace("    for k in range(0, K, BLOCK_K):\n        acc += ", "    acc += ")
    space = space_of(no_loop, sizes={"M": 4096, "N": 4096, "K": 4096}, shared_bytes=232448)
    (tile,) = space.tiles
    assert tile.stages is None and pipeline_bytes(tile, space.start()) == (32 + 32) * 32 * 2  # one buffer
    # The first launch's warps unreadable, the second's 16: the only num_warps knob is the second launch's.
    twice = named.replace("BLOCK=1024, num_warps=4)", "BLOCK=1024, num_warps=nw)").replace(
        "c, c.numel(), BLOCK=256)", "c, c.numel(), BLOCK=256, num_warps=16)")  # fmt: skip
    space = space_of(twice, sizes={"M": 4096, "N": 4096, "K": 4096})
    assert [(b.blocks, b.warps) for b in space.blocks] == [(["scale_kernel:BLOCK#2"], "scale_kernel:num_warps")]
    wide = space.start() | {"scale_kernel:BLOCK#2": 65536, "scale_kernel:BLOCK": 65536}
    assert wide["scale_kernel:num_warps"] == 16 and over_limits(space, wide) is None  # 128 a thread, its own warps


@pytest.mark.gpu
def test_the_runs_shared_memory_limit_is_the_one_triton_checks_a_launch_against() -> None:
    from triton.runtime import driver

    from workers.actor.task import device_facts

    problem = resolve_problem("2_Standard_matrix_multiplication_")
    facts = device_facts(RunSpec(problem_path=problem.problem_path, shapes="full", device="cuda"))
    assert facts.shared_bytes == driver.active.utils.get_device_properties(0)["max_shared_mem"] > 0


def test_a_seed_block_that_must_divide_its_size_keeps_only_divisors() -> None:
    """A compiler seed's axis without bounds masks (``compile_seed``: the grid's ``whole`` list) refuses a
    block that does not divide the size at launch: the space holds only blocks that divide it. The seed
    is the one an H100 made for KernelBench's 94_MSELoss: its second kernel has one program (xnumel 1),
    where a search tried XBLOCK 2, 4 and 32 and each was refused."""
    source = (DATA / "seeds" / "94_MSELoss_h100.py").read_text()
    space = space_of(source, {"batch_size": 32768, "dim": 32768})
    values = {d.name: d.values for d in space.dims}
    assert values["triton_red_fused_mean_pow_sub_1:XBLOCK"] == [1]
    assert values["triton_red_fused_mean_pow_sub_0:XBLOCK"][-1] == 8192  # xnumel 8192
    assert values["triton_red_fused_mean_pow_sub_1:R0_BLOCK"][-1] > 8192  # masked: any block is safe
    grid = "lambda meta: _grid(meta, [(c.numel(), 'BLOCK')], [(768, 'BLOCK'), (1280, 'BLOCK')])"
    made = SOURCE.replace("(triton.cdiv(c.numel(), 256),)", grid)
    blocks = {d.name: d.values for d in space_of(made, {"M": 4096}).dims}
    assert blocks["scale_kernel:BLOCK#2"] == [16, 32, 64, 128, 256]  # the gcd, 256; 4096 without the list
    assert blocks["scale_kernel:BLOCK"][-1] == 4096

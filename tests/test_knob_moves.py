"""The knobs beyond a launch's (issue 46 §2): loads hints, a loop's own stages, unrolling, fast math, maxnreg.
Each is found, rendered, read back, and (slow) the rendered kernel passes the verifier on the interpreter."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from beamsearch.records.schema import RunSpec
from tests.conftest import small_seed
from workers.proposers.knob_moves import apply_moves, find_moves, uses_fast_math
from workers.proposers.knob_space import describe, points_within_limits, render, space_of
from workers.proposers.searcher import Searcher, first_points
from workers.proposers.tuner import apply, find_knobs

H200_SHARED = 232448  # a GPU's shared memory a program may take: space_of's sign of a run on a GPU

# The scale_rows test problem's kernel, looping over column blocks.
LOOPED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, w_ptr, out_ptr, rows, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]
    for start in range(0, cols, BLOCK_C):
        c = start + tl.arange(0, BLOCK_C)[None, :]
        mask = (r < rows) & (c < cols)
        x = tl.load(x_ptr + r * cols + c, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=c < cols, other=0.0).to(tl.float32)
        tl.store(out_ptr + r * cols + c, (x * w).to(out_ptr.dtype.element_ty), mask=mask)
    for i in tl.static_range(2):
        pass


def kernel_function(x, weight):
    out = torch.empty_like(x)
    rows, cols = x.shape
    scale_kernel[(triton.cdiv(rows, 8),)](x, weight, out, rows, cols, BLOCK_R=8, BLOCK_C=16)
    return out
'''


def moves(source: str, maxnreg: bool = False) -> dict[str, int]:
    return {f"{k.launch}:{k.name}": k.value for k in find_moves(source, maxnreg)}


def test_each_move_is_found_at_the_kernel_as_written() -> None:
    assert moves(LOOPED) == {"scale_kernel:loads": 0, "scale_kernel:loop1_stages": 0, "scale_kernel:unroll": 1}
    assert moves(LOOPED, maxnreg=True)["scale_kernel:maxnreg"] == 0
    # the space has them only where the construct is, maxnreg only on a GPU
    assert [d.name for d in space_of(LOOPED, moves=True).dims if d.kind not in ("block", "warps", "stages", "grid")] == [
        "scale_kernel:loads", "scale_kernel:loop1_stages", "scale_kernel:unroll"]  # fmt: skip
    assert "scale_kernel:maxnreg" in [d.name for d in space_of(LOOPED, moves=True, shared_bytes=H200_SHARED).dims]
    assert [d.kind for d in space_of(LOOPED, moves=False).dims] == ["block", "block", "warps", "stages"]


@pytest.mark.parametrize("name, value, written", [
    ("scale_kernel:loads", 1, 'eviction_policy="evict_first"'),
    ("scale_kernel:loads", 2, 'eviction_policy="evict_last"'),
    ("scale_kernel:loads", 3, 'cache_modifier=".cg"'),
    ("scale_kernel:loop1_stages", 2, "tl.range(0, cols, BLOCK_C, num_stages=2)"),
    ("scale_kernel:unroll", 4, "tl.range(0, cols, BLOCK_C, loop_unroll_factor=4)"),
    ("scale_kernel:maxnreg", 128, "BLOCK_C=16, maxnreg=128)"),
])  # fmt: skip
def test_render_writes_a_move_that_reads_back(name: str, value: int, written: str) -> None:
    space = space_of(LOOPED, moves=True, shared_bytes=H200_SHARED)
    new = render(LOOPED, space, {name: value})
    ast.parse(new)
    assert written in new
    assert "tl.static_range(2)" in new  # never a candidate
    assert moves(new, maxnreg=True)[name] == value
    others = {n: v for n, v in moves(new, maxnreg=True).items() if n != name}
    assert others == {n: v for n, v in moves(LOOPED, maxnreg=True).items() if n != name}
    if name.endswith("loads"):
        assert new.count(written) == 2  # every load of the kernel


def test_a_written_hint_or_option_is_the_start_and_can_be_taken_back() -> None:
    written = (LOOPED.replace("other=0.0)", 'other=0.0, eviction_policy="evict_last")')
               .replace("range(0, cols, BLOCK_C)", "tl.range(0, cols, BLOCK_C, num_stages=3)")
               .replace("BLOCK_C=16)", "BLOCK_C=16, maxnreg=96)"))  # fmt: skip
    space = space_of(written, moves=True, shared_bytes=H200_SHARED)
    assert {d.name: d.start for d in space.dims if d.name in moves(written, True)} == {
        "scale_kernel:loads": 2, "scale_kernel:loop1_stages": 3, "scale_kernel:unroll": 1, "scale_kernel:maxnreg": 96}  # fmt: skip
    back = render(written, space, {"scale_kernel:loads": 0, "scale_kernel:loop1_stages": 0, "scale_kernel:maxnreg": 0})
    assert 'eviction_policy=""' in back and "num_stages=None" in back and "maxnreg=None" in back
    assert moves(back, True) == {"scale_kernel:loads": 0, "scale_kernel:loop1_stages": 0, "scale_kernel:unroll": 1,
                                 "scale_kernel:maxnreg": 0}  # fmt: skip
    mixed = LOOPED.replace("other=0.0).to(tl.float32)\n        w", 'other=0.0, eviction_policy="evict_last").to(tl.float32)\n        w')
    assert moves(mixed)["scale_kernel:loads"] == -1  # loads that differ: the start is "as written"
    assert "scale_kernel:loads" not in moves(LOOPED.replace("other=0.0)", "other=0.0, eviction_policy=POLICY)"))


def test_describe_names_the_moves() -> None:
    space = space_of(LOOPED, moves=True, shared_bytes=H200_SHARED)
    point = {"scale_kernel:loads": 1, "scale_kernel:loop1_stages": 2, "scale_kernel:unroll": 2, "scale_kernel:maxnreg": 128}
    assert describe(space, point) == ("scale_kernel:loads no hint -> evict_first, scale_kernel:loop1_stages the "
                                      "launch's -> 2, scale_kernel:unroll none -> 2, scale_kernel:maxnreg none -> 128")  # fmt: skip


def test_a_space_without_the_moves_still_renders() -> None:
    space = space_of(LOOPED, moves=False)
    new = render(LOOPED, space, {"scale_kernel:num_warps": 8})
    assert "num_warps=8" in new and "tl.range" not in new


def test_a_point_of_every_kind_renders_literals_then_code_knobs_then_swaps() -> None:
    swappable = LOOPED.replace("[(triton.cdiv(rows, 8),)]", "[(triton.cdiv(rows, 8), 1)]")  # a second grid axis
    space = space_of(swappable, moves=True, shared_bytes=H200_SHARED)
    point = {"scale_kernel:BLOCK_C": 32, "scale_kernel:maxnreg": 128, "scale_kernel:loads": 3, "scale_kernel:grid_swap": 1}
    knobs = {f"{k.launch}:{k.name}": k for k in find_knobs(swappable) + find_moves(swappable, maxnreg=True)}
    literals = apply(swappable, {knobs["scale_kernel:BLOCK_C"]: 32, knobs["scale_kernel:maxnreg"]: 128})
    code = apply_moves(literals, {knobs["scale_kernel:loads"]: 3})
    swapped = apply(code, {knobs["scale_kernel:grid axes 0<->1"]: 1})
    assert render(swappable, space, point) == swapped
    assert "BLOCK_C=32, maxnreg=128)" in swapped and 'cache_modifier=".cg"' in swapped and "tl.program_id(1)" in swapped
    with pytest.raises(ValueError):
        apply(swappable, {knobs["scale_kernel:loads"]: 3})  # a code knob is knob_moves' to write


def test_first_points_order_the_moves_by_roofline_class() -> None:
    space = space_of(LOOPED, moves=True, shared_bytes=H200_SHARED)
    start = space.start()

    def changed(p: dict[str, int]) -> list[str]:
        return [n.split(":")[1] for n in p if p[n] != start[n]]

    memory = [changed(p) for p in first_points(space, "memory")]
    assert memory[:4] == [[], ["loads"], ["loads"], ["loads"]]
    compute = [changed(p) for p in first_points(space, "compute")]
    assert compute[1:3] == [["maxnreg"], ["loop1_stages"]]
    assert ["loads"] in compute  # later, never left out
    for bottleneck in ("memory", "compute", "underutilized", "unknown"):
        kinds = {n for p in first_points(space, bottleneck) for n in changed(p)}
        assert {"loads", "loop1_stages", "unroll", "maxnreg"} <= kinds


def test_a_resource_limit_holds_whatever_the_loads_hint() -> None:
    space = space_of(LOOPED, moves=True)
    searcher = Searcher(space, seed=0, budget=10)
    failed = space.start() | {"scale_kernel:BLOCK_C": 128}
    searcher.observe(failed, None, "compile_failed: out of resource: shared memory")
    index = searcher._index
    for loads in (1, 2, 3):
        assert searcher._dominates(index(failed | {"scale_kernel:loads": loads}), index(failed))
    assert searcher._dominates(index(failed | {"scale_kernel:unroll": 4}), index(failed))
    assert not searcher._dominates(index(failed | {"scale_kernel:loop1_stages": 2}), index(failed))
    staged = searcher._index(failed | {"scale_kernel:loop1_stages": 2})
    assert searcher._dominates(index(failed | {"scale_kernel:loop1_stages": 3}), staged)


# Dims the moves may add to a kernel's space: a loads hint, an unroll factor and a math knob a function, a
# stages knob a loop, a register cap a launch; and their values' product.
PROBLEMS = sorted(Path(__file__).resolve().parents[1].glob("artifacts/*/input_kernel.py"))


@pytest.mark.parametrize("path", PROBLEMS, ids=[p.parent.name[:24] for p in PROBLEMS])
def test_the_bundled_problems_spaces_stay_bounded(path: Path) -> None:
    source = path.read_text()
    before, after = space_of(source, moves=False), space_of(source, moves=True, shared_bytes=H200_SHARED)
    added = after.dims[len(before.dims):]
    assert [d.name for d in after.dims[: len(before.dims)]] == [d.name for d in before.dims]
    loops = sum(d.kind == "loop_stages" for d in added)
    assert loops <= 2 and len(added) <= 3 + 2 * 1 + loops  # loads, unroll, math; a maxnreg a launch; a stages a loop
    growth = math.prod(len(d.values) for d in added)
    assert growth <= 4 * 3 * 2 * 4 * 5**loops
    # Over the limits nothing is added: every new point of a within-limits point is within them.
    cpu = space_of(source, moves=True)
    assert points_within_limits(cpu) == points_within_limits(before) * math.prod(
        len(d.values) for d in cpu.dims[len(before.dims):])


@pytest.mark.slow
def test_every_move_passes_the_verifier_on_the_interpreter(tmp_path: Path) -> None:
    from tests.conftest import DATA
    from workers.harness.verify import VerifySession, verify_kernel

    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device="cpu", dtype="bf16")
    space = space_of(LOOPED, moves=True, shared_bytes=H200_SHARED)  # maxnreg too: the interpreter leaves it alone
    points = [{},
              {"scale_kernel:loads": 1, "scale_kernel:loop1_stages": 2, "scale_kernel:unroll": 4, "scale_kernel:maxnreg": 128},
              {"scale_kernel:loads": 2, "scale_kernel:loop1_stages": 4, "scale_kernel:unroll": 2, "scale_kernel:maxnreg": 64},
              {"scale_kernel:loads": 3, "scale_kernel:loop1_stages": 1, "scale_kernel:BLOCK_C": 8}]  # fmt: skip
    session = VerifySession("cpu")
    try:
        for i, point in enumerate(points):
            path = tmp_path / f"variant_{i}.py"
            path.write_text(render(LOOPED, space, point))
            # fresh seeds for each, so the session's processes go on to the next variant
            verdict = verify_kernel(spec, str(path), seeds=[3 * i, 3 * i + 1, 3 * i + 2], session=session)
            assert verdict.status == "ok", (describe(space, point), verdict)
    finally:
        session.close()


# Two jit functions reaching Triton's math by every spelling the math knob reads: tl, tl.math, a math module
# and libdevice (whose exp is precise; tl.exp is approximate already, so it alone would be no knob).
MATHS = '''
import os

import torch
import triton
import triton.language as tl
from triton.language import math as tl_math

if os.environ.get("TRITON_INTERPRET") == "1":
    libdevice = tl.math
else:
    from triton.language.extra import libdevice


@triton.jit
def logs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n, other=1.0).to(tl.float32)
    y = tl.log(x) + tl.math.log2(x) + tl_math.log(x) + libdevice.exp(x) + tl.exp(x)
    tl.store(out_ptr + i, y.to(out_ptr.dtype.element_ty), mask=i < n)


@triton.jit
def exp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n, other=1.0).to(tl.float32)
    tl.store(out_ptr + i, tl.exp(x).to(out_ptr.dtype.element_ty), mask=i < n)


def kernel_function(x):
    out = torch.empty_like(x)
    logs_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    exp_kernel[(triton.cdiv(x.numel(), 64),)](out, out, x.numel(), BLOCK=64)
    return out
'''


def test_the_math_knob_makes_precise_transcendentals_fast_and_writes_its_header_once() -> None:
    assert {n: v for n, v in moves(MATHS).items() if n.endswith(":math")} == {"logs_kernel:math": 0}
    space = space_of(MATHS, moves=True, shared_bytes=H200_SHARED)
    assert next(d for d in space.dims if d.name == "logs_kernel:math").values == [0, 1]
    fast = render(MATHS, space, {"logs_kernel:math": 1})
    ast.parse(fast)
    assert "y = fast_logf(x) + fast_log2f(x) + fast_logf(x) + fast_expf(x) + tl.exp(x)" in fast
    assert fast.count("from triton.language.extra import libdevice as _libdevice") == 1
    assert fast.count("import os\n") == 1 and fast.count("import triton\n") == 1
    assert "logs_kernel:math" not in moves(fast)  # nothing precise is left to make fast
    assert uses_fast_math(fast) and not uses_fast_math(MATHS)  # what the run's summary says of its best
    assert render(MATHS, space, {"logs_kernel:math": 0}) == MATHS
    assert describe(space, {"logs_kernel:math": 1}) == "logs_kernel:math as written -> fast"
    # A module-level name of the header's own would be shadowed by it: no knob.
    assert not [k for k in find_moves(MATHS.replace("import os\n", "import os\nfast_logf = None\n")) if k.kind == "math"]


def test_first_points_try_fast_math_early_where_the_sms_are_the_limit() -> None:
    space = space_of(MATHS, moves=True, shared_bytes=H200_SHARED)
    start = space.start()
    compute = first_points(space, "compute")
    assert compute[1] == start | {"logs_kernel:math": 1}
    assert start | {"logs_kernel:math": 1} in first_points(space, "memory")  # later, never left out


def _with_fast_math(seed: str) -> str:
    space = space_of(seed, moves=True, shared_bytes=H200_SHARED)
    point = {d.name: 1 for d in space.dims if d.kind == "math"}
    assert point, [d.name for d in space.dims]
    return render(seed, space, point)


@pytest.mark.slow
def test_fast_math_passes_the_verifier_on_the_interpreter(tmp_path: Path) -> None:
    """Inductor's KL divergence, as written and its logs made fast: on the interpreter the precise functions
    stand in for libdevice's, so this checks the rewrite, not the error. As written it calls
    libdevice.isnan (torch's xlogy), which tl.math lacks: the seed's own stand-in runs it there."""
    from tests.conftest import DATA
    from workers.harness.verify import verify_kernel

    seed = small_seed("kl_div_problem", 1, tmp_path)
    assert "libdevice.isnan(" in seed
    fast = _with_fast_math(seed)
    assert fast.count("fast_logf(tmp") == 2
    spec = RunSpec(problem_path=str(DATA / "kl_div_problem.py"), shapes="small", device="cpu", dtype="bf16")
    for name, source in (("seed", seed), ("fast", fast)):
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        verdict = verify_kernel(spec, str(path))
        assert verdict.passed, f"{name}: {verdict.status}: {verdict.reason}\n{verdict.traceback[-2000:]}"


# Every function the math knob makes fast, through libdevice.
EVERY_FAST_FUNCTION = MATHS.replace(
    "y = tl.log(x) + tl.math.log2(x) + tl_math.log(x) + libdevice.exp(x) + tl.exp(x)",
    "y = libdevice.log(x) + libdevice.log2(x) + libdevice.log10(x) + libdevice.exp(x) + libdevice.exp10(x)"
    " + libdevice.tanh(x) + libdevice.erf(x) + libdevice.log1p(x) + libdevice.expm1(x)")
# What it computes (exp_kernel's tl.exp of the sum), between 0.1 and 0.5, where the sum's exp stays finite.
EVERY_FAST_CHECK = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("every_fast", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
x = torch.linspace(0.1, 0.5, 1000, device=sys.argv[2])
want = torch.exp(x.log() + x.log2() + x.log10() + x.exp() + torch.pow(10.0, x) + x.tanh() + torch.erf(x)
                 + x.log1p() + x.expm1())
torch.testing.assert_close(module.kernel_function(x), want, rtol=1e-4, atol=0)
"""


@pytest.mark.slow
def test_every_fast_function_has_a_stand_in_on_the_interpreter(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    path = tmp_path / "every_fast.py"
    path.write_text(_with_fast_math(EVERY_FAST_FUNCTION))
    env = os.environ | {"TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", EVERY_FAST_CHECK, str(path), "cpu"], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.gpu
def test_every_fast_function_exists_on_the_gpu_and_fast_math_verifies(tmp_path: Path) -> None:
    """Every ``FAST_MATH`` function compiles on the GPU (Triton's CUDA libdevice lacks some the generic
    module lists: tanh is PTX's), their values are near the precise ones, and the KL divergence's seed with
    fast logs passes the verifier on the GPU."""
    import subprocess
    import sys

    from tests.conftest import DATA
    from workers.harness.verify import verify_kernel
    from workers.proposers.knob_moves import FAST_MATH

    fast = _with_fast_math(EVERY_FAST_FUNCTION)
    assert all(f"{name}(x)" in fast for name in FAST_MATH.values())
    path = tmp_path / "every_fast.py"
    path.write_text(fast)
    done = subprocess.run([sys.executable, "-c", EVERY_FAST_CHECK, str(path), "cuda"], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    path = tmp_path / "kl_fast.py"
    path.write_text(_with_fast_math(small_seed("kl_div_problem", 1, tmp_path)))
    spec = RunSpec(problem_path=str(DATA / "kl_div_problem.py"), shapes="small", device="cuda", dtype="bf16")
    verdict = verify_kernel(spec, str(path))
    assert verdict.passed, f"{verdict.status}: {verdict.reason}"


def test_fast_math_that_fails_is_ruled_out_after_two_strikes() -> None:
    """On an H200, a libdevice without one fast function failed 25 of a search's 96 candidates: every point
    holding fast math failed alike, so two failures (one the start with fast math alone) rule it out."""
    space = space_of(MATHS, moves=True, shared_bytes=H200_SHARED)
    searcher = Searcher(space, seed=0, budget=50)
    start, fast = space.start(), {"logs_kernel:math": 1}
    error = "compile_failed: AttributeError(\"module 'libdevice' has no attribute 'fast_logf'\")"
    searcher.observe(start, 1.0)
    searcher.observe(start | {"logs_kernel:BLOCK": 128}, 1.1)
    searcher.observe(start | fast, None, error)
    assert any(p["logs_kernel:math"] == 1 for p in searcher.suggest(40))  # one strike: still tried
    searcher.observe(start | {"logs_kernel:BLOCK": 128} | fast, None, error)
    assert not any(p["logs_kernel:math"] == 1 for p in searcher.suggest(40))
    # a resource failure of a fast-math point blames no value
    other = Searcher(space, seed=0, budget=50)
    other.observe(start, 1.0)
    other.observe(start | {"logs_kernel:BLOCK": 128}, 1.1)
    for p in (start | fast, start | {"logs_kernel:BLOCK": 128} | fast):
        other.observe(p, None, "compile_failed: out of resource: shared memory")
    assert any(p["logs_kernel:math"] == 1 for p in other.suggest(40))


def test_a_move_that_fails_to_compile_everywhere_is_ruled_out_and_a_combination_that_fails_is_not() -> None:
    """Session 35 noticed it: only fast math was blamed, so a move beyond the launch knobs that no compiler
    takes (a loop option Triton crashes on) was tried until the budget ended."""
    space = space_of(LOOPED, moves=True, shared_bytes=H200_SHARED)
    start, crash = space.start(), "compile_failed: PTXASError: Internal Triton PTX codegen error"
    wider = {"scale_kernel:BLOCK_C": 32}

    def tried(searcher: Searcher, knob: str, value: int) -> bool:
        return any(p[knob] == value for p in searcher.suggest(300))

    searcher = Searcher(space, seed=0, budget=400)
    searcher.observe(start, 1.0)
    searcher.observe(start | wider, 1.1)
    searcher.observe(start | {"scale_kernel:loop1_stages": 3}, None, crash)
    assert tried(searcher, "scale_kernel:loop1_stages", 3)  # one strike: still tried
    searcher.observe(start | wider | {"scale_kernel:loop1_stages": 3}, None, crash)
    assert not tried(searcher, "scale_kernel:loop1_stages", 3)
    # a value that failed beside a block size but ran elsewhere stays: the combination failed, not the value
    other = Searcher(space, seed=0, budget=400)
    other.observe(start, 1.0)
    other.observe(start | wider, 1.1)
    other.observe(start | {"scale_kernel:unroll": 2}, None, crash)
    other.observe(start | wider | {"scale_kernel:unroll": 2}, None, crash)
    other.observe(start | {"scale_kernel:BLOCK_R": 16, "scale_kernel:unroll": 2}, 0.9)
    assert tried(other, "scale_kernel:unroll", 2)

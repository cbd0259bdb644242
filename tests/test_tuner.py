"""The offline tuner: knobs found in real kernels, valid rewrites, determinism, no repeats, and its
proposals for the five input kernels pass verification under the interpreter."""

from __future__ import annotations

import ast

import pytest

from beamsearch.records.problems import bundled_problem_names, resolve_problem
from beamsearch.records.schema import Attempt, Diagnosis, Kernel, Roofline, RunSpec
from workers.harness.verify import verify_kernel
from workers.proposers.tuner import TunerProposer, apply, find_knobs


def diagnosis(bottleneck: str) -> Diagnosis:
    roofline = Roofline(compute_sol_pct=10, memory_sol_pct=10, bottleneck=bottleneck, at_roofline=False,
                        underutilized_below_pct=60, at_roofline_pct=90)  # fmt: skip
    return Diagnosis(bottlenecks=[], source="rules", roofline=roofline)


def input_kernel(name: str) -> Kernel:
    return Kernel(source=open(resolve_problem(name).input_kernel_path).read(), origin="input")


def test_knobs_of_the_matvec_input_kernel() -> None:
    knobs = {k.name: k for k in find_knobs(input_kernel("04").source)}
    assert (knobs["BLOCK_M"].value, knobs["BLOCK_K"].value) == (8, 512)
    assert knobs["num_warps"].inserted and knobs["num_warps"].value == 4
    assert knobs["num_stages"].inserted  # the kernel loops over K


_UNROLLED = """
import triton
import triton.language as tl
from triton.language import static_range


@triton.jit
def _window(x_ptr, out_ptr, KS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    best = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in tl.static_range(KS):
        for j in static_range(2):
            best = tl.maximum(best, tl.load(x_ptr + offs + k + j))
    tl.store(out_ptr + offs, best)


@triton.jit
def _row_sum(x_ptr, n):
    total = 0.0
    for i in range(n):
        total += tl.load(x_ptr + i)
    return total


@triton.jit
def _sums(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.program_id(0), _row_sum(x_ptr, n))


def kernel_function(x, out):
    _window[(4,)](x, out, KS=3, BLOCK=128)
    _sums[(4,)](x, out, x.numel(), BLOCK=128)
"""


def test_stages_are_a_knob_only_where_a_loop_survives_to_compiling() -> None:
    # Unrolled loops leave nothing to pipeline: every stage count compiled the same code (held-out 42 on
    # an H200: 42 of 114 candidates were such duplicates). A helper's loop is the caller's.
    stages = {k.launch for k in find_knobs(_UNROLLED) if k.name == "num_stages"}
    assert stages == {"_sums"}, stages


def test_min_cap_and_inserted_launch_options_rewrite_to_valid_code() -> None:
    source = input_kernel("77").source  # BLOCK_CO = min(triton.next_power_of_2(C_out), 32)
    knobs = {k.name: k for k in find_knobs(source)}
    new = apply(source, {knobs["BLOCK_CO"]: 64, knobs["num_warps"]: 8})
    ast.parse(new)
    assert "min(triton.next_power_of_2(C_out), 64)" in new and "num_warps=8" in new


def test_direction_follows_the_bottleneck() -> None:
    up = TunerProposer(per_call=2).propose(input_kernel("43"), diagnosis("memory"), [])
    down = TunerProposer(per_call=2).propose(input_kernel("43"), diagnosis("underutilized"), [])
    assert len(up) == len(down) == 2
    assert all("BLOCK 256 -> 512" in k.note or "BLOCK 256 -> 1024" in k.note for k in up)
    assert all("BLOCK 256 -> 128" in k.note or "BLOCK 256 -> 64" in k.note for k in down)


def test_deterministic_for_a_seed_and_never_repeats() -> None:
    parent = input_kernel("82")
    first = TunerProposer(per_call=4, seed=7).propose(parent, diagnosis("compute"), [])
    again = TunerProposer(per_call=4, seed=7).propose(parent, diagnosis("compute"), [])
    assert [k.hash for k in first] == [k.hash for k in again]
    tuner = TunerProposer(per_call=4, seed=7)
    history = [Attempt(kernel_hash=first[0].hash, note=first[0].note, outcome="ok")]
    batch1 = tuner.propose(parent, diagnosis("compute"), history)
    batch2 = tuner.propose(parent, diagnosis("compute"), history)
    hashes = [k.hash for k in batch1 + batch2]
    assert first[0].hash not in hashes and len(set(hashes)) == len(hashes) == 8
    assert all(k.origin == "tuner" and k.parent_hash == parent.hash for k in batch1)


def test_a_kernel_without_launches_has_no_proposals() -> None:
    assert TunerProposer().propose(Kernel(source="def kernel_function(x):\n    return x\n", origin="llm"),
                                   diagnosis("memory"), []) == []  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", bundled_problem_names())
def test_proposals_for_the_input_kernels_verify(name: str, tmp_path) -> None:
    problem = resolve_problem(name)
    spec = RunSpec(problem_path=problem.problem_path, shapes="small", device="cpu")
    proposals = TunerProposer(per_call=2).propose(input_kernel(name), diagnosis("memory"), [])
    assert len(proposals) == 2
    for i, kernel in enumerate(proposals):
        path = tmp_path / f"proposal_{i}.py"
        path.write_text(kernel.source)
        verdict = verify_kernel(spec, str(path))
        assert verdict.passed, f"{kernel.note}: {verdict.status}: {verdict.reason}"


@pytest.mark.slow
def test_grid_swap_rewrites_grid_and_program_ids_and_still_verifies(tmp_path) -> None:
    parent = input_kernel("82")
    (knob,) = [k for k in find_knobs(parent.source) if k.kind == "grid"]
    swapped = apply(parent.source, {knob: 1})
    assert "grid = (triton.cdiv(OH, BLOCK_H) * num_w_tiles, N * C)" in swapped
    assert "plane = tl.program_id(1)" in swapped and "tile = tl.program_id(0)" in swapped
    path = tmp_path / "swapped.py"
    path.write_text(swapped)
    spec = RunSpec(problem_path=resolve_problem("82").problem_path, shapes="small", device="cpu")
    assert verify_kernel(spec, str(path)).passed


def test_no_grid_knob_when_an_axis_is_not_a_literal() -> None:
    source = input_kernel("82").source.replace("tl.program_id(1)", "tl.program_id(AXIS)")
    assert not [k for k in find_knobs(source) if k.kind == "grid"]
    assert not [k for k in find_knobs(input_kernel("04").source) if k.kind == "grid"]  # a 1-D grid


def test_llm_kernels_get_their_knobs_tuned_too() -> None:
    llm_kernel = input_kernel("43").model_copy(update={"origin": "llm"})
    assert TunerProposer(per_call=3).propose(llm_kernel, diagnosis("memory"), [])


def test_only_constexpr_arguments_are_block_knobs_and_autotuned_launches_keep_their_configs() -> None:
    source = """
import triton
import triton.language as tl

@triton.jit
def k(x, n, BLOCK: tl.constexpr):
    pass

@triton.autotune(configs=[], key=["n"])
@triton.jit
def k2(x, n, BLOCK: tl.constexpr):
    pass

def kernel_function(x):
    k[(1,)](x, n=4096, BLOCK=256)
    k2[(1,)](x, n=4096)
    k[(1,)]()
"""
    assert [(k.name, k.launch) for k in find_knobs(source)] == [("BLOCK", "k"), ("num_warps", "k")]


# Where first drafts write their block sizes: a tuple assignment, a module constant; and names no literal
# of the file sets: one changed again, parameters (the caller's values: the harness passes model values
# such as ``dilation`` by keyword, so editing a default would change nothing that runs).
STYLES = """
import triton
import triton.language as tl

BLOCK_SIZE = 1024


@triton.jit
def k(x, n, BLOCK_A: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_D: tl.constexpr,
      BLOCK_E: tl.constexpr, BLOCK_F: tl.constexpr):
    tl.store(x + tl.arange(0, BLOCK_A), 1.0)


def kernel_function(x, block_c=64, *, block_f, BLOCK_SIZE=None):
    BLOCK_A, BLOCK_B = 16, 256
    block_e = 32
    block_e *= 2
    k[(1,)](x, x.numel(), BLOCK_A=BLOCK_A, BLOCK_B=BLOCK_B, BLOCK_C=block_c, BLOCK_D=SIZE, BLOCK_E=block_e,
            BLOCK_F=block_f)
    return x


SIZE = BLOCK_SIZE
"""


def test_block_sizes_from_tuples_and_module_constants_never_parameters() -> None:
    knobs = {k.name: k for k in find_knobs(STYLES) if k.kind == "block"}
    assert {n: k.value for n, k in knobs.items()} == {"BLOCK_A": 16, "BLOCK_B": 256}
    assert "BLOCK_A, BLOCK_B = 16, 128" in apply(STYLES, {knobs["BLOCK_B"]: 128})
    module_level = STYLES.replace("BLOCK_D=SIZE", "BLOCK_D=MODULE_BLOCK").replace("SIZE = BLOCK_SIZE", "MODULE_BLOCK = 512")
    knobs = {k.name: k for k in find_knobs(module_level) if k.kind == "block"}
    assert knobs["BLOCK_D"].value == 512
    assert "MODULE_BLOCK = 256" in apply(module_level, {knobs["BLOCK_D"]: 256})


def test_a_name_read_from_an_enclosing_scope_or_bound_twice_is_no_knob() -> None:
    """A launch reads the binding Python would: a module constant only when nothing else binds that name."""
    kernel = STYLES.split("def kernel_function")[0]
    closure = kernel + """
def kernel_function(x):
    BLOCK_SIZE = 256

    def run(y):
        k[(1,)](y, y.numel(), BLOCK_A=BLOCK_SIZE, BLOCK_B=32, BLOCK_C=32, BLOCK_D=32, BLOCK_E=32, BLOCK_F=32)
    run(x)
"""
    names = {k.name: k.value for k in find_knobs(closure) if k.kind == "block"}
    assert "BLOCK_A" not in names and names["BLOCK_B"] == 32  # BLOCK_SIZE is the enclosing function's 256
    alone = closure.replace("    BLOCK_SIZE = 256\n", "")
    assert {k.name: k.value for k in find_knobs(alone)}["BLOCK_A"] == 1024  # now the module's constant
    rebound = alone.replace("\n\n@triton.jit", "\nif True:\n    BLOCK_SIZE = 64\n\n\n@triton.jit", 1)
    assert "BLOCK_A" not in {k.name for k in find_knobs(rebound)}


def test_an_inserted_launch_option_goes_inside_the_parentheses() -> None:
    """A parenthesised last argument, a trailing comma and a comment before the closing parenthesis."""
    for tail in ("(n))", "n,)", "n  # the size\n    )"):
        source = f"""
import triton

@triton.jit
def k(x, n):
    pass

def kernel_function(x, n):
    k[(1,)](x, {tail}
"""
        (warps,) = [k for k in find_knobs(source) if k.name == "num_warps"]
        ast.parse(apply(source, {warps: 8}))
        assert "num_warps=8" in apply(source, {warps: 8})

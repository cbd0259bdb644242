"""The compiler seed: Inductor's recorded Triton made a standalone kernel with its chosen configs as knobs.

The GPU recordings (tests/data/inductor, full shapes) are extracted and read for knobs; the CPU-made
small-shape wrappers (tests/data/inductor_small) are also verified with Triton's interpreter.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import RunSpec
from tests.conftest import small_seed
from workers.harness.verify import verify_kernel
from workers.proposers.compile_seed import seed_from_inductor, seed_from_recording
from workers.proposers.inductor_code import parse_output_code
from workers.proposers.knob_space import render, space_of

DATA = Path(__file__).parent / "data"
RECORDED = sorted(p for p in (DATA / "inductor").iterdir() if p.is_dir())
SMALL = DATA / "inductor_small"
MORE = DATA / "inductor_more"  # KernelBench problems outside the bundled set, recorded on an H100
GROUP_NORM_ARGS: list[int | str] = ["weight", "bias", 0]  # its graph takes weight, bias, then x


def _best_config(folder: Path, constexprs: set[str]) -> dict:
    configs = [v["config"] for v in json.loads((folder / "best_configs.json").read_text()).values()]
    return next(c for c in configs if {k for k in c if k.isupper()} == constexprs)


@pytest.mark.parametrize("folder", RECORDED, ids=lambda p: p.name)
def test_every_recording_gives_a_seed_or_a_reason(folder: Path) -> None:
    result = seed_from_recording(folder)
    if folder.name.startswith("35_"):  # weight and bias are graph arguments: which is which is not recorded
        assert not result.available
        assert "model parameters" in result.unavailable and "primals_1 (64,)" in result.unavailable
        result = seed_from_recording(folder, graph_args=GROUP_NORM_ARGS)
    assert result.available, result.unavailable
    tree = ast.parse(result.source)
    kernel_function = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "kernel_function"
    )
    assert "triton_heuristics" not in result.source and "async_compile" not in result.source
    assert "aten" not in result.source and "extern_kernels" not in result.source
    dims = {d.name: d for d in space_of(result.source).dims}
    module = parse_output_code((folder / "output_code.py").read_text())
    for name in result.kernels:
        config = _best_config(folder, set(module.kernels[name].constexprs))
        kernel = module.kernels[name]
        for knob in (*kernel.constexprs, "num_warps", *(["num_stages"] if kernel.loops else [])):
            assert dims[f"{name}:{knob}"].start == config[knob], (name, knob)
        assert (f"{name}:num_stages" in dims) == kernel.loops  # stages only pipeline loops
    assert kernel_function.args.args[0].arg == "input0"
    assert result.input_shapes[-1] == json.loads((folder / "meta.json").read_text())["input_shapes"][0]


def test_group_norm_best_configs_are_matched_by_the_constexprs_each_kernel_takes() -> None:
    result = seed_from_recording(DATA / "inductor" / "35_GroupNorm_", graph_args=GROUP_NORM_ARGS)
    assert result.configs == {
        "triton_red_fused_native_group_norm_0": {
            "XBLOCK": 1,
            "R0_BLOCK": 4096,
            "num_warps": 16,
            "num_stages": 1,
        },
        "triton_poi_fused_native_group_norm_1": {"XBLOCK": 1024, "num_warps": 4, "num_stages": 1},
    }
    assert not any("by order" in n for n in result.notes)
    assert any("training forward graph" in n for n in result.notes)  # it also returns what backward saves
    assert result.source.rstrip().endswith("return buf3")
    signature = "def kernel_function(input0, weight, bias):"
    assert signature in result.source


def test_chosen_configs_are_preferred_and_an_ambiguous_match_is_noted() -> None:
    folder = DATA / "inductor" / "35_GroupNorm_"
    code = (folder / "output_code.py").read_text()
    best = json.loads((folder / "best_configs.json").read_text())
    chosen = {
        "triton_poi_fused_native_group_norm_1": {"config": {"XBLOCK": 512, "num_warps": 8, "num_stages": 1}}
    }
    result = seed_from_inductor(code, chosen_configs=chosen, best_configs=best, graph_args=GROUP_NORM_ARGS)
    assert result.configs["triton_poi_fused_native_group_norm_1"]["XBLOCK"] == 512
    assert "XBLOCK=512, num_warps=8" in result.source
    assert result.configs["triton_red_fused_native_group_norm_0"]["R0_BLOCK"] == 4096  # still from best

    two_pointwise = {**best, "extra": {"config": {"XBLOCK": 64, "num_warps": 2, "num_stages": 1}}}
    result = seed_from_inductor(code, best_configs=two_pointwise, graph_args=GROUP_NORM_ARGS)
    assert any("triton_poi_fused_native_group_norm_1: config matched by order" in n for n in result.notes)


def test_a_kernel_without_a_config_makes_the_seed_unavailable() -> None:
    code = (DATA / "inductor" / "26_GELU_" / "output_code.py").read_text()
    result = seed_from_inductor(code, best_configs={})
    assert not result.available
    assert "no recorded config for kernel triton_poi_fused_gelu_0" in result.unavailable


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("extern_kernels.mm(arg0_1, arg0_1, out=buf0)", "extern_kernels.mm"),
        ("buf0 = aten.gelu.default(arg0_1)", "aten.gelu.default"),
        ("torch.ops.aten.copy_(buf0, arg0_1)", "torch.ops.aten.copy_"),
        # an attention call returns a tuple, read by a statement the seed cannot hold: the call is the reason
        ("buf9 = torch.ops.aten._scaled_dot_product_flash_attention.default(arg0_1)\n            buf8 = buf9[0]",
         "torch.ops.aten._scaled_dot_product_flash_attention.default"),
    ],
)
def test_extern_or_aten_calls_make_the_seed_unavailable(statement: str, named: str) -> None:
    folder = DATA / "inductor" / "26_GELU_"
    code = (folder / "output_code.py").read_text()
    launch = "            triton_poi_fused_gelu_0.run("
    assert launch in code
    code = code.replace(launch, f"            {statement}\n{launch}")
    result = seed_from_inductor(code, best_configs=json.loads((folder / "best_configs.json").read_text()))
    assert not result.available
    assert named in result.unavailable and "PyTorch compute" in result.unavailable


def test_buffer_views_and_zeroing_are_kept() -> None:
    """Inductor reuses a buffer through a view, and zeroes one before atomic adds: both stay in the seed."""
    folder = DATA / "inductor" / "26_GELU_"
    code = (folder / "output_code.py").read_text()
    launch = "            triton_poi_fused_gelu_0.run(arg0_1, buf0,"
    assert launch in code
    code = code.replace(launch, "            buf0.zero_()\n" + launch)
    code = code.replace(
        "        return (buf0, )",
        "        buf1 = reinterpret_tensor(buf0, (393216, 4096), (1, 393216), 0)\n        return (buf1, )",
    )
    result = seed_from_inductor(code, best_configs=json.loads((folder / "best_configs.json").read_text()))
    assert result.available, result.unavailable
    body = result.source[result.source.index("def kernel_function") :]
    assert "    buf0.zero_()\n    triton_poi_fused_gelu_0[" in body
    assert "buf1 = torch.as_strided(buf0, (393216, 4096), (1, 393216), 0)" in body
    assert body.rstrip().endswith("return buf1")


def test_a_real_extern_call_is_named() -> None:
    """Inductor's own wrapper for 04 (matrix-vector) on the CPU calls extern_kernels.mm."""
    result = seed_from_recording(SMALL / "04_Matrix_vector_multiplication")
    assert not result.available
    assert "extern_kernels.mm" in result.unavailable and "PyTorch compute" in result.unavailable


def test_what_the_seed_cannot_reproduce_is_named() -> None:
    code = (DATA / "inductor" / "26_GELU_" / "output_code.py").read_text()
    odd = code.replace("            del arg0_1\n", "            print(arg0_1)\n")
    assert (
        "unsupported statement in call(): print(arg0_1)"
        in seed_from_inductor(odd, best_configs={}).unavailable
    )
    broken = code + "\n\n# ---- next module ----\n\n" + code
    assert "2 compiled graphs" in seed_from_inductor(broken, best_configs={}).unavailable
    template = code.replace("@triton_heuristics.pointwise(", "@triton_heuristics.template(")
    config = {"triton_poi_fused_gelu_0": {"config": {"XBLOCK": 1024, "num_warps": 4}}}
    assert (
        "template kernels with grid type Grid1D are not supported"
        in seed_from_inductor(template, chosen_configs=config).unavailable
    )


def _import_seed(folder: Path, tmp_path: Path) -> object:
    path = tmp_path / f"seed_{folder.name}.py"
    path.write_text(seed_from_recording(folder).source)
    spec = importlib.util.spec_from_file_location(f"seed_{folder.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_full_size_seed_refuses_other_shapes_with_both_named(tmp_path: Path) -> None:
    module = _import_seed(DATA / "inductor" / "26_GELU_", tmp_path)
    with pytest.raises(ValueError, match=r"input0 of shape \(4096, 393216\).*got shape \(3, 1000\)"):
        module.kernel_function(torch.zeros(3, 1000, dtype=torch.bfloat16))


def test_a_block_that_does_not_divide_an_unmasked_axis_is_refused(tmp_path: Path) -> None:
    """41's x axis (64*192*65523 outputs) has no bounds mask: XBLOCK 8192 would run past the buffers."""
    folder = DATA / "inductor" / "41_Max_Pooling_1D"
    source = seed_from_recording(folder).source
    assert "_grid(meta, [(805146624, 'XBLOCK')], [(805146624, 'XBLOCK')])" in source
    module = _import_seed(folder, tmp_path)
    axes = [(805146624, "XBLOCK")]
    assert module._grid({"XBLOCK": 4096}, axes, axes) == (196569,)
    with pytest.raises(ValueError, match="XBLOCK=8192 does not divide 805146624"):
        module._grid({"XBLOCK": 8192}, axes, axes)
    reduction = seed_from_recording(DATA / "inductor" / "24_LogSoftmax").source  # its r0 axis too
    assert "[(393216, 'R0_BLOCK'), (4096, 'XBLOCK')]" in reduction
    masked = small_seed("26_GELU_", 64, tmp_path)  # 3000 elements: masked, any block goes
    assert "_grid(meta, [(3000, 'XBLOCK')], [])" in masked


def _verify(name: str, source: str, folder: Path, dtype: str = "bf16") -> None:
    path = folder / f"{name}_seed.py"
    path.write_text(source)
    problem = DATA / f"{name}.py" if (DATA / f"{name}.py").is_file() else resolve_problem(name).problem_path
    spec = RunSpec(problem_path=str(problem), shapes="small", device="cpu", dtype=dtype)
    verdict = verify_kernel(spec, str(path))
    assert verdict.passed, f"{verdict.status}: {verdict.reason}\n{verdict.traceback[-2000:]}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "block"),
    [
        ("26_GELU_", 64),  # pointwise, libdevice.erf
        ("48_Mean_reduction_over_a_dimension", 64),  # persistent reduction
        ("36_RMSNorm", 64),  # persistent reduction, then a pointwise kernel on its result
        ("35_GroupNorm_", 128),  # looped Welford reduction (triton_helpers); weight, bias by graph_args
        (
            "89_cumsum",
            {"XBLOCK": 1, "R0_BLOCK": 1024},
        ),  # a scan: tl.associative_scan with the kernel module's own combine function
        ("transpose_scale_problem", 16),  # a tiled pointwise kernel on a 2-D grid; weight by keyword
        ("number_input_problem", 64),  # a number before the tensor, baked into the kernel by Dynamo
    ],
)
def test_small_seed_passes_verification(name: str, block: int | dict[str, int], tmp_path: Path) -> None:
    _verify(name, small_seed(name, block, tmp_path), tmp_path)


def _small_module(name: str, source: str, folder: Path) -> object:
    path = folder / f"{name}_module.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"{name}_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_cooperative_reduction_is_one_launch_of_rsplit_programs_a_row(tmp_path: Path, monkeypatch) -> None:
    """Inductor's split of one long reduction across programs that combine their partials after a grid
    barrier (``triton.cooperative_reductions``): the seed launches it cooperatively, RSPLIT programs first,
    and RSPLIT is a knob only through the divisors of its recorded value (the workspace holds that many)."""
    source = small_seed("mse_loss_problem", {"XBLOCK": 1, "RSPLIT": 8}, tmp_path)
    assert "_cooperative_grid(meta, [(1, 'XBLOCK')], [(8, 'RSPLIT'), (1, 'XBLOCK')])" in source
    assert "RSPLIT=8, num_warps=4, launch_cooperative_grid=True)" in source
    dims = {d.name.split(":")[1]: d.values for d in space_of(source).dims}
    assert dims["RSPLIT"] == [1, 2, 4, 8] and dims["XBLOCK"] == [1]
    module = _small_module("mse_loss", source, tmp_path)
    axes, whole = [(1, "XBLOCK")], [(8, "RSPLIT"), (1, "XBLOCK")]
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert module._cooperative_grid({"RSPLIT": 4, "XBLOCK": 1}, axes, whole) == (4, 1)
    with pytest.raises(ValueError, match="RSPLIT=16 does not divide 8: Inductor sized"):
        module._cooperative_grid({"RSPLIT": 16, "XBLOCK": 1}, axes, whole)
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # its programs run one at a time: the barrier would never open
    assert module._cooperative_grid({"RSPLIT": 1, "XBLOCK": 1}, axes, whole) == (1, 1)
    with pytest.raises(ValueError, match="RSPLIT=2: .* only RSPLIT=1 runs there"):
        module._cooperative_grid({"RSPLIT": 2, "XBLOCK": 1}, axes, whole)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("recording", "config"),
    [
        ("mse_loss_problem", {"XBLOCK": 1, "RSPLIT": 4}),  # persistent: each program's share in one block
        ("mse_loss_problem_looped", {"XBLOCK": 1, "R0_BLOCK": 16, "RSPLIT": 4}),  # each program loops over its share
    ],
)
def test_a_cooperative_seed_passes_verification_and_more_programs_say_why_not_here(
    recording: str, config: dict[str, int], tmp_path: Path
) -> None:
    """The interpreter runs one program at a time, so it checks the seed at RSPLIT=1 (no barrier); the
    recorded RSPLIT=4 is a reason there, not a hang."""
    source = small_seed(recording, config, tmp_path)
    spec = RunSpec(problem_path=str(DATA / "mse_loss_problem.py"), shapes="small", device="cpu", dtype="bf16")
    path = tmp_path / "one.py"
    path.write_text(source.replace("RSPLIT=4,", "RSPLIT=1,"))
    verdict = verify_kernel(spec, str(path))
    assert verdict.passed, f"{verdict.status}: {verdict.reason}\n{verdict.traceback[-2000:]}"
    path = tmp_path / "four.py"
    path.write_text(source)
    verdict = verify_kernel(spec, str(path))
    assert not verdict.passed and "only RSPLIT=1 runs there" in verdict.reason, verdict.reason


@pytest.mark.gpu
@pytest.mark.parametrize("recording", ["mse_loss_problem", "mse_loss_problem_looped"])
@pytest.mark.parametrize("rsplit", [2, 4])
def test_a_cooperative_seed_passes_verification_on_gpu(recording: str, rsplit: int, tmp_path: Path) -> None:
    """Where the grid barrier really waits: every program's partial must be in the workspace before any
    combines them."""
    extra = {"R0_BLOCK": 16} if recording.endswith("_looped") else {}
    source = small_seed(recording, {"XBLOCK": 1, "RSPLIT": rsplit, **extra}, tmp_path)
    path = tmp_path / "seed.py"
    path.write_text(source)
    spec = RunSpec(problem_path=str(DATA / "mse_loss_problem.py"), shapes="small", device="cuda", dtype="bf16")
    verdict = verify_kernel(spec, str(path))
    assert verdict.passed, f"{verdict.status}: {verdict.reason}"


def test_a_baked_number_is_taken_where_the_problem_passes_it_and_checked(tmp_path: Path) -> None:
    """No graph argument takes the number (Dynamo wrote 2.5 into the kernel): kernel_function still takes it
    first, as the problem passes it, and refuses another value rather than compute with the recorded one."""
    source = small_seed("number_input_problem", 64, tmp_path)
    assert "def kernel_function(input0, input1):" in source
    path = tmp_path / "number_seed.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("number_seed", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    a = torch.rand(24, 20, dtype=torch.bfloat16)
    for other in (3.0, 2):  # another value; the same value as an int
        with pytest.raises(ValueError, match=r"compiled for input0 = 2\.5; got"):
            module.kernel_function(other, a)


def test_a_recorded_number_input_is_a_parameter_checked_against_its_value() -> None:
    """KernelBench's matrix-scalar product on an H100: the seed takes ``A, s`` as the problem passes them."""
    source = seed_from_recording(MORE / "5_Matrix_scalar_multiplication").source
    assert "def kernel_function(input0, input1):" in source
    assert "_VALUES = {'input1': 3.14}" in source and "    _check_values(input1=input1)" in source


def test_a_large_k_matmul_records_a_template_not_decompose_k() -> None:
    result = seed_from_recording(MORE / "6_Matmul_with_large_K_dimension_")
    assert result.available, result.unavailable
    assert result.kernels == ["triton_tem_fused_mm_0"]


def test_a_persistent_tma_template_gets_its_tiles_as_knobs_and_a_scratch_allocator() -> None:
    """One program per SM (132 on an H100), each looping over tiles NUM_SMS apart: the tiles become knobs
    and the grid the smaller of the SMs and the tiles; its TMA descriptors need Triton's allocator set."""
    result = seed_from_recording(MORE / "1_Square_matrix_multiplication_")
    assert result.available, result.unavailable
    assert result.configs["triton_tem_fused_mm_0"] == {
        "BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_stages": 4, "num_warps": 8,
    }  # fmt: skip
    source = result.source
    assert "triton.set_allocator(_scratch)" in source
    assert "lambda meta: (min(132, triton.cdiv(4096, meta['BLOCK_M']) * triton.cdiv(4096, meta['BLOCK_N'])), 1, 1)" in source
    assert "NUM_SMS : tl.constexpr = 132" in source  # the GPU's SMs: not a knob, not derived from the tiles
    dims = {d.name: d.start for d in space_of(source).dims}
    assert {k: dims[f"triton_tem_fused_mm_0:{k}"] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")} == {
        "BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
    }  # fmt: skip


def test_recorded_graph_args_name_the_model_values() -> None:
    """workers/harness/record_inductor_cpu.py read them off Dynamo's graph: GroupNorm's weight, bias, then x."""
    assert json.loads((SMALL / "35_GroupNorm_" / "graph_args.json").read_text()) == GROUP_NORM_ARGS
    assert json.loads((SMALL / "26_GELU_" / "graph_args.json").read_text()) == [0]


def test_an_argument_that_is_neither_input_nor_model_value_is_refused(tmp_path: Path) -> None:
    recording = tmp_path / "35"
    shutil.copytree(SMALL / "35_GroupNorm_", recording)
    (recording / "graph_args.json").write_text(json.dumps(["weight", None, 0]))
    result = seed_from_recording(recording)
    assert not result.available and "graph arguments [1] are neither" in result.unavailable


def test_the_seed_knobs_are_live(tmp_path: Path) -> None:
    """The tuner's rewrite at another point still verifies: the grid follows XBLOCK, not a baked count."""
    source = small_seed("26_GELU_", 64, tmp_path)
    space = space_of(source)
    assert {d.name for d in space.dims} == {
        "triton_poi_fused_gelu_0:XBLOCK",
        "triton_poi_fused_gelu_0:num_warps",
    }
    moved = render(
        source, space, {"triton_poi_fused_gelu_0:XBLOCK": 1024, "triton_poi_fused_gelu_0:num_warps": 2}
    )
    assert "XBLOCK=1024, num_warps=2" in moved
    _verify("26_GELU_", moved, tmp_path)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "name", ["26_GELU_", "36_RMSNorm", "43_Max_Pooling_3D", "48_Mean_reduction_over_a_dimension"]
)
def test_full_size_seed_passes_verification_on_gpu(name: str, tmp_path: Path) -> None:
    """The H100 recordings' seeds at the shapes Inductor compiled them for, with its chosen configs."""
    result = seed_from_recording(DATA / "inductor" / name)
    path = tmp_path / f"{name}_seed.py"
    path.write_text(result.source)
    spec = RunSpec(
        problem_path=resolve_problem(name).problem_path, shapes="full", device="cuda", dtype="bf16"
    )
    verdict = verify_kernel(spec, str(path))
    assert verdict.passed, f"{verdict.status}: {verdict.reason}"


MATMUL = "2_Standard_matrix_multiplication_"
TEMPLATE = "triton_tem_fused_mm_0"


@pytest.mark.slow
def test_a_matmul_template_is_a_seed_whose_tiles_are_knobs(tmp_path: Path) -> None:
    """max-autotune's matmul template (its config in its body, its grid fixed in the launch) becomes a
    kernel whose tiles are launch knobs and whose grid follows them. Its first BLOCK_K (16) does not divide
    K (100), so Inductor wrote the masks along K into the text: any BLOCK_K verifies."""
    result = seed_from_recording(SMALL / MATMUL)
    assert result.available, result.unavailable
    assert result.configs == {TEMPLATE: {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 8,
                                         "num_warps": 1, "num_stages": 1}}  # fmt: skip
    assert "triton.cdiv(70, meta['BLOCK_M']) * triton.cdiv(45, meta['BLOCK_N']), 1, 1)" in result.source
    assert "EVEN_K : tl.constexpr = False" in result.source and "static_assert" not in result.source
    _verify(MATMUL, result.source, tmp_path, dtype="fp32")
    space = space_of(result.source)
    assert {d.name for d in space.dims} == {f"{TEMPLATE}:{k}" for k in result.configs[TEMPLATE]}
    point = {f"{TEMPLATE}:BLOCK_M": 32, f"{TEMPLATE}:BLOCK_N": 64, f"{TEMPLATE}:BLOCK_K": 32,
             f"{TEMPLATE}:GROUP_M": 16, f"{TEMPLATE}:num_warps": 4, f"{TEMPLATE}:num_stages": 2}  # fmt: skip
    moved = render(result.source, space, point)
    assert "BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, GROUP_M=16" in moved
    _verify(MATMUL, moved, tmp_path, dtype="fp32")


def test_a_template_on_another_grid_keeps_its_tiles_and_grid(tmp_path: Path) -> None:
    """Where the launch's grid is not the matmul's cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N), which tiles the
    grid follows is unknown: the kernel keeps its body's tiles and the grid as recorded."""
    code = (
        (SMALL / MATMUL / "output_code.py")
        .read_text()
        .replace("buf0, 15, 1, 1, stream", "buf0, 16, 1, 1, stream")
    )
    result = seed_from_inductor(code, graph_args=[0, 1])
    assert result.available, result.unavailable
    assert result.configs == {TEMPLATE: {"num_warps": 1, "num_stages": 1}}
    assert f"{TEMPLATE}[(16, 1, 1)](arg0_1, arg1_1, buf0, num_stages=1, num_warps=1)" in result.source
    assert "BLOCK_M : tl.constexpr = 16" in result.source
    two_grids = code.replace("        del arg0_1\n", "        triton_tem_fused_mm_0.run(arg0_1, arg1_1, buf0, 15, 1, 1, "
                             "stream=raw_streamNone)\n        del arg0_1\n")  # fmt: skip
    assert "do not pass one fixed grid" in seed_from_inductor(two_grids, graph_args=[0, 1]).unavailable


def _seed_with(folder: Path, tiles: dict[str, int], tmp_path: Path) -> str:
    """The recording's seed with its template's tiles moved as the tuner moves them."""
    source = seed_from_recording(folder).source
    space = space_of(source)
    name = next(d.name.split(":")[0] for d in space.dims)
    return render(source, space, {f"{name}:{k}": v for k, v in tiles.items()})


def test_where_inductor_left_out_the_k_masks_a_block_k_must_divide_k(tmp_path: Path) -> None:
    """K = 80: the first BLOCK_K (16) divides it, so the mm template's text has no masks along K at all
    (Inductor's EVEN_K is decided when it writes the kernel). The seed asserts that BLOCK_K divides K:
    a BLOCK_K of 32 is refused instead of reading past K, while other tiles still move."""
    folder = SMALL / "matmul_even_k_problem"
    problem = "matmul_even_k_problem"
    source = seed_from_recording(folder).source
    assert "tl.static_assert(80 % BLOCK_K == 0" in source
    _verify(problem, _seed_with(folder, {"BLOCK_M": 32, "BLOCK_N": 64}, tmp_path), tmp_path, dtype="fp32")
    path = tmp_path / "k32.py"
    path.write_text(_seed_with(folder, {"BLOCK_K": 32}, tmp_path))
    spec = RunSpec(problem_path=str(DATA / f"{problem}.py"), shapes="small", device="cpu", dtype="fp32")
    verdict = verify_kernel(spec, str(path))
    assert not verdict.passed and "BLOCK_K must divide 80" in verdict.reason, verdict.reason


@pytest.mark.slow
def test_a_bmm_template_computes_even_k_from_block_k_and_keeps_its_batch_axis(tmp_path: Path) -> None:
    """The bmm template branches on EVEN_K inside the kernel, so EVEN_K follows BLOCK_K; its grid's batch
    axis (3) stays as recorded. A BLOCK_K that does not divide K takes the masked branch and verifies."""
    folder = SMALL / "bmm_even_k_problem"
    source = seed_from_recording(folder).source
    assert "EVEN_K : tl.constexpr = 80 % BLOCK_K == 0" in source and "static_assert" not in source
    assert "triton.cdiv(70, meta['BLOCK_M']) * triton.cdiv(45, meta['BLOCK_N']), 3, 1)" in source
    _verify("bmm_even_k_problem", source, tmp_path, dtype="fp32")
    moved = _seed_with(folder, {"BLOCK_K": 32, "BLOCK_M": 32}, tmp_path)
    _verify("bmm_even_k_problem", moved, tmp_path, dtype="fp32")


@pytest.mark.slow
def test_an_addmm_template_takes_the_bias_and_relu_and_the_model_values(tmp_path: Path) -> None:
    """nn.Linear then relu: one addmm template with its epilogue, bound to the model's weight and bias."""
    result = seed_from_recording(SMALL / "linear_relu_problem")
    assert result.available, result.unavailable
    assert result.kernels == ["triton_tem_fused_addmm_relu_t_0"]
    assert "def kernel_function(input0, weight, bias):" in result.source
    _verify("linear_relu_problem", result.source, tmp_path, dtype="fp32")
    moved = _seed_with(SMALL / "linear_relu_problem", {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32}, tmp_path)
    _verify("linear_relu_problem", moved, tmp_path, dtype="fp32")


@pytest.mark.slow
def test_a_convolution_template_is_a_seed_whose_tiles_are_knobs(tmp_path: Path) -> None:
    """Inductor's convolution template (its grid: output pixels by BLOCK_M, output channels by BLOCK_N) gets
    its tiles as knobs, the grid following them; masked along every axis, it verifies at moved tiles."""
    source = small_seed("conv2d_problem", 16, tmp_path)
    name = "triton_tem_fused_convolution_2"
    assert f"{name}[lambda meta: (triton.cdiv(512, meta['BLOCK_M']), triton.cdiv(32, meta['BLOCK_N']), 1)]" in source
    space = space_of(source)
    assert {f"{name}:{k}" for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")} <= {d.name for d in space.dims}
    _verify("conv2d_problem", source, tmp_path, dtype="fp32")
    moved = render(source, space, {f"{name}:BLOCK_M": 128, f"{name}:BLOCK_N": 16, f"{name}:BLOCK_K": 32})
    _verify("conv2d_problem", moved, tmp_path, dtype="fp32")


@pytest.mark.slow
def test_a_second_layers_weights_are_bound_by_their_qualified_names(tmp_path: Path) -> None:
    """Two linear layers: the recorder names the second's weight and bias ``fc2_weight`` and ``fc2_bias``
    (the first layer has ``weight`` and ``bias``), and the seed takes and verifies with all four."""
    folder = SMALL / "two_linear_problem"
    assert json.loads((folder / "graph_args.json").read_text()) == ["weight", "bias", 0, "fc2_weight", "fc2_bias"]
    result = seed_from_recording(folder)
    assert result.available, result.unavailable
    assert "def kernel_function(input0, weight, bias, fc2_weight, fc2_bias):" in result.source
    _verify("two_linear_problem", result.source, tmp_path, dtype="fp32")


def test_the_template_seed_compiles_for_an_h100(tmp_path: Path) -> None:
    """Triton's own compiler (no GPU needed to compile) takes the rewritten templates for sm_90: the
    masked one at two points, the unmasked one at a BLOCK_K that divides K, and refuses the unmasked one
    at a BLOCK_K that does not, naming why."""
    masked, unmasked = tmp_path / "masked.py", tmp_path / "unmasked.py"
    masked.write_text(seed_from_recording(SMALL / MATMUL).source)
    unmasked.write_text(seed_from_recording(SMALL / "matmul_even_k_problem").source)
    script = f"""
import importlib.util
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
def compiles(path, tiles):
    spec = importlib.util.spec_from_file_location(path.replace("/", "_"), path)
    seed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seed)
    signature = {{"arg_A": "*fp32", "arg_B": "*fp32", "out_ptr0": "*fp32"}} | {{k: "constexpr" for k in tiles}}
    try:
        triton.compile(ASTSource(fn=seed.{TEMPLATE}, signature=signature, constexprs=tiles),
                       target=GPUTarget("cuda", 90, 32), options={{"num_warps": 4, "num_stages": 2}})
    except Exception as e:
        return "refused" if "must divide 80" in str(e) else "failed"
    return "compiled"
tiles = {{"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 8}}
print(compiles({str(masked)!r}, tiles), compiles({str(masked)!r}, tiles | {{"BLOCK_M": 64, "BLOCK_K": 32}}))
print(compiles({str(unmasked)!r}, tiles), compiles({str(unmasked)!r}, tiles | {{"BLOCK_K": 32}}))
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["compiled", "compiled", "compiled", "refused"], done.stdout


def test_the_persistent_tma_seed_compiles_for_an_h100_at_other_tiles(tmp_path: Path) -> None:
    """Its TMA descriptors' block shapes follow the tiles: Triton's compiler takes the seed for sm_90 at
    the recorded tiles and at smaller ones (no GPU needed to compile)."""
    path = tmp_path / "tma_seed.py"
    path.write_text(seed_from_recording(MORE / "1_Square_matrix_multiplication_").source)
    script = f"""
import importlib.util
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
spec = importlib.util.spec_from_file_location("tma_seed", {str(path)!r})
seed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seed)
for tiles in ({{"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}},
              {{"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 4}}):
    signature = {{"arg_A": "*bf16", "arg_B": "*bf16", "out_ptr0": "*bf16", "ws_ptr": "*u8"}}
    signature |= {{k: "constexpr" for k in tiles}}
    compiled = triton.compile(ASTSource(fn=seed.triton_tem_fused_mm_0, signature=signature, constexprs=tiles),
                              target=GPUTarget("cuda", 90, 32), options={{"num_warps": 8, "num_stages": 3}})
    print("wgmma" in compiled.asm["ttgir"] or "warp_group_dot" in compiled.asm["ttgir"])
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "True"], done.stdout  # Hopper's warp-group MMA at both


@pytest.mark.gpu
def test_the_matmul_seed_is_recorded_from_a_template_and_verified_on_gpu(tmp_path: Path) -> None:
    """Recorded now with the GEMM backends limited to Triton: the full-size matmul's seed is Inductor's
    template with its tiles as knobs, and it verifies (max-autotune alone would have called cuBLAS)."""
    from workers.actor.task import compiler_seed

    spec = RunSpec(
        problem_path=resolve_problem(MATMUL).problem_path, shapes="full", device="cuda", dtype="bf16"
    )
    result = compiler_seed(spec, None)
    assert result.available, result.unavailable
    assert any(name.startswith("triton_tem_") for name in result.kernels), result.kernels
    assert any("BLOCK_K" in config for config in result.configs.values()), result.configs
    path = tmp_path / "seed.py"
    path.write_text(result.source)
    verdict = verify_kernel(spec, str(path))
    assert verdict.passed, f"{verdict.status}: {verdict.reason}"

"""Roofline classes on KernelAgent's real H100 ncu metrics, and floors against hand-computed values."""

from __future__ import annotations

import json

import pytest

from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import RunSpec, Work
from profiling.metrics import COMPUTE_SOL, MEMORY_SOL, TENSOR_PIPE
from profiling.roofline import classify, floor, is_suspect, pct_of_floor
from profiling.work import count_work
from tests.conftest import SHARED

TRACES = SHARED / "fixtures" / "kernelagent-traces"


def recorded(problem: str, round_n: int) -> dict[str, float]:
    path = TRACES / problem / f"round_{round_n}" / "input_ncu_metrics.json"
    if not path.is_file():
        pytest.skip(f"fixtures not found at {TRACES}")
    return next(iter(json.loads(path.read_text())["metrics"].values()))


# (problem, round, bottleneck, at_roofline, tensor cores): by hand from each file's two SOL numbers,
# e.g. matvec round 1: SM 4.86 %, memory 18.48 %, both under 60 % -> underutilized.
CASES = [
    ("04_Matrix_vector_multiplication", 1, "underutilized", False, False),  # 4.86 / 18.48
    ("36_RMSNorm", 1, "memory", False, False),  # 20.37 / 82.76
    ("36_RMSNorm", 8, "memory", False, False),  # 8.46 / 86.89, tensor pipe 0.04 %: a trace, not use
    ("43_Max_Pooling_3D", 1, "compute", True, False),  # 90.59 / 41.89
    ("43_Max_Pooling_3D", 8, "memory", True, False),  # 73.76 / 99.69
    # 18.08 / 97.76, tensor pipe 1.92 %
    ("77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__", 1, "memory", True, True),
    ("82_conv_depthwise_2D_square_input_square_kernel", 1, "compute", False, False),  # 80.71 / 37.36
]


@pytest.mark.parametrize(("problem", "round_n", "bottleneck", "at_roofline", "tensor"), CASES)
def test_classification_on_real_h100_metrics(problem, round_n, bottleneck, at_roofline, tensor) -> None:
    r = classify(recorded(problem, round_n))
    assert (r.bottleneck, r.at_roofline, r.tensor_cores_used) == (bottleneck, at_roofline, tensor)
    assert not r.warnings


def test_thresholds_are_configurable() -> None:
    metrics = recorded("04_Matrix_vector_multiplication", 8)  # 9.15 / 41.38
    assert classify(metrics).bottleneck == "underutilized"
    assert classify(metrics, underutilized_below_pct=40).bottleneck == "memory"
    assert classify(metrics, at_roofline_pct=40).at_roofline


def test_missing_metrics_warn_instead_of_reading_as_zero() -> None:
    r = classify({COMPUTE_SOL: 95.0})
    assert r.bottleneck == "unknown" and r.memory_sol_pct is None and r.tensor_cores_used is None
    assert any(MEMORY_SOL in w for w in r.warnings) and any(TENSOR_PIPE in w for w in r.warnings)


def test_floors_of_the_five_problems_by_hand() -> None:
    spec = lambda n: RunSpec(problem_path=resolve_problem(n).problem_path, shapes="full", device="cuda")  # noqa: E731
    # RMSNorm: x read and written once, bf16: 2 * 112*64*512*512 * 2 bytes; no matmul FLOPs.
    assert count_work(spec("36")) == Work(bytes_moved=2 * 112 * 64 * 512 * 512 * 2, flops=0)
    # Matvec: A and B read, C written; 2*M*K FLOPs.
    assert count_work(spec("04")) == Work(bytes_moved=(2048 * 1048576 + 1048576 + 2048) * 2, flops=2 * 2048 * 1048576)
    # Max pool: out (16, 32, 62, 62, 62): (128 + 2 - 3*2 - 1) // 2 + 1 = 62 per side.
    assert count_work(spec("43")).bytes_moved == (16 * 32 * 128**3 + 16 * 32 * 62**3) * 2
    # Transposed conv: every input element meets every weight: 2 * N * Cin * Cout * k^3 * D*H*W.
    assert count_work(spec("77")).flops == 2 * 16 * 32 * 64 * 27 * 16 * 32 * 32
    # Depthwise conv: out (16, 64, 510, 510), 9 taps, 2 FLOPs each; weights (64, 1, 3, 3).
    work = count_work(spec("82"))
    assert work.flops == 2 * 16 * 64 * 510 * 510 * 9
    assert work.bytes_moved == (16 * 64 * 512 * 512 + 64 * 9 + 16 * 64 * 510 * 510) * 2


def test_floor_takes_the_larger_of_memory_and_compute_time() -> None:
    # 7.5 GB at 3350 GB/s = 2.2437 ms; no FLOPs.
    f = floor(Work(bytes_moved=7_516_192_768, flops=0), dram_gbps=3350, tflops=989, peaks_source="datasheet")
    assert f.floor_ms == pytest.approx(7_516_192_768 / 3350e9 * 1e3) and f.bound == "memory"
    # 29 GFLOP at 989 TFLOP/s = 0.0293 ms, 0.30 GB at 3350 GB/s = 0.0903 ms: still memory.
    g = floor(Work(bytes_moved=302_430_208, flops=28_991_029_248), dram_gbps=3350, tflops=989, peaks_source="x")
    assert g.bound == "memory" and g.compute_ms == pytest.approx(0.029313, rel=1e-4)
    h = floor(Work(bytes_moved=1000, flops=10**12), dram_gbps=3350, tflops=989, peaks_source="x")
    assert h.bound == "compute" and h.floor_ms == pytest.approx(1 / 989 * 1e3)


def test_percent_of_floor_and_suspects() -> None:
    assert pct_of_floor(1.0, 2.0) == 50.0
    assert not is_suspect(1.0, 0.95) and is_suspect(1.0, 0.5)

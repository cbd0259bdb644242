"""Which of a PyTorch baseline's operators run a vendor library (workers/harness/library_ops.py)."""

from __future__ import annotations

import pytest
import torch

from workers.harness.library_ops import library_ops, library_ops_of


def test_gemms_convolutions_and_attention_are_named_with_their_library_and_the_rest_is_not() -> None:
    names = ["aten::addmm", "aten::linear", "aten::t", "aten::gelu", "aten::addmm", "aten::cudnn_convolution",
             "aten::_scaled_dot_product_flash_attention", "aten::bmm", "aten::sum", "aten::mean",
             "aten::convolution", "triton_per_fused_logsumexp_2", "Torch-Compiled Region: 0/0", "mm"]  # fmt: skip
    assert library_ops(names) == ["_scaled_dot_product_flash_attention (an attention library)", "addmm (cuBLAS)",
                                  "bmm (cuBLAS)", "convolution (cuDNN)", "cudnn_convolution (cuDNN)"]  # fmt: skip
    assert library_ops(["aten::softmax", "aten::add", "aten::amax", "aten::mm_out_helper_zz"]) == []


def test_one_profiled_call_reads_a_models_gemm_and_not_its_pointwise_ops() -> None:
    gemm = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.GELU())
    pointwise = torch.nn.GELU()
    x = torch.randn(4, 16)
    calls = []
    with torch.no_grad():
        assert library_ops_of(lambda: calls.append(gemm(x))) == ["addmm (cuBLAS)"]
        assert library_ops_of(lambda: pointwise(x)) == []
    assert len(calls) == 1  # one call, no more


@pytest.mark.gpu
def test_a_gemm_baselines_timing_names_its_cublas_call_and_a_pointwise_ones_none(tmp_path) -> None:
    from beamsearch.records.schema import RunSpec
    from tests.conftest import DATA
    from workers.harness.timing import time_target

    found = {}
    for name in ("linear_relu_problem.py", "scale_rows_problem.py"):
        spec = RunSpec(problem_path=str(DATA / name), shapes="full", device="cuda")
        for target in ("eager", "compile"):
            result = time_target(spec, target, lock_dir=str(tmp_path))
            assert result.status == "ok", result.reason
            found[name, target] = result.library_ops
    assert found["linear_relu_problem.py", "eager"] == ["addmm (cuBLAS)"]
    assert found["linear_relu_problem.py", "compile"] in (["addmm (cuBLAS)"], ["mm (cuBLAS)"])
    assert found["scale_rows_problem.py", "eager"] == found["scale_rows_problem.py", "compile"] == []

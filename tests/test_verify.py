"""Every verification check, each caught by a deliberately bad kernel (CPU, Triton interpreter)."""

from __future__ import annotations

import pytest

from beamsearch.records.schema import RunSpec, Tolerance
from tests.conftest import DATA, KERNELS
from workers.harness.verify import verify_kernel
from workers.proposers.searcher import is_resource_failure

# kernel file -> (status, failing check or None, words the reason must contain)
BAD_KERNELS = {
    "wrong_values.py": ("incorrect", "values", "outside atol"),
    "unwritten.py": ("incorrect", "all_written", "never written"),
    "pointer_cache.py": ("incorrect", "values_after_inputs_changed", "inputs changed in place"),
    "torch_compute.py": ("incorrect", "pytorch_compute", "aten::mul"),
    "mutates_input.py": ("incorrect", "inputs_unchanged", "input 0 was modified"),
    "zeroes_weight.py": ("incorrect", "inputs_unchanged", "model value 'weight' was modified"),
    "nan_output.py": ("incorrect", "finite", "NaN/Inf"),
    "wrong_shape.py": ("incorrect", "output_structure", "shape"),
    "wrong_dtype.py": ("incorrect", "output_structure", "dtype"),
    "syntax_error.py": ("compile_failed", None, "SyntaxError"),
    "sys_exit_at_import.py": ("compile_failed", None, "SystemExit"),
    "unbindable.py": ("bind_failed", None, "'temperature'"),
    "crashes.py": ("crashed", None, "SIGSEGV"),
    "exits.py": ("crashed", None, "without writing a result"),
}


@pytest.mark.parametrize("name", sorted(BAD_KERNELS))
def test_bad_kernel_is_rejected_for_the_right_reason(name: str, scale_spec: RunSpec) -> None:
    status, check, words = BAD_KERNELS[name]
    verdict = verify_kernel(scale_spec, str(KERNELS / name))
    assert not verdict.passed
    assert verdict.status == status, verdict.reason
    assert words in verdict.reason
    if check is not None:
        failed = [c.name for c in verdict.checks if not c.passed]
        assert failed == [check]


@pytest.mark.slow
def test_hanging_kernel_times_out_and_the_caller_carries_on(scale_spec: RunSpec) -> None:
    verdict = verify_kernel(scale_spec, str(KERNELS / "hangs.py"), timeout_s=15)
    assert verdict.status == "timeout" and not verdict.passed
    assert 15 <= verdict.duration_s < 30


@pytest.mark.slow
@pytest.mark.parametrize(("name", "status"), [("detaches_and_hangs.py", "timeout"), ("detaches_and_exits.py", "crashed")])
def test_a_process_a_kernel_detached_ends_with_its_verification(name: str, status: str, scale_spec: RunSpec,
                                                                 detached_left) -> None:  # fmt: skip
    """A process a kernel started outside its process group and session (a double fork) is ended with the
    verification: adopted by the runner while it lives, by the judge once the kernel ended the runner
    (``child_process.adopt_orphans``)."""
    verdict = verify_kernel(scale_spec, str(KERNELS / name), timeout_s=15)
    assert verdict.status == status, verdict.reason
    assert detached_left() == [], "the kernel's detached process outlived its verification"


@pytest.mark.slow
def test_a_first_call_past_its_limit_is_a_timeout_that_says_it_was_the_compile(scale_spec: RunSpec) -> None:
    """A tuner's variant whose first call (its compile) takes far longer than a compile should is stopped
    then, not at the child's timeout; without the limit the same kernel is slow once and passes."""
    verdict = verify_kernel(scale_spec, str(KERNELS / "slow_first_call.py"), timeout_s=120, first_call_limit_s=3)
    assert verdict.status == "timeout" and "compile time limit" in verdict.reason, verdict.reason
    assert verdict.duration_s < 30
    assert is_resource_failure(f"{verdict.status}: {verdict.reason}")  # the searcher rules out larger tiles


def test_invalid_triton_kernel_is_a_runtime_error_under_the_interpreter(scale_spec: RunSpec) -> None:
    # On a GPU this is a CompilationError, compile_failed (tests/test_verify_gpu.py); the interpreter
    # raises when it reaches tl.arange.
    verdict = verify_kernel(scale_spec, str(KERNELS / "triton_error.py"))
    assert verdict.status == "runtime_error" and "power of 2" in verdict.reason


def test_fewer_than_three_seeds_is_refused(scale_spec: RunSpec) -> None:
    with pytest.raises(ValueError, match="at least 3 distinct seeds"):
        verify_kernel(scale_spec, str(KERNELS / "good.py"), seeds=[0, 0, 1])


@pytest.mark.parametrize("name", ["good.py", "kernelagent_varargs.py"])
def test_good_kernels_pass_every_check(name: str, scale_spec: RunSpec) -> None:
    verdict = verify_kernel(scale_spec, str(KERNELS / name))
    assert verdict.passed, verdict.reason
    names = {c.name for c in verdict.checks}
    assert {"harness_intact", "background_work", "pytorch_compute", "host_compute", "output_structure",
            "all_written", "finite", "values", "inputs_unchanged", "values_after_inputs_changed",
            "values_after_small_change", "fresh_output"} <= names  # fmt: skip
    assert verdict.seeds == [0, 1, 2]
    # bf16 rounding, also of the small-change call's few large values (about 4.5 here)
    assert 0 < verdict.max_abs_err < 0.05


def test_missing_kernel_file_is_a_clear_failure(scale_spec: RunSpec) -> None:
    verdict = verify_kernel(scale_spec, str(KERNELS / "does_not_exist.py"))
    assert verdict.status == "compile_failed" and "does not exist" in verdict.reason


def test_tolerance_is_configurable(scale_spec: RunSpec) -> None:
    strict = scale_spec.model_copy(update={"tolerance": Tolerance(atol=1e-7, rtol=1e-7)})
    verdict = verify_kernel(strict, str(KERNELS / "good.py"))
    assert verdict.status == "incorrect" and "values" in verdict.reason and verdict.tolerance == strict.tolerance


def test_a_kernel_less_accurate_than_pytorch_is_told_so(scale_spec: RunSpec) -> None:
    verdict = verify_kernel(scale_spec, str(KERNELS / "wrong_values.py"))
    assert "PyTorch's own bf16 forward keeps to it" in verdict.reason, verdict.reason


def test_a_rule_pytorch_misses_too_is_named_and_can_be_loosened(scale_spec: RunSpec) -> None:
    """A kernel exactly as accurate as PyTorch's bf16 forward, on a problem where that misses bf16's default
    rule: the reason says so and how to loosen the rule; loosened, the kernel passes every check."""
    spec = scale_spec.model_copy(update={"problem_path": str(DATA / "cancel_problem.py")})
    kernel = str(KERNELS / "cancel_as_bf16.py")
    verdict = verify_kernel(spec, kernel)
    assert verdict.status == "incorrect" and "misses this rule too" in verdict.reason, verdict.reason
    assert "but is within atol 0.02 + rtol 0.02" in verdict.reason  # 2x the rule: |err| <= 1/32 where ref < 2
    loose = verify_kernel(spec.model_copy(update={"tolerance": Tolerance(atol=0.02, rtol=0.02)}), kernel)
    assert loose.passed, loose.reason


def test_pytorch_far_off_is_told_to_compute_in_fp32_not_to_loosen(scale_spec: RunSpec, tmp_path) -> None:
    """Where PyTorch's own bf16 result is far off (the + 16 rounded away beside 4096 x: an error of 16, about
    90x a rule of 0.01 + 0.01 x 16), the note does not offer a rule that would take it."""
    problem = tmp_path / "problem.py"
    problem.write_text((DATA / "cancel_problem.py").read_text().replace("(x + 8) - 8", "(x * 4096 + 16) - x * 4096"))
    spec = scale_spec.model_copy(update={"problem_path": str(problem)})
    verdict = verify_kernel(spec, str(KERNELS / "cancel_as_bf16.py"))  # fails there: it computes (x + 8) - 8
    assert verdict.status == "incorrect" and "far off, so compute in fp32" in verdict.reason, verdict.reason


def test_cuda_without_gpu_is_a_problem_error(scale_spec: RunSpec) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    verdict = verify_kernel(scale_spec.model_copy(update={"device": "cuda"}), str(KERNELS / "good.py"))
    assert verdict.status == "problem_error" and "no CUDA GPU" in verdict.reason

"""The verification checks on a real GPU (CUDA faults differ from the interpreter's). Marker: gpu."""

from __future__ import annotations

import pytest

from beamsearch.schema import RunSpec, TimingKnobs
from tests.conftest import DATA, KERNELS
from tests.test_verify import BAD_KERNELS
from workers.timing import time_target
from workers.verify import verify_kernel

pytestmark = pytest.mark.gpu


@pytest.fixture
def gpu_spec() -> RunSpec:
    return RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="full", device="cuda", dtype="bf16")


@pytest.mark.parametrize("name", sorted(BAD_KERNELS))
def test_bad_kernel_is_rejected_on_gpu(name: str, gpu_spec: RunSpec) -> None:
    status, check, words = BAD_KERNELS[name]
    verdict = verify_kernel(gpu_spec, str(KERNELS / name))
    assert verdict.status == status and words in verdict.reason, verdict.reason
    if check is not None:
        assert [c.name for c in verdict.checks if not c.passed] == [check]


def test_illegal_memory_access_is_a_failed_verdict(gpu_spec: RunSpec) -> None:
    verdict = verify_kernel(gpu_spec, str(KERNELS / "illegal_address.py"))
    assert verdict.status in ("runtime_error", "crashed") and not verdict.passed
    assert "illegal memory access" in verdict.reason or "CUDA" in verdict.reason, verdict.reason


def test_invalid_triton_kernel_is_compile_failed(gpu_spec: RunSpec) -> None:
    verdict = verify_kernel(gpu_spec, str(KERNELS / "triton_error.py"))
    assert verdict.status == "compile_failed", verdict.reason


def test_hang_is_killed_on_gpu(gpu_spec: RunSpec) -> None:
    assert verify_kernel(gpu_spec, str(KERNELS / "hangs.py"), timeout_s=20).status == "timeout"


@pytest.mark.parametrize("name", ["good.py", "kernelagent_varargs.py"])
def test_good_kernels_pass_and_time_on_gpu(name: str, gpu_spec: RunSpec) -> None:
    """Both timing paths: the timing child, and the runner after the checks (what a search uses)."""
    verdict = verify_kernel(gpu_spec, str(KERNELS / name), timing=TimingKnobs())
    assert verdict.passed, verdict.reason
    child = time_target(gpu_spec, str(KERNELS / name))
    for timing in (child, verdict.timing):
        assert timing.status == "ok" and timing.timing.on_gpu and timing.timing.n >= 10, timing.reason
    assert {c.name for c in verdict.timing.checks} == {c.name for c in child.checks}
    assert all(c.passed for c in verdict.timing.checks)
    assert verdict.timing.compiled_hash is not None and verdict.timing.compiled_hash == child.compiled_hash
    assert verdict.timing.lock_wait_s >= 0 and "measured" in verdict.timing.steps_s


def test_a_kernel_that_dies_when_timed_fails_its_timing_on_gpu(gpu_spec: RunSpec) -> None:
    verdict = verify_kernel(gpu_spec, str(KERNELS / "exits_when_timed.py"), timing=TimingKnobs())
    assert verdict.passed and verdict.timing.status == "crashed", (verdict.reason, verdict.timing)

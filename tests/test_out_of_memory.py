"""Running out of GPU memory beside other workers is not the kernel's fault: the verification or timing
is run again once with the GPU to itself (every verification slot, and the measurement lock in the child)."""

from __future__ import annotations

import threading

import pytest
from filelock import FileLock, Timeout

from beamsearch.schema import RunSpec, TimingResult, Verdict
from tests.conftest import KERNELS
from workers import task
from workers.gpu_lock import gpu_lock
from workers.timing import time_target
from workers.verify import verify_kernel

OOM = "problem_error: verification could not run: OutOfMemoryError: CUDA out of memory. Tried to allocate 7.00 GiB."
SLOTS = 2


def _verdict(passed: bool, reason: str) -> Verdict:
    return Verdict(passed=passed, status="ok" if passed else "problem_error", reason=reason, kernel_path="k.py")


def _slots_free(lock_dir) -> list[bool]:
    """Whether each verification slot of the (fake) GPU can be taken right now, from another thread."""
    free = []
    for lock_file in sorted(lock_dir.glob("verify-*.lock")):
        lock = FileLock(str(lock_file), thread_local=False, is_singleton=False)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            free.append(False)
            continue
        lock.release()
        free.append(True)
    return free


@pytest.fixture
def cuda_spec(monkeypatch: pytest.MonkeyPatch, tmp_path) -> RunSpec:
    monkeypatch.setenv("BEAMSEARCH_LOCK_DIR", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    return RunSpec(problem_path="/p/problem.py", shapes="full", device="cuda", dtype="bf16")


def test_an_out_of_memory_verification_is_run_again_alone(monkeypatch, cuda_spec, tmp_path) -> None:
    calls: list[tuple[bool, list[bool]]] = []

    def fake_verify(spec, path, *, seeds, exclusive=False):
        seen: list[bool] = []
        t = threading.Thread(target=lambda: seen.extend(_slots_free(tmp_path)))
        t.start(), t.join()
        calls.append((exclusive, seen))
        return _verdict(True, "all checks passed") if exclusive else _verdict(False, OOM)

    monkeypatch.setattr(task, "verify_kernel", fake_verify)
    verdict = task.verify_candidate(cuda_spec, "k.py", [1, 2, 3], SLOTS)
    assert verdict.passed and verdict.retried_alone
    first, second = calls
    assert first[0] is False and first[1].count(False) == 1  # one slot of two, the other free
    assert second[0] is True and second[1] == [False] * SLOTS  # every slot held for the retry


@pytest.mark.parametrize("reason", ["incorrect: values: 12 of 64 output elements outside atol", OOM])
def test_other_failures_and_cpu_runs_are_not_retried(monkeypatch, cuda_spec, reason: str) -> None:
    calls = []
    monkeypatch.setattr(task, "verify_kernel", lambda *a, **k: calls.append(k) or _verdict(False, reason))
    spec = cuda_spec if reason != OOM else cuda_spec.model_copy(update={"device": "cpu"})
    verdict = task.verify_candidate(spec, "k.py", [1, 2, 3], SLOTS)
    assert not verdict.passed and not verdict.retried_alone and len(calls) == 1


def test_an_out_of_memory_timing_is_run_again_alone(monkeypatch, cuda_spec) -> None:
    calls = []

    def fake_time(spec, path, *, seed, exclusive=False):
        calls.append(exclusive)
        if exclusive:
            return TimingResult(target=path, status="ok")
        return TimingResult(target=path, status="failed", reason="OutOfMemoryError: CUDA out of memory.")

    monkeypatch.setattr(task, "time_target", fake_time)
    assert task.time_candidate(cuda_spec, "k.py", 1, SLOTS).status == "ok"
    assert calls == [False, True]


@pytest.mark.parametrize("stage", ["verify", "time"])
def test_an_exclusive_child_waits_for_the_measurement_lock(stage: str, scale_spec: RunSpec, monkeypatch, tmp_path) -> None:
    """The child itself takes the lock (the worker never opens a CUDA context): while another process
    holds it, nothing runs; once it is free, the same job passes."""
    monkeypatch.setenv("BEAMSEARCH_LOCK_DIR", str(tmp_path))
    kernel = str(KERNELS / "good.py")

    def run(timeout_s: float):
        if stage == "verify":
            return verify_kernel(scale_spec, kernel, timeout_s=timeout_s, exclusive=True)
        return time_target(scale_spec, kernel, timeout_s=timeout_s, exclusive=True)

    with gpu_lock(scale_spec.device, str(tmp_path)):
        blocked = run(timeout_s=6)
    assert blocked.status == "timeout", blocked.reason
    done = run(timeout_s=120)
    assert done.status == "ok", done.reason

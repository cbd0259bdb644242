"""Running out of GPU memory beside other workers is not the kernel's fault: the verification or timing
is run again once with the GPU to itself (its memory lock alone, and the measurement lock in the child).
So is a timing check that other workers' GPU work can fail."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from beamsearch.records.schema import SEARCH_TIMING, CheckResult, RunSpec, TimingResult, Verdict
from tests.conftest import KERNELS
from workers.actor import task
from workers.harness.gpu_lock import gpu_lock, gpu_memory
from workers.harness.timing import time_target
from workers.harness.verify import verify_kernel

OOM = "problem_error: verification could not run: OutOfMemoryError: CUDA out of memory. Tried to allocate 7.00 GiB."
SLOTS = 2


def _verdict(passed: bool, reason: str) -> Verdict:
    return Verdict(passed=passed, status="ok" if passed else "problem_error", reason=reason, kernel_path="k.py")


def _memory_state(lock_dir, lock: str = "memory") -> str:
    """From another process: whether this GPU's memory lock (or its gate) is free, shared, or held alone."""
    probe = (
        "import fcntl, glob, sys\n"
        "f = open(glob.glob(sys.argv[1] + '/' + sys.argv[2] + '-*.lock')[0])\n"
        "for mode, name in ((fcntl.LOCK_EX, 'free'), (fcntl.LOCK_SH, 'shared')):\n"
        "    try:\n"
        "        fcntl.flock(f, mode | fcntl.LOCK_NB); print(name); sys.exit()\n"
        "    except BlockingIOError:\n"
        "        pass\n"
        "print('alone')\n"
    )
    return subprocess.run([sys.executable, "-c", probe, str(lock_dir), lock], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


@pytest.fixture
def cuda_spec(monkeypatch: pytest.MonkeyPatch, tmp_path) -> RunSpec:
    monkeypatch.setenv("BEAMSEARCH_LOCK_DIR", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    return RunSpec(problem_path="/p/problem.py", shapes="full", device="cuda", dtype="bf16")


def test_an_out_of_memory_verification_is_run_again_alone(monkeypatch, cuda_spec, tmp_path) -> None:
    calls: list[tuple[bool, str]] = []

    def fake_verify(spec, path, *, seeds, exclusive=False, timing=None, slots=0, first_call_limit_s=None, session=None,
                    known_compiled=None):  # fmt: skip
        assert timing is not None and timing.seed == 1  # a pass is timed on the first seed's inputs
        assert slots == (0 if exclusive else SLOTS)  # alone, no verification place is needed
        assert session is None or not exclusive  # the retry alone runs in processes of its own
        calls.append((exclusive, _memory_state(tmp_path)))
        return _verdict(True, "all checks passed") if exclusive else _verdict(False, OOM)

    monkeypatch.setattr(task, "verify_kernel", fake_verify)
    verdict = task.verify_candidate(cuda_spec, "k.py", [1, 2, 3], SLOTS)
    assert verdict.passed and verdict.retried_alone
    assert calls == [(False, "shared"), (True, "alone")]  # beside other jobs, then with the GPU to itself
    assert _memory_state(tmp_path) == "free"


@pytest.mark.parametrize("reason", ["incorrect: values: 12 of 64 output elements outside atol", OOM])
def test_other_failures_and_cpu_runs_are_not_retried(monkeypatch, cuda_spec, reason: str) -> None:
    calls = []
    monkeypatch.setattr(task, "verify_kernel", lambda *a, **k: calls.append(k) or _verdict(False, reason))
    spec = cuda_spec if reason != OOM else cuda_spec.model_copy(update={"device": "cpu"})
    verdict = task.verify_candidate(spec, "k.py", [1, 2, 3], SLOTS)
    assert not verdict.passed and not verdict.retried_alone and len(calls) == 1


def test_an_out_of_memory_timing_is_run_again_alone(monkeypatch, cuda_spec, tmp_path) -> None:
    """The timing taken after the verification ran out of memory: the timing child takes it again alone,
    with the same screen and the search's time budgets."""
    calls = []

    def fake_time(spec, path, *, seed, exclusive=False, screen_above_ms=None, **budget):
        assert budget == SEARCH_TIMING
        calls.append((exclusive, screen_above_ms, _memory_state(tmp_path)))
        return TimingResult(target=path, status="ok")

    monkeypatch.setattr(task, "time_target", fake_time)
    oom = TimingResult(target="k.py", status="failed", reason="OutOfMemoryError: CUDA out of memory.")
    passed = _verdict(True, "all checks passed")
    assert task.time_candidate(cuda_spec, "k.py", 1, passed.model_copy(update={"timing": oom}), 7.5).status == "ok"
    assert calls == [(True, 7.5, "alone")]
    ok = TimingResult(target="k.py", status="ok")
    assert task.time_candidate(cuda_spec, "k.py", 1, passed.model_copy(update={"timing": ok})) == ok
    assert len(calls) == 1  # a timing that did not run out of memory is the one the verification took


def test_a_job_alone_waits_for_running_jobs_and_holds_back_new_ones(cuda_spec, tmp_path) -> None:
    """Readers-writer: jobs share the memory; the rerun alone waits for those running, and a job that
    comes after it waits for it (the gate), even while the first job still runs."""
    order: list[str] = []
    first_in, first_out = threading.Event(), threading.Event()

    def job(name: str, alone: bool, hold: threading.Event | None = None, held: threading.Event | None = None):
        with gpu_memory(cuda_spec.device, alone=alone):
            order.append(f"{name} in")
            if held:
                held.set()
            if hold:
                hold.wait(10)
            order.append(f"{name} out")

    first = threading.Thread(target=job, args=("first", False, first_out, first_in), daemon=True)
    first.start()
    first_in.wait(10)
    rerun = threading.Thread(target=job, args=("rerun", True), daemon=True)  # daemons: a deadlock fails, not hangs
    rerun.start()
    deadline = time.monotonic() + 10
    while _memory_state(tmp_path, "gate-memory") != "alone" and time.monotonic() < deadline:
        time.sleep(0.05)  # until the rerun holds the gate, waiting for the first job
    late = threading.Thread(target=job, args=("late", False), daemon=True)
    late.start()
    time.sleep(0.5)  # a chance for the late job to slip in, which it must not take
    assert order == ["first in"]  # neither the rerun nor the late job got in beside the first
    first_out.set()
    for t in (first, rerun, late):
        t.join(10)
    assert order == ["first in", "first out", "rerun in", "rerun out", "late in", "late out"]


@pytest.mark.slow
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


def _failed_timing(*failed_checks: str) -> TimingResult:
    checks = [CheckResult(name="harness_intact", passed=True)]
    checks += [CheckResult(name=name, passed=False, detail="d") for name in failed_checks]
    return TimingResult(target="k.py", status="failed", reason=f"{failed_checks[0]}: d", checks=checks)


def test_a_timing_failing_a_check_other_jobs_can_fail_is_taken_again_alone(monkeypatch, cuda_spec, tmp_path) -> None:
    """Other workers' verifications share the GPU while a candidate is timed: their kernels can make the
    events and the host clock disagree, or delay the device-wide end. Such a failure is retried alone,
    and the second timing counts; a wrong answer after the timed calls is the kernel's own and is not."""
    calls = []

    def fake_time(spec, path, *, seed, exclusive=False, screen_above_ms=None, **budget):
        calls.append((exclusive, screen_above_ms, _memory_state(tmp_path)))
        return TimingResult(target=path, status="ok")

    monkeypatch.setattr(task, "time_target", fake_time)
    passed = _verdict(True, "all checks passed")
    for checks in (("current_stream",), ("clocks_agree",)):
        first = _failed_timing(*checks)
        again = task.time_candidate(cuda_spec, "k.py", 1, passed.model_copy(update={"timing": first}), 6.0)
        assert again.status == "ok" and again.retried_alone_after == f"failed: {checks[0]}: d"
    assert calls == [(True, 6.0, "alone")] * 2
    for checks in (("output_after_timing",), ("current_stream", "output_after_timing")):
        first = _failed_timing(*checks)
        assert task.time_candidate(cuda_spec, "k.py", 1, passed.model_copy(update={"timing": first})) == first
    cpu = cuda_spec.model_copy(update={"device": "cpu"})
    first = _failed_timing("clocks_agree")
    assert task.time_candidate(cpu, "k.py", 1, passed.model_copy(update={"timing": first})) == first
    assert len(calls) == 2

"""Timing in a child process, or in the verified kernel's own after its checks; labelled CPU times;
the per-device lock."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import torch

from beamsearch.schema import DEFAULT_TOLERANCES, RunSpec, TimingKnobs
from tests.conftest import KERNELS
from workers import timed_outputs
from workers.clock import clock_disagreement, measure, timing_checks
from workers.gpu_lock import device_key, gpu_lock
from workers.problem_instance import instantiate, load_problem_module
from workers.timed_outputs import NUDGED_FRACTION, InputNudger, Kept, KeptOutputs, changed_inputs, wrong_kept
from workers.timing import time_target
from workers.verify import verify_kernel


def test_kernel_and_eager_are_timed_the_same_way_and_labelled_cpu(scale_spec: RunSpec, tmp_path) -> None:
    kernel = time_target(scale_spec, str(KERNELS / "good.py"), lock_dir=str(tmp_path))
    eager = time_target(scale_spec, "eager", lock_dir=str(tmp_path))
    for r in (kernel, eager):
        assert r.status == "ok", r.reason
        t = r.timing
        assert not t.on_gpu and "CPU" in t.method and t.device_name == "cpu"
        assert t.n >= 3 and t.min_ms <= t.median_ms and t.std_ms >= 0 and t.dtype == "bf16"
    assert kernel.timing.method == eager.timing.method
    # A kernel file is checked around its timing; the built-in targets are not.
    assert {c.name for c in kernel.checks} == {"harness_intact", "background_work", "timed_outputs"}
    assert all(c.passed for c in kernel.checks) and not eager.checks
    assert kernel.checked_reps and not eager.checked_reps
    assert kernel.compiled_hash is None  # the interpreter compiles nothing: candidates differ by source alone


def test_a_verified_kernel_is_timed_in_its_process_the_way_the_timing_child_times(scale_spec: RunSpec, tmp_path) -> None:
    good = str(KERNELS / "good.py")
    verdict = verify_kernel(scale_spec, good, timing=TimingKnobs(lock_dir=str(tmp_path)))
    child = time_target(scale_spec, good, lock_dir=str(tmp_path))
    assert verdict.passed, verdict.reason
    timing = verdict.timing
    assert timing is not None and timing.status == "ok", timing
    assert timing.target == verdict.kernel_path and "timed" in verdict.steps_s
    assert timing.timing.method == child.timing.method and timing.timing.n >= 3 and not timing.timing.on_gpu
    assert {c.name for c in timing.checks} == {c.name for c in child.checks}  # the same checks, all passed
    assert all(c.passed for c in timing.checks) and timing.checked_reps
    rejected = verify_kernel(scale_spec, str(KERNELS / "wrong_values.py"), timing=TimingKnobs())
    assert not rejected.passed and rejected.timing is None  # only a kernel that passed is timed


def test_a_kernel_that_dies_when_timed_fails_its_timing_not_its_verdict(scale_spec: RunSpec) -> None:
    verdict = verify_kernel(scale_spec, str(KERNELS / "exits_when_timed.py"), timing=TimingKnobs())
    assert verdict.passed, verdict.reason
    assert verdict.timing.status == "crashed" and verdict.timing.timing is None
    assert "exited with status 0" in verdict.timing.reason, verdict.timing.reason


def test_a_kernel_that_hangs_when_timed_is_killed_holding_the_lock_and_its_timing_is_a_timeout(
    scale_spec: RunSpec, tmp_path
) -> None:
    knobs = TimingKnobs(lock_dir=str(tmp_path), warmup_ms=20, rep_ms=50, min_reps=3, max_reps=20)
    start = time.monotonic()
    verdict = verify_kernel(scale_spec, str(KERNELS / "hangs_when_timed.py"), timing=knobs)
    took_s = time.monotonic() - start
    assert verdict.passed, verdict.reason
    timing = verdict.timing
    assert timing.status == "timeout" and timing.timing is None, timing
    assert "kernel_function hung (timed)" in timing.reason and "process was killed" in timing.reason, timing.reason
    assert "locked" in timing.steps_s and "measured" not in timing.steps_s  # it hung holding the lock
    assert took_s < 100, f"{took_s:.0f} s: the hang bound, not the child's 300 s timeout, should end it"
    with gpu_lock(scale_spec.device, str(tmp_path)) as waited:
        assert waited < 1.0  # given back


def test_clock_disagreement_flags_events_that_miss_work() -> None:
    assert clock_disagreement(event_ms=1.0, host_batch_ms=1.1, host_enqueue_ms=0.02) is None  # GPU-bound
    assert clock_disagreement(event_ms=0.005, host_batch_ms=0.03, host_enqueue_ms=0.025) is None  # launch-bound
    assert clock_disagreement(event_ms=2.0, host_batch_ms=1.2, host_enqueue_ms=0.02) is None  # warm L2 in a batch
    why = clock_disagreement(event_ms=0.001, host_batch_ms=1.0, host_enqueue_ms=0.02)  # faked events
    assert why is not None and "missed work" in why and "1 ms per call" in why
    # Work started after the end event (a thread, a late launch): the host waits for it, the events do not.
    assert clock_disagreement(event_ms=0.4, host_batch_ms=0.9, host_enqueue_ms=0.05) is not None


def test_a_timing_stops_after_its_first_repetitions_when_slower_than_the_screen() -> None:
    def call() -> None:
        time.sleep(0.004)

    budget = dict(dtype="bf16", shapes="small", warmup_ms=0, rep_ms=200, min_reps=10, max_reps=1000)
    full = measure(call, "cpu", **budget, screen_above_ms=1000.0)  # faster than the screen: timed in full
    stopped = measure(call, "cpu", **budget, screen_above_ms=1.0)
    assert full.screened_above_ms is None and full.n >= 20
    assert stopped.screened_above_ms == 1.0 and stopped.n == 3 and stopped.median_ms > 1.0  # the CPU's minimum
    assert measure(call, "cpu", **budget).screened_above_ms is None
    # The judge accepts a stop only above the screen it asked for.
    assert [(c.name, c.passed) for c in timing_checks(stopped, "cpu", 1.0)] == [("stopped_early_when_slower", True)]
    for asked in (None, 0.5, 100.0):
        assert [(c.name, c.passed) for c in timing_checks(stopped, "cpu", asked)] == [("stopped_early_when_slower", False)]
    assert timing_checks(full, "cpu", 1000.0) == []
    # From the kernel's process, a GPU timing must say it ran on the GPU and carry the host clock's
    # cross-check, unless it stopped early.
    assert [(c.name, c.passed) for c in timing_checks(full, "cuda")] == [("timed_on_the_gpu", False)]
    gpu = full.model_copy(update={"on_gpu": True, "host_enqueue_ms": 0.01, "host_batch_ms": full.median_ms})
    assert all(c.passed for c in timing_checks(gpu, "cuda"))
    unchecked = gpu.model_copy(update={"host_batch_ms": None})
    assert ("host_clock_reported", False) in [(c.name, c.passed) for c in timing_checks(unchecked, "cuda")]
    screened = unchecked.model_copy(update={"screened_above_ms": 1.0})
    assert all(c.passed for c in timing_checks(screened, "cuda", 1.0))


def test_a_candidate_slower_than_the_screen_is_timed_briefly_in_its_process(scale_spec: RunSpec, tmp_path) -> None:
    knobs = TimingKnobs(lock_dir=str(tmp_path), rep_ms=60_000.0, screen_above_ms=1e-6)  # a budget it never spends
    verdict = verify_kernel(scale_spec, str(KERNELS / "good.py"), timing=knobs)
    assert verdict.passed, verdict.reason
    timing = verdict.timing
    assert timing.status == "ok", timing.reason
    assert timing.timing.screened_above_ms == 1e-6 and timing.timing.n == 3
    assert ("stopped_early_when_slower", True) in [(c.name, c.passed) for c in timing.checks]


def test_inputs_change_between_repetitions_and_only_the_judge_knows_how() -> None:
    x = torch.rand(4096)
    pristine = x.clone()
    seeds: list[int] = []
    nudge = InputNudger([x, 3], announce=seeds.append)
    seen = {x.numpy().tobytes()}
    for i in range(5):
        before = x.clone()
        nudge()
        changed = int((x != before).sum())
        assert 0.5 * NUDGED_FRACTION * x.numel() < changed <= NUDGED_FRACTION * x.numel()  # a fraction, not a few
        assert set(x.tolist()) <= set(pristine.tolist())  # the input's own values: its domain is kept
        assert len(seeds) == nudge.count == i + 1
        assert torch.equal(changed_inputs([pristine, 3], seeds)[0], x)  # what the judge rebuilds
        seen.add(x.numpy().tobytes())
    assert len(seen) == 6  # no two repetitions saw the same input
    # Nothing of a change stays with the nudger, in the kernel's process: no seed, no places, no old values.
    assert set(vars(nudge)) == {"inputs", "announce", "count"}


def test_an_earlier_answer_is_wrong_after_a_change_even_for_a_max_pool_or_a_row_max() -> None:
    """A handful of changed elements can leave every max-pool window's maximum where it was; a fraction
    of them changes most windows, and enough rows' maxima that a stale row max is caught."""
    torch.manual_seed(0)
    x = torch.randn(1, 1, 16, 32, 32)
    pool = torch.nn.functional.max_pool3d(x, 3, stride=2)
    rows = torch.randn(16, 4096)
    stale_rows, windows = 0, []
    for seed in range(40):
        changed = changed_inputs([x, rows], [seed])
        windows.append(float((torch.nn.functional.max_pool3d(changed[0], 3, stride=2) != pool).float().mean()))
        stale_rows += bool(torch.equal(changed[1].amax(dim=1), rows.amax(dim=1)))
    # Hundreds of the 1,575 windows change every time, and about 1.4 times the fraction changed on average.
    assert min(windows) > NUDGED_FRACTION / 2 and sum(windows) / len(windows) > NUDGED_FRACTION
    assert stale_rows <= 14  # about (1 - 1.5/16) ** 16 ~ 0.2 per repetition; four kept ones all stale: ~2e-3


@pytest.mark.gpu
def test_the_judge_rebuilds_a_repetitions_inputs_exactly_on_a_gpu() -> None:
    x = torch.randn(1 << 22, device="cuda", dtype=torch.bfloat16)
    pristine = x.clone()
    seeds: list[int] = []
    nudge = InputNudger([x], announce=seeds.append)
    for _ in range(3):
        nudge()
        assert torch.equal(changed_inputs([pristine], seeds)[0], x)  # bit for bit, as the judge needs


def test_the_judge_checks_each_kept_repetition_against_the_inputs_it_saw(scale_spec: RunSpec) -> None:
    instance = instantiate(load_problem_module(scale_spec), scale_spec, 0)
    pristine, model, tol = instance.inputs, instance.model, DEFAULT_TOLERANCES["bf16"]
    seeds = [11, 12, 13, 14]

    def answer(changes: int) -> torch.Tensor:  # an honest kernel's output after that many changes
        with torch.no_grad():
            return model(*changed_inputs(pristine, seeds[:changes])).to(torch.bfloat16)

    honest = [Kept(rep, rep + 1, [answer(rep + 1)], ["Tensor"]) for rep in range(3)]
    assert wrong_kept(honest, 3, seeds, pristine, model, scale_spec, tol) is None
    stale = [*honest[:2], Kept(2, 3, [answer(2)], ["Tensor"])]  # the answer one change before
    assert "timed repetition 3 of 3 (kept at random after it returned) gave a wrong answer" in (
        wrong_kept(stale, 3, seeds, pristine, model, scale_spec, tol) or "")
    assert "were not 3 of them" in (wrong_kept(honest[:2], 3, seeds, pristine, model, scale_spec, tol) or "")
    assert "announced" in (wrong_kept(honest, 3, seeds[:2], pristine, model, scale_spec, tol) or "")
    not_tensor = [*honest[:2], Kept(2, 3, [None], ["list"])]
    assert "is a list" in (wrong_kept(not_tensor, 3, seeds, pristine, model, scale_spec, tol) or "")


def test_every_timed_repetition_is_as_likely_to_be_kept_and_kept_outputs_are_copies(monkeypatch) -> None:
    monkeypatch.setattr(timed_outputs, "KEPT_BYTES", 3 * 8)  # room for three copies of two float32
    n, trials = 12, 600
    counts = [0] * n
    for _ in range(trials):
        kept = KeptOutputs(lambda: 5)
        out = torch.zeros(2)
        for i in range(n):
            out.fill_(i)  # one buffer reused by every call: the copies must not follow it
            kept.offer(out)
        assert len(kept.kept) == 3 and kept.offered == n
        assert all(float(k.outputs[0][0]) == k.rep and k.changes == 5 for k in kept.kept)
        for k in kept.kept:
            counts[k.rep] += 1
    expected = trials * 3 / n  # 150 each; the first and the last as likely as the rest
    assert all(0.6 * expected < c < 1.4 * expected for c in counts), counts


def test_a_failing_target_is_a_value_not_an_exception(scale_spec: RunSpec) -> None:
    result = time_target(scale_spec, str(KERNELS / "syntax_error.py"))
    assert result.status == "failed" and "SyntaxError" in result.reason and result.timing is None


def test_a_hanging_target_is_killed(scale_spec: RunSpec) -> None:
    result = time_target(scale_spec, str(KERNELS / "hangs.py"), timeout_s=10)
    assert result.status == "timeout"


def test_lock_is_shared_across_processes(tmp_path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from workers.gpu_lock import gpu_lock\n"
         f"with gpu_lock('cpu', {str(tmp_path)!r}):\n    print('held', flush=True); time.sleep(2)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    start = time.perf_counter()
    with gpu_lock("cpu", str(tmp_path)) as waited_s:
        pass
    holder.wait()
    assert waited_s > 1.0 and time.perf_counter() - start > 1.0
    assert device_key("cpu").startswith("cpu-")

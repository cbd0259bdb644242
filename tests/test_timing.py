"""Timing in a child process, or in the verified kernel's own after its checks; labelled CPU times;
the per-device lock."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest
import torch

from beamsearch.records.schema import (
    DEFAULT_TOLERANCES,
    RunSpec,
    TimingKnobs,
    TimingRequest,
    TimingResult,
    Tolerance,
    VerifyRequest,
)
from tests.conftest import DATA, KERNELS
from workers.harness import clock, timed_outputs
from workers.harness.clock import clock_disagreement, measure, timing_checks
from workers.harness.gpu_lock import device_key, gpu_lock
from workers.harness.problem_instance import instantiate, load_problem_module, reference_copies
from workers.harness.timed_outputs import (
    NUDGED_FRACTION,
    InputNudger,
    Kept,
    KeptOutputs,
    Sampled,
    SampledOutputs,
    choose_checked,
    nudge_,
    replay_,
    sample_positions,
    wrong_timed,
)
from workers.harness.timing import time_target
from workers.harness.verify import verify_kernel

ROOT = KERNELS.parents[2]


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


def test_the_timing_childs_checks_of_timed_outputs_take_the_runs_rule(scale_spec: RunSpec, tmp_path) -> None:
    """A kernel as accurate as PyTorch's bf16 forward on a problem where that misses bf16's default rule (the
    final re-timing's path): its timed outputs fail the default rule and pass the run's looser one."""
    spec = scale_spec.model_copy(update={"problem_path": str(DATA / "cancel_problem.py")})
    kernel = str(KERNELS / "cancel_as_bf16.py")
    default = time_target(spec, kernel, lock_dir=str(tmp_path))
    assert default.status == "failed" and [c.name for c in default.checks if not c.passed] == ["timed_outputs"]
    loose = time_target(spec.model_copy(update={"tolerance": Tolerance(atol=0.02, rtol=0.02)}), kernel, lock_dir=str(tmp_path))
    assert loose.status == "ok", loose.reason


@pytest.mark.slow
def test_a_kernel_that_dies_when_timed_fails_its_timing_not_its_verdict(scale_spec: RunSpec) -> None:
    verdict = verify_kernel(scale_spec, str(KERNELS / "exits_when_timed.py"), timing=TimingKnobs())
    assert verdict.passed, verdict.reason
    assert verdict.timing.status == "crashed" and verdict.timing.timing is None
    assert "exited with status 0" in verdict.timing.reason, verdict.timing.reason


@pytest.mark.slow
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


def changed_inputs(pristine: list[Any], seeds: list[int]) -> list[Any]:
    """The inputs a repetition saw, made as the runner makes them: copies changed with each seed in turn."""
    inputs = [t.clone() if isinstance(t, torch.Tensor) else t for t in pristine]
    for seed in seeds:
        nudge_(inputs, seed)
    return inputs


def judges_inputs(pristine: list[Any], seeds: list[int], spec: RunSpec) -> list[Any]:
    """The same inputs as the judge rebuilds them, in the reference's precision."""
    copies = reference_copies(pristine, spec)
    replay_(copies, seeds)
    return copies


def test_inputs_change_between_repetitions_and_only_the_judge_knows_how(scale_spec: RunSpec) -> None:
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
        assert torch.equal(judges_inputs([pristine, 3], seeds, scale_spec)[0], x)  # what the judge rebuilds
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
def test_the_judge_rebuilds_a_repetitions_inputs_exactly_on_a_gpu(scale_spec: RunSpec) -> None:
    x = torch.randn(1 << 22, device="cuda", dtype=torch.bfloat16)
    pristine = x.clone()
    seeds: list[int] = []
    nudge = InputNudger([x], announce=seeds.append)
    for _ in range(3):
        nudge()
        rebuilt = judges_inputs([pristine], seeds, scale_spec)[0]  # in float32, the reference's precision
        assert rebuilt.dtype == torch.float32 and torch.equal(rebuilt, x.float())  # bit for bit, as the judge needs


@pytest.mark.gpu
def test_a_clear_loser_stops_at_a_first_look_and_a_close_one_is_timed_in_full_on_a_gpu(monkeypatch) -> None:
    """Far above the screen: three repetitions, no sync margin, no warm-up, no host-clock batches. A first
    look that does not stop it (the factor set to 0, so a call under the screen is looked at first) takes
    the margin and the warm-up then, and the timing goes on in full."""

    def call() -> None:  # about a millisecond of the GPU's time
        torch.cuda._sleep(2_000_000)

    budget = dict(dtype="bf16", shapes="small", warmup_ms=10.0, rep_ms=40.0, min_reps=10, max_reps=100)
    call()
    ms = measure(call, "cuda", **budget).median_ms
    loser = measure(call, "cuda", **budget, screen_above_ms=ms / 4)
    assert loser.screened_above_ms == ms / 4 and loser.n == clock.FIRST_LOOK_REPS and loser.median_ms > ms / 2
    assert loser.sync_margin_ms is None and loser.warmup_n == 0 and loser.host_batch_ms is None
    assert all(c.passed for c in timing_checks(loser, "cuda", ms / 4))
    monkeypatch.setattr(clock, "CLEAR_LOSER", 0.0)
    close = measure(call, "cuda", **budget, screen_above_ms=ms * 4)
    assert close.screened_above_ms is None and close.n > clock.FIRST_LOOK_REPS and close.sync_margin_ms is not None
    assert close.warmup_n >= 1 and close.host_batch_ms is not None and close.device_end_n == 0


def judged(kept: list[Kept], samples: Sampled, checked: list[int], n_reps: int, seeds: list[int],
           pristine: list[Any], model: torch.nn.Module, spec: RunSpec) -> str | None:  # fmt: skip
    """The judge's check of a timing whose inputs were ``pristine`` before it began."""
    return wrong_timed(kept, samples, checked, n_reps, seeds, reference_copies(pristine, spec), lambda: pristine,
                       model, spec, DEFAULT_TOLERANCES[spec.dtype])  # fmt: skip


def _samples(outputs: list[torch.Tensor], changes: list[int]) -> Sampled:
    """What the runner hands back for these timed repetitions' outputs (one per repetition)."""
    counts = iter(changes)
    sampler = SampledOutputs(lambda: next(counts))
    for out in outputs:
        sampler.offer(out)
    return sampler.sampled()


@pytest.mark.gpu
def test_the_judge_redraws_the_sampled_positions_on_a_gpu() -> None:
    out = torch.randn(1 << 22, device="cuda", dtype=torch.bfloat16)
    sampler = SampledOutputs(lambda: 1)
    for _ in range(3):
        sampler.offer(out)
    sampled = sampler.sampled()
    timed_outputs._generators.clear()  # the judge's generator is its own
    for r in sampled.reps:
        positions = sample_positions(out.numel(), r.seed, out.device)
        assert torch.equal(sampled.values[0][r.rep], torch.take(out, positions))


def test_the_judge_checks_each_kept_repetition_against_the_inputs_it_saw(scale_spec: RunSpec) -> None:
    instance = instantiate(load_problem_module(scale_spec), scale_spec, 0)
    pristine, model = instance.inputs, instance.model
    seeds = [11, 12, 13, 14]

    def answer(changes: int) -> torch.Tensor:  # an honest kernel's output after that many changes
        with torch.no_grad():
            return model(*changed_inputs(pristine, seeds[:changes])).to(torch.bfloat16)

    def wrong(kept: list[Kept], seeds: list[int] = seeds) -> str:
        return judged(kept, samples, [], 3, seeds, pristine, model, scale_spec) or ""

    samples = _samples([answer(rep + 1) for rep in range(3)], [1, 2, 3])
    honest = [Kept(rep, rep + 1, [answer(rep + 1)], ["Tensor"]) for rep in range(3)]
    assert wrong(honest) == ""
    stale = [*honest[:2], Kept(2, 3, [answer(2)], ["Tensor"])]  # the answer one change before
    assert "timed repetition 3 of 3 (kept at random after it returned) gave a wrong answer" in wrong(stale)
    assert "were not 3 of them" in wrong(honest[:2])
    assert "announced" in wrong(honest, seeds[:2])
    not_tensor = [*honest[:2], Kept(2, 3, [None], ["list"])]
    assert "is a list" in wrong(not_tensor)


def test_the_judges_copies_are_in_the_references_precision(scale_spec: RunSpec) -> None:
    x, index = torch.rand(6, 5, dtype=torch.bfloat16), torch.arange(4)
    copies = reference_copies([x, index, 2.5], scale_spec)
    assert copies[0].dtype == torch.float32 and torch.equal(copies[0], x.float())
    assert torch.equal(copies[1], index) and copies[1].data_ptr() != index.data_ptr() and copies[2] == 2.5


class DoublesItsInput(torch.nn.Module):
    """A model that changes its input in place, as a problem's model may, directly or through an alias."""

    def __init__(self, through_detach: bool) -> None:
        super().__init__()
        self.through_detach = through_detach

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.detach() if self.through_detach else x).mul_(2)


@pytest.mark.parametrize("through_detach", [False, True])
def test_a_model_that_changes_its_inputs_in_place_leaves_the_judges_replay_right(
    scale_spec: RunSpec, through_detach: bool
) -> None:
    """The judge replays the changes on one set of copies; a model that doubled them in place would make
    every later repetition's reference wrong, and an honest kernel fail."""
    pristine = [torch.rand(16, 64, dtype=torch.bfloat16)]
    seeds = [21, 22, 23]
    answers = [(changed_inputs(pristine, seeds[: rep + 1])[0].float() * 2).to(torch.bfloat16) for rep in range(3)]
    kept = [Kept(rep, rep + 1, [answers[rep]], ["Tensor"]) for rep in range(3)]
    samples = _samples(answers, [1, 2, 3])
    model = DoublesItsInput(through_detach)
    made = []

    def again() -> list[Any]:
        made.append(1)
        return pristine

    copies = reference_copies(pristine, scale_spec)
    tol = DEFAULT_TOLERANCES["bf16"]
    assert wrong_timed(kept, samples, [0, 1, 2], 3, seeds, copies, again, model, scale_spec, tol) is None
    assert len(made) == 1  # made again once, then the model gets clones
    stale = [*kept[:2], Kept(2, 3, [answers[1]], ["Tensor"])]  # the answer one change before
    assert "timed repetition 3 of 3" in (judged(stale, samples, [], 3, seeds, pristine, model, scale_spec) or "")


def test_every_timed_repetition_is_sampled_at_places_the_judge_redraws(monkeypatch) -> None:
    monkeypatch.setattr(timed_outputs, "SAMPLED_ELEMENTS", 64)
    out = torch.zeros(10, 100)
    expected = []
    sampler = SampledOutputs(lambda: 7)
    for rep in range(5):
        out.copy_(torch.randn(10, 100))  # one buffer reused by every call: the samples must not follow it
        expected.append(out.clone())
        sampler.offer((out, torch.arange(5.0) * rep))  # a second output, smaller than a sample: all of it
    sampled = sampler.sampled()
    assert [r.rep for r in sampled.reps] == list(range(5)) and all(r.changes == 7 for r in sampled.reps)
    assert len({r.seed for r in sampled.reps}) == 5  # a fresh seed after every repetition
    assert tuple(sampled.values[0].shape) == (5, 64) and tuple(sampled.values[1].shape) == (5, 5)
    timed_outputs._generators.clear()  # the judge's generator is its own
    for r, whole in zip(sampled.reps, expected, strict=True):
        positions = sample_positions(whole.numel(), r.seed, whole.device)
        assert positions.unique().numel() > 50  # spread over the output, not one place
        assert torch.equal(sampled.values[0][r.rep], whole.view(-1)[positions])
        assert torch.equal(sampled.values[1][r.rep], torch.arange(5.0) * r.rep)
    assert choose_checked(3) == [0, 1, 2]
    chosen = choose_checked(100)
    assert len(set(chosen)) == timed_outputs.CHECKED_SAMPLES and all(0 <= r < 100 for r in chosen)


def test_samples_catch_a_kernel_that_cheats_on_every_other_repetition_the_one_copy_missed(
    scale_spec: RunSpec, monkeypatch
) -> None:
    """One full copy kept (outputs of gigabytes), an honest repetition's: the samples of the others,
    checked against the inputs each saw, catch the half-written ones."""
    monkeypatch.setattr(timed_outputs, "SAMPLED_ELEMENTS", 64)  # fewer than the output's 720 elements
    monkeypatch.setattr(timed_outputs, "KEPT_BYTES", 720 * 2)  # room for one copy of it
    instance = instantiate(load_problem_module(scale_spec), scale_spec, 0)
    pristine, model = instance.inputs, instance.model
    seeds = list(range(100, 108))

    def answer(changes: int, half: bool = False) -> torch.Tensor:
        with torch.no_grad():
            out = model(*changed_inputs(pristine, seeds[:changes])).to(torch.bfloat16)
        if half:
            out[:, out.shape[1] // 2 :] = 0  # the second half of each row never written
        return out

    copy = [Kept(0, 1, [answer(1)], ["Tensor"])]
    honest = _samples([answer(rep + 1) for rep in range(8)], list(range(1, 9)))
    cheat = _samples([answer(rep + 1, half=rep % 2 == 1) for rep in range(8)], list(range(1, 9)))
    every = choose_checked(8)
    assert judged(copy, honest, every, 8, seeds, pristine, model, scale_spec) is None
    why = judged(copy, cheat, every, 8, seeds, pristine, model, scale_spec) or ""
    assert why.startswith("timed repetition 2 of 8 (sampled after it returned) gave a wrong answer: output 0: ")
    assert "of 64 sampled elements wrong" in why
    assert judged(copy, cheat, [0, 2, 4], 8, seeds, pristine, model, scale_spec) is None  # not chosen
    # A sample checked against the wrong inputs fails too: each is compared with what its repetition saw.
    # Every element is sampled here: 64 drawn at random of 720 miss the few places one change moved about
    # once in 60 runs, and the check would pass by chance.
    monkeypatch.setattr(timed_outputs, "SAMPLED_ELEMENTS", 720)
    shifted = _samples([answer(rep + 1) for rep in range(8)], [1, *range(1, 8)])  # each after one change fewer
    assert judged(copy, shifted, [3], 8, seeds, pristine, model, scale_spec).startswith(
        "timed repetition 4 of 8 (sampled after it returned)")
    # A repetition that returned something else than the first did fails, whether chosen or not.
    odd = _samples([answer(1), answer(2)[:, :4], answer(3)], [1, 2, 3])
    assert "timed repetition 2 of 3 returned torch.bfloat16[20, 4]" in (
        judged(copy, odd, [0], 3, seeds, pristine, model, scale_spec) or "")


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


@pytest.mark.slow
def test_a_hanging_target_is_killed(scale_spec: RunSpec) -> None:
    result = time_target(scale_spec, str(KERNELS / "hangs.py"), timeout_s=10)
    assert result.status == "timeout"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["detaches_and_hangs.py", "detaches_and_exits.py"])
def test_a_process_a_timed_kernel_detached_ends_with_its_timing(name: str, scale_spec: RunSpec, detached_left) -> None:
    result = time_target(scale_spec, str(KERNELS / name), timeout_s=10)
    assert result.status != "ok", result.reason
    assert detached_left() == [], "the kernel's detached process outlived its timing"


def test_lock_is_shared_across_processes(tmp_path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from workers.harness.gpu_lock import gpu_lock\n"
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


@pytest.mark.parametrize("path", ["time", "search"])
def test_the_samples_alone_catch_a_kernel_cheating_on_every_other_timed_call(path: str, tmp_path) -> None:
    """Both paths with no full copy kept at all: only the samples of every repetition can catch the cheat,
    and an honest kernel still passes. The judge runs in a fresh Python (its runner forked from it, so both
    see the patch): Triton's interpreter is chosen when triton is first imported, which in this process
    other tests have done already."""
    code = (f"import os, sys; os.environ['TRITON_INTERPRET'] = '1'; sys.path.insert(0, {str(ROOT)!r})\n"
            f"from tests.test_timing import samples_alone_catch_every_other_call\n"
            f"samples_alone_catch_every_other_call({path!r}, {str(tmp_path)!r})")  # fmt: skip
    # the runner confines its writes to its working folder, and puts its temporary files there
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


def samples_alone_catch_every_other_call(path: str, lock_dir: str) -> None:
    from workers.harness.kernel_runner import KernelProcess
    from workers.harness.timing_child import time_in_child
    from workers.harness.verify_child import verify

    timed_outputs.kept_reps = lambda output_bytes: 0  # this process only: no full copy kept
    torch.set_num_threads(1)  # OpenMP's pool, once this process has used it, hangs in a fork that uses it
    rmsnorm = KERNELS.parents[2] / "artifacts" / "36_RMSNorm" / "problem.py"
    spec = RunSpec(problem_path=str(rmsnorm), shapes="small", device="cpu", dtype="bf16")
    budget = dict(warmup_ms=20, rep_ms=50, min_reps=3, max_reps=20)

    def timed(kernel: str) -> TimingResult:
        target = str(KERNELS / "adversarial" / kernel)
        runner = KernelProcess.fork()  # after the patch: it keeps no copy either
        if path == "time":
            return time_in_child(TimingRequest(spec=spec, target=target, lock_dir=lock_dir, **budget), runner)
        verdict = verify(VerifyRequest(spec=spec, kernel_path=target, tolerance=DEFAULT_TOLERANCES["bf16"],
                                       timing=TimingKnobs(lock_dir=lock_dir, **budget)), runner)  # fmt: skip
        assert verdict.passed, verdict.reason  # honest whenever watched
        return verdict.timing

    cheat, honest = timed("every_other_call.py"), timed("honest.py")
    assert cheat.status == "failed" and "(sampled after it returned)" in cheat.reason, cheat.reason
    assert [c.name for c in cheat.checks if not c.passed] == ["timed_outputs"]
    assert honest.status == "ok", honest.reason
    n, checked = honest.timing.n, honest.checked_reps
    assert min(n, timed_outputs.CHECKED_SAMPLES) <= len(checked) and set(checked) <= set(range(n))


@pytest.mark.skipif(not hasattr(torch._C, "_accelerator_getAllocatorSettings"), reason="torch cannot read them back")
def test_large_blocks_are_kept_whole_in_the_runner_and_in_a_reference_unless_the_user_chose(monkeypatch) -> None:
    code = """import torch
from workers.harness.allocator import keep_large_blocks_whole, large_blocks_whole
get = torch._C._accelerator_getAllocatorSettings
with large_blocks_whole(True):
    print("reference", get())
print("after", get())
with large_blocks_whole(False):
    print("cpu", get())
keep_large_blocks_whole()
print("runner", get())
"""

    def settings() -> dict[str, str]:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
        return dict(line.split(" ", 1) if " " in line else (line, "") for line in out.splitlines())

    for name in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        monkeypatch.delenv(name, raising=False)
    got = settings()
    assert got["reference"] == got["runner"] == "max_split_size_mb:128"
    assert got["after"] == got["cpu"] == "max_split_size_mb:2147483647"  # any block may be cut again
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "garbage_collection_threshold:0.6")  # the user's, kept
    assert settings()["runner"] == "garbage_collection_threshold:0.6,max_split_size_mb:128"
    for name in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        monkeypatch.setenv(name, "max_split_size_mb:512")
        assert "max_split_size_mb:128" not in settings().values()
        monkeypatch.delenv(name)

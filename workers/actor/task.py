"""One search task on a worker: profile the parent, diagnose, propose, verify (refining on failure),
time, reflect. Plain functions, so tests run them without Ray. New kernels are profiled in jobs of their
own, and only those the beam keeps (``profile_beam_kernel``): they are the next round's parents.

The candidate's code never runs here: verification (with the timing after it) and ncu each run it in a
child process.
Nothing here raises for what a kernel or a model does; those become the result's status and reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import (
    SEARCH_TIMING,
    DeviceFacts,
    Diagnosis,
    Floor,
    Kernel,
    Profile,
    Roofline,
    RunSpec,
    TimingKnobs,
    TimingResult,
    Verdict,
)
from beamsearch.records.state import (
    Baseline,
    BeamEntry,
    FinalTiming,
    ProfileJob,
    ProfileResult,
    Task,
    TaskResult,
    TaskStatus,
    VerifyTry,
)
from profiling.ncu import profile_kernel
from profiling.roofline import classify
from profiling.work import judge_time
from prompts.records import Reflection
from workers.harness.child_process import child_env
from workers.harness.gpu_lock import gpu_memory
from workers.harness.inductor_portfolio import DEFAULT_VARIANT, PortfolioVariant, recorded_variant_folder
from workers.harness.timing import time_target
from workers.harness.verify import VerifySession, verify_kernel
from workers.proposers.compile_seed import SeedResult, seed_from_recording
from workers.proposers.llm import LLMProposer
from workers.proposers.llm_client import MAX_WAIT_S, LLMClient, LLMConfig
from workers.proposers.llm_service import ServiceClient, SharedDiagnosis, find_llm_service
from workers.proposers.replay import ReplayProposer
from workers.proposers.rules import rules_diagnosis

LLM_SHARE = 0.75  # of a task's timeout, for its requests to the model
CPU_STAND_IN_GPU = "NVIDIA H100 80GB HBM3"  # peaks quoted to a model on CPU runs, which have none


class WorkerContext:
    """What one worker keeps between tasks: parent profiles and diagnoses by kernel hash, a scratch folder,
    and the session its knob variants are verified in (``variant_session``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.host = socket.gethostname()
        self.profiles: dict[str, tuple[Profile, Roofline | None]] = {}
        self.diagnoses: dict[tuple[str, str], Diagnosis] = {}
        self._scratch = tempfile.TemporaryDirectory(prefix=f"beamsearch-{name}-")  # removed with the context too
        self.scratch = Path(self._scratch.name)
        self._session: tuple[str, VerifySession] | None = None

    def variant_session(self, spec: RunSpec, kernel: Kernel) -> VerifySession | None:
        """The session a candidate is verified in: the optimiser's knob variants of one problem share one
        judge and runner while each passes (``workers.harness.verify``), sparing each the start of two
        processes, CUDA and the problem. A model's or a replay's kernel, or the input, gets processes of
        its own: they are arbitrary code, where a variant differs from a verified kernel only in its knobs."""
        if kernel.origin != "tuner":
            return None
        key = spec.model_dump_json()
        if self._session is None or self._session[0] != key:
            self.close_session()
            self._session = (key, VerifySession(spec.device))
        return self._session[1]

    def close_session(self) -> None:
        if self._session is not None:
            self._session[1].close()
            self._session = None

    def close(self) -> None:
        """End the session and remove the scratch folder: the worker is being shut down."""
        self.close_session()
        self._scratch.cleanup()

    def kernel_file(self, key: str, kernel: Kernel) -> str:
        path = self.scratch / key / "kernel.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(kernel.source)
        return str(path)


class Stages:
    """Wall time per stage of a task."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


def task_seeds(task_id: str, base: int) -> list[int]:
    """Fresh inputs per candidate: three seeds drawn from the task's id and the run's seed."""
    start = int(hashlib.sha256(f"{base}:{task_id}".encode()).hexdigest()[:7], 16)
    return [start, start + 1, start + 2]


CONTENDED_CHECKS = {"clocks_agree", "current_stream"}
# A knob variant's first call (its compile) takes about a second on a GPU, 3.3 s at the most among those
# that passed; one that takes many times that (huge tiles, deep pipelines) holds its worker, and the round
# waiting on it, for a kernel that is slow anyway. The interpreter has no compile: its first call is the
# interpreted run, slower on a loaded CPU, so it gets more. A model's kernel may autotune in its first
# call, so it gets no such limit.
TUNER_COMPILE_LIMIT_S = 8.0
TUNER_INTERPRETED_LIMIT_S = 15.0


def compile_limit_s(kernel: Kernel, device: str) -> float | None:
    """The longest a candidate's first call (its compile) may take: bounded for the tuner's variants only."""
    if kernel.origin != "tuner":
        return None
    return TUNER_COMPILE_LIMIT_S if device.startswith("cuda") else TUNER_INTERPRETED_LIMIT_S


def out_of_gpu_memory(spec: RunSpec, passed: bool, reason: str) -> bool:
    """A failed GPU job whose reason is CUDA running out of memory: worth one more try alone."""
    oom = "CUDA out of memory" in reason or "OutOfMemoryError" in reason
    return not passed and spec.device.startswith("cuda") and oom


def verify_candidate(spec: RunSpec, path: str, seeds: list[int], slots: int, screen_above_ms: float | None = None,
                     first_call_limit_s: float | None = None, session: VerifySession | None = None,
                     known_compiled: dict[str, str] | None = None) -> Verdict:  # fmt: skip
    """Verify holding one of the GPU's ``slots`` verification places (a memory budget); a kernel that
    passes is then timed in the same process, still holding it, on the first seed's inputs
    (``Verdict.timing``), so a candidate starts one GPU process fewer.

    A verification that ran out of GPU memory beside other workers' verifications, timings and profiles
    is run once more with the GPU to itself (no other job of any worker running; and the measurement
    lock inside the child), so memory pressure is not held against the kernel; a kernel that needs more
    memory than the GPU has fails the second time too. The workers' idle spares still hold their CUDA
    contexts then, about 0.5 GB each. The timing takes a search's budgets (``SEARCH_TIMING``);
    ``screen_above_ms``: it stops early above it (``Task``). ``first_call_limit_s``: the longest the
    kernel's first call (the compile) may take. ``session``: the worker's session for knob variants
    (``WorkerContext.variant_session``); the retry alone runs in fresh processes. ``known_compiled``: codes
    the run has timed (``Task.known_compiled``); a kernel running one is a ``duplicate``, not timed again."""
    knobs = TimingKnobs(seed=seeds[0], screen_above_ms=screen_above_ms, **SEARCH_TIMING)
    with gpu_memory(spec.device):
        verdict = verify_kernel(spec, path, seeds=seeds, timing=knobs, slots=slots, first_call_limit_s=first_call_limit_s,
                                session=session, known_compiled=known_compiled)  # fmt: skip
    if not out_of_gpu_memory(spec, verdict.passed, verdict.reason):
        return verdict
    with gpu_memory(spec.device, alone=True):
        again = verify_kernel(spec, path, seeds=seeds, exclusive=True, timing=knobs, first_call_limit_s=first_call_limit_s,
                              known_compiled=known_compiled)  # fmt: skip
    return again.model_copy(update={"retried_alone": True})


def disturbed_by_other_jobs(spec: RunSpec, timing: TimingResult) -> bool:
    """A GPU timing that failed only a check other processes' GPU work can fail: their kernels share the GPU's
    time and delay the host's wake-ups and the device-wide end events. The GPU's use lock (``gpu_lock``)
    keeps every beamsearch job of the node off the GPU while it measures, but not another user's
    processes, which take no lock; nor, on the first try, whatever started before a timing failed."""
    failed = {c.name for c in timing.checks if not c.passed}
    return spec.device.startswith("cuda") and timing.status == "failed" and bool(failed) and failed <= CONTENDED_CHECKS


def time_candidate(spec: RunSpec, path: str, seed: int, verdict: Verdict, screen_above_ms: float | None = None) -> TimingResult:
    """The timing taken after the verification, in the kernel's process. One that ran out of GPU memory
    while other jobs held theirs, or failed a check their GPU work can fail (``disturbed_by_other_jobs``),
    is taken again by the timing child with the GPU to itself; the second timing is the one that counts,
    with the first one's reason kept (``retried_alone_after``)."""
    timing = verdict.timing or TimingResult(target=path, status="failed", reason="the verification took no timing")
    oom = out_of_gpu_memory(spec, timing.status == "ok", timing.reason)
    if not (oom or disturbed_by_other_jobs(spec, timing)):
        return timing
    again = time_alone(spec, path, seed=seed, screen_above_ms=screen_above_ms, **SEARCH_TIMING)
    return again.model_copy(update={"retried_alone_after": f"{timing.status}: {timing.reason}"[:500]})


def inconclusive(spec: RunSpec, timing: TimingResult) -> bool:
    """A timing retried alone that failed again only checks other processes' GPU work can fail: beamsearch's
    own jobs were kept off the GPU (``gpu_lock``), so another tenant may have disturbed both tries. The
    kernel gets no time, and no failure either."""
    return bool(timing.retried_alone_after) and disturbed_by_other_jobs(spec, timing)


def _untimed_status(spec: RunSpec, timing: TimingResult) -> TaskStatus:
    return "inconclusive" if inconclusive(spec, timing) else "not_timed"


def _untimed_reason(spec: RunSpec, timing: TimingResult) -> str:
    if inconclusive(spec, timing):
        return (f"timing inconclusive: it failed only checks other processes on the GPU can fail, beside other jobs "
                f"({timing.retried_alone_after}) and alone ({timing.reason}); not ranked, not held against the kernel")  # fmt: skip
    return f"timing {timing.status}: {timing.reason}"


def profile_candidate(spec: RunSpec, path: str, seed: int) -> Profile:
    """ncu's profile, holding a share of the GPU's memory like the other jobs of a task."""
    with gpu_memory(spec.device):
        return profile_kernel(spec, path, seed=seed)


@dataclass(frozen=True)
class _TaskFacts:
    """What every result of a search task carries, whatever became of its candidate: the task, the
    parent's profile and diagnosis, and the proposer's reply (its other kernels, its notes, its exchanges)."""

    task: Task
    worker: str
    parent_profile: Profile | None
    parent_roofline: Roofline | None
    shared: SharedDiagnosis
    handed_back: list[Kernel]
    llm: LLMProposer | None

    def result(self, status: TaskStatus, reason: str, *, kernel: Kernel | None = None,
               tries: list[VerifyTry] | None = None, timing: TimingResult | None = None,
               gpu_measure_s: float = 0.0, pct_of_floor: float | None = None,
               reflection: Reflection | None = None, lesson: str = "") -> TaskResult:  # fmt: skip
        t = self.task
        return TaskResult(
            task_id=t.id, parent_id=t.parent.id, round=t.round, direction=t.direction, parent_ms=t.parent.ranked_ms,
            worker=self.worker, status=status, reason=reason, kernel=kernel, tries=tries or [], timing=timing,
            parent_profile=self.parent_profile, parent_roofline=self.parent_roofline,
            diagnosis=self.shared.diagnosis, diagnosis_by=self.shared.task_id,
            shared_diagnosis=self.shared.exchanges, from_task=t.from_task, handed_back=self.handed_back,
            reply_notes=self.llm.reply_notes if self.llm else [], exchanges=_exchanges(self.llm),
            gpu_measure_s=gpu_measure_s, pct_of_floor=pct_of_floor, reflection=reflection, lesson=lesson,
            model=self.llm.model if self.llm else "",
        )  # fmt: skip


def run_task(task: Task, ctx: WorkerContext) -> TaskResult:
    stages = Stages()
    config, spec, parent = task.config, task.spec, task.parent
    llm = make_llm(config, spec, task.id, task.model) if config.llm else None
    # A planned knob variant offline reads no profile: its parent's is recorded if it has one, never made here
    planned = task.kernel is not None and llm is None
    with stages("profile_parent"):
        parent_profile, parent_roofline = parent_measure(parent, spec, config.profile and not planned, ctx)
    with stages("diagnose"):
        shared = diagnose(parent, parent_profile, parent_roofline, task.floor, llm, spec, ctx, task.id,
                          wait_s=_longest_diagnosis_s(config))  # fmt: skip
    diagnosis = shared.diagnosis

    with stages("propose"):
        kernels = [task.kernel] if task.kernel else propose(task, diagnosis, llm)
    # one task, one candidate: a reply's other kernels go back to the driver, which makes each a task
    facts = _TaskFacts(task=task, worker=f"{ctx.host}/{ctx.name}", parent_profile=parent_profile,
                       parent_roofline=parent_roofline, shared=shared, handed_back=kernels[1:], llm=llm)  # fmt: skip
    if not kernels:
        return _done(facts.result("no_proposal", _no_proposal_reason(config, llm)), stages)
    kernel = kernels[0]

    seeds = task_seeds(task.id, config.seed)
    tries: list[VerifyTry] = []
    while True:
        path = ctx.kernel_file(f"{task.id}-v{len(tries)}", kernel)
        with stages("verify"):
            verdict = verify_candidate(spec, path, seeds, config.verify_per_gpu or 1, task.screen_above_ms,
                                       first_call_limit_s=compile_limit_s(kernel, spec.device),
                                       session=ctx.variant_session(spec, kernel),
                                       # a model's fix of the variant has host code of its own
                                       known_compiled=task.known_compiled if not tries else None)  # fmt: skip
        tries.append(VerifyTry(kernel=kernel, verdict=verdict))
        if verdict.passed or verdict.status == "duplicate" or llm is None or len(tries) > config.refine_tries:
            break
        with stages("refine"):
            refined = llm.refine(kernel, verdict, earlier=[(t.kernel, t.verdict) for t in tries[:-1]])
        if refined is None:
            break
        kernel = refined
    if verdict.status == "duplicate":  # nothing to learn from it beyond the time of the kernel it repeats
        return _done(facts.result("duplicate", verdict.reason, kernel=kernel, tries=tries), stages)
    if not verdict.passed:
        with stages("reflect"):
            reflection = _reflect(llm, diagnosis, task, parent, kernel, None, verdict)
        lesson = _lesson(reflection) or f"{kernel.note}: rejected ({verdict.status}: {verdict.reason[:160]})"
        return _done(facts.result("rejected", f"{verdict.status}: {verdict.reason}", kernel=kernel, tries=tries,
                                  lesson=lesson, reflection=reflection), stages)  # fmt: skip

    with stages("time"):
        timing = time_candidate(spec, path, seeds[0], verdict, task.screen_above_ms)
    gpu_s = _held_s(timing)
    ms = timing.ranked_ms
    if ms is None:
        return _done(facts.result(_untimed_status(spec, timing), _untimed_reason(spec, timing), kernel=kernel,
                                  tries=tries, timing=timing, gpu_measure_s=gpu_s), stages)  # fmt: skip
    pct, suspect = judge_time(task.floor, ms) if task.floor and spec.device.startswith("cuda") else (None, False)

    with stages("reflect"):
        reflection = _reflect(llm, diagnosis, task, parent, kernel, ms, verdict)
    lesson = _lesson(reflection) or _tuner_lesson(kernel, parent.ranked_ms, ms)
    status, reason = ("suspect", f"{ms:.4f} ms is faster than the floor allows ({pct:.0f} % of floor)") if suspect \
        else ("ok", f"{ms:.4f} ms ({parent.ranked_ms / ms:.3f}x the parent)")  # fmt: skip
    if timing.timing.screened_above_ms is not None:
        reason += (f"; timing stopped after {timing.timing.n} repetitions, slower than the "
                   f"{timing.timing.screened_above_ms:.4f} ms the beam asked for")  # fmt: skip
    return _done(facts.result(status, reason, kernel=kernel, tries=tries, timing=timing, pct_of_floor=pct,
                              reflection=reflection, lesson=lesson, gpu_measure_s=gpu_s), stages)  # fmt: skip


def profile_beam_kernel(job: ProfileJob, ctx: WorkerContext) -> ProfileResult:
    """ncu's profile of a kernel the round kept in the beam (``job.entry``): it guides the tasks that
    start from it. Only beam kernels are profiled (``beamsearch.beam_profiles`` picks them while the round's
    last tasks run), so no task waits on ncu for a kernel that never becomes a parent."""
    stages = Stages()
    entry = job.entry
    cached = entry.profile is not None or entry.kernel.hash in ctx.profiles
    with stages("profile"):
        profile, roofline = parent_measure(entry, job.spec, True, ctx)
    if profile is None:  # no GPU: nothing to profile with
        profile = Profile(available=False, reason="not profiled")
    return ProfileResult(job_id=job.id, kernel_id=entry.id, profile=profile, roofline=roofline,
                         worker=f"{ctx.host}/{ctx.name}", stage_s=stages.seconds, finished_at=time.time(),
                         gpu_measure_s=profile.duration_s if profile.available and not cached else 0.0)  # fmt: skip


def measure_input(task: Task, ctx: WorkerContext) -> TaskResult:
    """Round 0: the starting kernel, verified, timed and profiled like any candidate (its ``parent``)."""
    stages = Stages()
    spec, kernel = task.spec, task.parent.kernel
    worker = f"{ctx.host}/{ctx.name}"

    def result(status: TaskStatus, reason: str, tries: list[VerifyTry], timing: TimingResult | None = None,
               profile: Profile | None = None, roofline: Roofline | None = None, pct_of_floor: float | None = None,
               gpu_measure_s: float = 0.0) -> TaskResult:  # fmt: skip
        return _done(TaskResult(task_id=task.id, parent_id="", round=0, direction=0, kernel=kernel, worker=worker,
                                status=status, reason=reason, tries=tries, timing=timing, profile=profile,
                                roofline=roofline, pct_of_floor=pct_of_floor, gpu_measure_s=gpu_measure_s), stages)  # fmt: skip

    path = ctx.kernel_file(task.id, kernel)
    seeds = task_seeds(task.id, task.config.seed)
    with stages("verify"):
        verdict = verify_candidate(spec, path, seeds, task.config.verify_per_gpu or 1)
    tries = [VerifyTry(kernel=kernel, verdict=verdict)]
    if not verdict.passed:
        return result("rejected", f"{verdict.status}: {verdict.reason}", tries)
    with stages("time"):
        timing = time_candidate(spec, path, seeds[0], verdict)
    if timing.ranked_ms is None:
        return result(_untimed_status(spec, timing), _untimed_reason(spec, timing), tries, timing)
    profile, roofline = None, None
    if task.config.profile and spec.device.startswith("cuda"):
        with stages("profile"):
            profile = profile_candidate(spec, path, seeds[0])
        roofline = classify(profile.combined) if profile.available else None
    pct = judge_time(task.floor, timing.ranked_ms)[0] if task.floor and spec.device.startswith("cuda") else None
    held_s = _held_s(timing) + (profile.duration_s if profile and profile.available else 0.0)
    return result("ok", f"{timing.ranked_ms:.4f} ms", tries, timing, profile=profile, roofline=roofline,
                  pct_of_floor=pct, gpu_measure_s=held_s)  # fmt: skip


def time_baselines(spec: RunSpec, targets: list[str]) -> list[Baseline]:
    out = []
    for target in targets:
        result = time_target(spec, target)
        ms = result.ranked_ms
        out.append(Baseline(label=target, target=target, median_ms=ms, status=result.status, reason=result.reason,
                            library_ops=result.library_ops))  # fmt: skip
    return out


def device_facts(spec: RunSpec) -> DeviceFacts:
    """The floor, the GPU's name, memory and shared memory a program may take. Counting work imports the problem (not a candidate) here."""
    if not spec.device.startswith("cuda"):
        return DeviceFacts(floor=None, gpu_name="cpu (Triton interpreter)", floor_note="CPU run: no floor")
    import torch

    from profiling.gpu_specs import UnknownGpu
    from profiling.work import problem_floor

    device = torch.device(spec.device)
    name = torch.cuda.get_device_name(device)
    props = torch.cuda.get_device_properties(device)
    facts = DeviceFacts(floor=None, gpu_name=name, memory_gb=round(props.total_memory / 1e9, 1),
                        shared_bytes=getattr(props, "shared_memory_per_block_optin", None))  # fmt: skip
    try:
        return facts.model_copy(update={"floor": problem_floor(spec, name)})
    except UnknownGpu as e:
        return facts.model_copy(update={"floor_note": str(e)})


# max-autotune of a matmul takes about a minute, of a pooling 47 s on an H100; a GPU search starts from the seed by
# default, so a compile past this leaves the run going on from its input within the optimiser's minutes.
RECORD_TIMEOUT_S = 300.0
RECORDER_MODULE = "workers.harness.record_inductor"


def compiler_seed(spec: RunSpec, recording: str | None, variant: PortfolioVariant | None = None) -> SeedResult:
    """The compiler seed: Inductor's kernels for the problem, standalone (``workers.proposers.compile_seed``),
    from ``recording`` when given, else from a recording made now by torch.compile in a process of its own
    (the problem's model runs there; no candidate does). ``variant``: the portfolio's Inductor options to
    record under (workers/harness/inductor_portfolio.py; None: max-autotune's own); a recording folder of
    several variants is read at its sub-folder. Never raises: what goes wrong is the reason."""
    variant = variant or PortfolioVariant(name=DEFAULT_VARIANT)
    made = {"variant": variant.name, "options": variant.options}
    if recording:
        folder = recorded_variant_folder(recording, variant.name)
        if folder is None:
            return SeedResult(unavailable=f"{recording} holds no recording of variant {variant.name}", **made)
        return seed_from_recording(folder).model_copy(update={"variant": variant.name})  # its options: its meta's
    if not spec.device.startswith("cuda"):
        return SeedResult(unavailable="on the CPU Inductor writes C++, not Triton: record the problem on a GPU with "
                                      "python -m workers.harness.record_inductor and pass the folder with --compiler-recording",
                          **made)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="beamsearch-inductor-") as out:
        command = [sys.executable, "-m", RECORDER_MODULE, "--problem", spec.problem_path, "--out", out, "--dtype", spec.dtype,
                   *variant.option_args()]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=RECORD_TIMEOUT_S, check=False,
                                  env=child_env(spec.device))
        except subprocess.TimeoutExpired:
            return SeedResult(unavailable=f"torch.compile did not finish within {RECORD_TIMEOUT_S:.0f} s", **made)
        folders = [f for f in Path(out).iterdir() if f.is_dir()]
        if done.returncode != 0 or len(folders) != 1:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return SeedResult(unavailable=f"torch.compile failed (exit {done.returncode}): {' | '.join(tail)}"[:600],
                              **made)  # fmt: skip
        return seed_from_recording(folders[0]).model_copy(update=made)


# Passes of the final re-timing: with three, one pass disturbed (a busy GPU, the interpreter's host) cannot set a
# kernel's time, where with two the median is the slower one.
RETIME_PASSES = 3


def retime(spec: RunSpec, entries: list[BeamEntry], ctx: WorkerContext, rounds: int = RETIME_PASSES) -> list[FinalTiming]:
    """The beam's kernels timed side by side, interleaved ``rounds`` times; the median of the passing
    medians counts (``final_timing``), as a median of repetitions ranks the beam in the rounds."""
    paths = {e.id: ctx.kernel_file(f"retime-{e.id}", e.kernel) for e in entries}
    results: dict[str, list[TimingResult]] = {e.id: [] for e in entries}
    for _ in range(rounds):
        for e in entries:
            results[e.id].append(time_target(spec, paths[e.id]))
    return [final_timing(spec, i, paths[i], r) for i, r in results.items()]


def final_timing(spec: RunSpec, cand_id: str, path: str, results: list[TimingResult]) -> FinalTiming:
    """One finalist's re-timings judged. One that failed a check puts the kernel's other, passing ones in
    doubt: it is timed once more alone (``time_alone``), as in-round timings are, and keeps a time only if
    that passes. Failed alone too, it has no time: ``inconclusive`` when only checks other processes on the
    GPU can fail were failed (``disturbed_by_other_jobs``), else ``failed``; the first failure is kept."""
    medians = [r.ranked_ms for r in results if r.ranked_ms is not None]
    failed = next((r for r in results if r.ranked_ms is None), None)
    first = ""
    if failed is not None:
        first = _status_line(failed)
        again = time_alone(spec, path)
        if again.ranked_ms is None:
            verdict = "inconclusive" if disturbed_by_other_jobs(spec, again) else "failed"
            return FinalTiming(id=cand_id, median_ms=None, status=verdict, reason=_status_line(again),
                               medians_ms=medians, retried_alone_after=first)  # fmt: skip
        medians.append(again.ranked_ms)
    if not medians:
        return FinalTiming(id=cand_id, median_ms=None, status="failed", reason="not timed", retried_alone_after=first)
    median = statistics.median(medians)  # of an even count, the middle two's mean: neither outlier alone sets it
    return FinalTiming(id=cand_id, median_ms=median, status="ok", medians_ms=medians, retried_alone_after=first)


def time_alone(spec: RunSpec, path: str, **knobs: object) -> TimingResult:
    """A timing with the GPU to itself: no other job of any worker runs (``gpu_memory`` alone), and the
    timing child holds the measurement lock from start to end."""
    with gpu_memory(spec.device, alone=True):
        return time_target(spec, path, exclusive=True, **knobs)


def _status_line(timing: TimingResult) -> str:
    line = timing.reason if timing.status == "failed" else f"{timing.status}: {timing.reason}"
    return line[:300]


def parent_measure(parent: BeamEntry, spec: RunSpec, profile_on: bool, ctx: WorkerContext) -> tuple[Profile | None, Roofline | None]:
    if parent.profile is not None:
        return parent.profile, parent.roofline
    if parent.kernel.hash in ctx.profiles:
        return ctx.profiles[parent.kernel.hash]
    if not (profile_on and spec.device.startswith("cuda")):
        return None, None
    path = ctx.kernel_file(f"parent-{parent.kernel.hash}", parent.kernel)
    profile = profile_candidate(spec, path, 0)
    measured = (profile, classify(profile.combined) if profile.available else None)
    ctx.profiles[parent.kernel.hash] = measured
    return measured


def diagnose(parent: BeamEntry, profile: Profile | None, roofline: Roofline | None, floor: Floor | None,
             llm: LLMProposer | None, spec: RunSpec, ctx: WorkerContext, task_id: str = "",
             wait_s: float = 600.0) -> SharedDiagnosis:  # fmt: skip
    """The parent's diagnosis, made once per run through the run's LLM service (else once per worker);
    a model's failed diagnosis (the rules' stand-in) is not kept: the next task asks the model again.
    ``wait_s``: the longest this task waits for another task's diagnosis of the same parent."""
    wanted = "llm" if llm else "rules"
    if parent.diagnosis is not None and parent.diagnosis.source == wanted:
        return SharedDiagnosis(parent.diagnosis, "", [])
    key = (parent.kernel.hash, wanted)
    if llm is None:
        ctx.diagnoses.setdefault(key, rules_diagnosis(roofline))
        return SharedDiagnosis(ctx.diagnoses[key], "", [])
    service = find_llm_service()
    if service is not None:
        import ray

        # one diagnosis per parent and model: a slow model's tasks do not hold up the others'
        shared = ray.get(service.claim_diagnosis.remote(_diagnosis_key(parent, llm), wait_s))
        if shared is not None:
            return shared
    elif key in ctx.diagnoses:
        return SharedDiagnosis(ctx.diagnoses[key], "", [])
    made = len(llm.exchanges)
    diagnosis = llm.diagnose(parent.kernel, peaks=_peaks(spec, profile), profile=profile, roofline=roofline,
                             floor=floor, measured_ms=parent.ranked_ms)  # fmt: skip
    worked = diagnosis.source == wanted
    if service is not None:
        service.put_diagnosis.remote(_diagnosis_key(parent, llm), diagnosis if worked else None, task_id,
                                     llm.exchanges[made:])  # fmt: skip
    elif worked:
        ctx.diagnoses[key] = diagnosis
    return SharedDiagnosis(diagnosis, "", [])


def _diagnosis_key(parent: BeamEntry, llm: LLMProposer) -> str:
    return f"{llm.model} {parent.kernel.hash}"


def propose(task: Task, diagnosis: Diagnosis, llm: LLMProposer | None) -> list[Kernel]:
    """The task's proposals: direction d is the d-th bottleneck for a model (every new kernel of its reply,
    the first the task's own), the d-th recorded kernel for a replay (d: the task's place in its round,
    ``plan_round``). The offline optimiser's tasks, and those of kernels handed back, carry their kernel
    (``Task.kernel``, planned by the driver)."""
    config, d = task.config, task.direction
    if llm is not None:
        return llm.propose(task.parent.kernel, diagnosis, task.history, direction=d,
                           measured_ms=task.parent.ranked_ms, floor=task.floor)  # fmt: skip
    if not config.replay:
        return []
    proposer = ReplayProposer(config.replay)
    proposer.seek(task.round - 1)
    kernels = proposer.propose(task.parent.kernel, diagnosis, task.history)
    return kernels[d : d + 1]


def llm_config(config: SearchConfig, model: str = "") -> LLMConfig:
    """The client's settings for ``model``, one of the run's (""): its first, or only, model)."""
    where = config.endpoint(model)
    return LLMConfig(model=where.model, api_base=where.api_base, api_key_env=where.api_key_env,
                     timeout_s=config.llm_timeout_s, max_retries=config.llm_retries,
                     max_concurrency=config.llm_concurrency, temperature=config.temperature,
                     max_tokens=config.max_tokens)  # fmt: skip


def _longest_diagnosis_s(config: SearchConfig) -> float:
    """A diagnosis and its repair request, every attempt timing out, with the longest backoffs; never
    past the diagnosing task's own deadline for the model (``make_llm``)."""
    return min(2 * (config.llm_timeout_s + MAX_WAIT_S) * (config.llm_retries + 1), LLM_SHARE * config.task_timeout_s)


def make_llm(config: SearchConfig, spec: RunSpec, task_id: str = "", model: str = "") -> LLMProposer:
    """Through the run's LLM service where the driver started one; else a client of this task's own.
    ``model``: which of the run's models to ask ("": the first, or only, one). The model gets ``LLM_SHARE``
    of the task's timeout: its requests end by then, leaving the rest for verification and timing, so the
    task comes back with its exchanges instead of timing out."""
    service = find_llm_service()
    deadline = time.time() + LLM_SHARE * config.task_timeout_s
    settings = llm_config(config, model)
    client = ServiceClient(service, task_id, deadline, model=settings.model) if service is not None \
        else LLMClient(settings)  # fmt: skip
    return LLMProposer(client, Path(spec.problem_path).read_text(), dtype=spec.dtype, samples=config.samples,
                       interpreted=not spec.device.startswith("cuda"), model=settings.model)  # fmt: skip


def _peaks(spec: RunSpec, profile: Profile | None):
    from profiling.peaks import effective_peaks

    if spec.device.startswith("cuda"):
        import torch

        return effective_peaks(torch.cuda.get_device_name(torch.device(spec.device)))
    peaks = effective_peaks(CPU_STAND_IN_GPU)
    return peaks.model_copy(update={"device_name": f"{CPU_STAND_IN_GPU} (numbers quoted for a CPU run: no GPU here)"})


def _reflect(llm, diagnosis: Diagnosis, task: Task, parent: BeamEntry, kernel: Kernel, ms, verdict):
    if llm is None or not diagnosis.bottlenecks:
        return None
    bottleneck = diagnosis.bottlenecks[task.direction % len(diagnosis.bottlenecks)]
    return llm.reflect(bottleneck, parent=parent.kernel, child=kernel, parent_ms=parent.ranked_ms, child_ms=ms,
                       verdict=verdict)  # fmt: skip


def _lesson(reflection: Reflection | None) -> str:
    """What later prompts show of a reflection: its lesson, and its suggestion for the next try."""
    if reflection is None:
        return ""
    return reflection.lesson + (f" Try next: {reflection.try_next}" if reflection.try_next else "")


def _tuner_lesson(kernel: Kernel, parent_ms: float, ms: float) -> str:
    return f"{kernel.note}: {parent_ms / ms:.3f}x the parent ({parent_ms:.4f} -> {ms:.4f} ms)"


def _no_proposal_reason(config, llm) -> str:
    if llm is not None:
        why = "; ".join(llm.no_kernel_reasons) or "no reason recorded"
        return f"the model gave no usable new kernel: {why}"
    if config.replay:
        return "the recorded run has no kernel for this round and direction"
    # Only a model lost mid-round (``--on-model-lost offline``) leaves a task with neither: the offline
    # optimiser's tasks carry the kernel the driver planned.
    return "no kernel to try: the model was lost; the offline optimiser plans the rounds after this one"


def _exchanges(llm: LLMProposer | None) -> list:
    if llm is None:
        return []
    out, llm.exchanges = llm.exchanges, []
    return out


def _held_s(timing: TimingResult) -> float:
    return max(0.0, timing.duration_s - timing.lock_wait_s) if timing.timing else 0.0


def _done(result: TaskResult, stages: Stages) -> TaskResult:
    return result.model_copy(update={"stage_s": stages.seconds, "finished_at": time.time()})


def versions(device: str) -> dict[str, str]:
    """Versions for the summary: the GPU, its driver, CUDA, torch, triton, Python, beamsearch and Ray."""
    import ray

    from workers.harness.environment import environment

    return environment(device) | {"ray": ray.__version__}

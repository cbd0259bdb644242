"""The search's records: a task sent to a worker, what comes back, the beam, and the run's summary.

A TaskResult carries every artefact of one candidate (proposal, verification tries, timing, profiles,
LLM exchanges, reflexion); the driver writes it to the trace and keeps only what ranking needs in the
BeamState, which is saved after every round as the resume point.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from beamsearch.records.config import SearchConfig
from beamsearch.records.llm import Exchange, ModelsState, ModelStats
from beamsearch.records.schema import (
    Attempt,
    Diagnosis,
    Floor,
    Kernel,
    Profile,
    Record,
    Roofline,
    RunSpec,
    TimingResult,
    TimingStatus,
    Verdict,
)
from beamsearch.records.search import KnobSpace, SearcherState
from prompts.records import Reflection

TaskStatus = Literal[
    "ok",  # verified and timed
    "rejected",  # failed verification (after any refinement)
    "not_timed",  # verified, but the timing failed
    "inconclusive",  # verified; its timing failed, alone too, only checks other processes on the GPU can fail:
    # not ranked, and not held against the kernel
    "no_proposal",  # the proposer had nothing new for this parent and direction
    "duplicate",  # same code (source, or compiled code and no faster) as a kernel already seen in this run, or
    # a knob variant stopped untimed on code its space had timed (Task.known_compiled)
    "suspect",  # timed faster than the physical floor allows: not accepted
    "failed",  # the task itself failed: worker crash, task timeout, an error in our code
]


class BeamEntry(Record):
    """A kernel in the beam, with what its children's tasks can reuse."""

    id: str
    kernel: Kernel
    ranked_ms: float = Field(description="the time the beam ranks it by: the median of an in-round timing that "
                             "passed its checks (``TaskResult.ranked_ms``)")
    round: int
    compiled_hash: str | None = Field(None, description="hash of the compiled code a call launches (GPU runs)")
    profile: Profile | None = None
    roofline: Roofline | None = None
    diagnosis: Diagnosis | None = None

    @model_validator(mode="before")
    @classmethod
    def _old_name(cls, data: Any) -> Any:
        """State and trace files written before the rename call ``ranked_ms`` ``median_ms``."""
        if isinstance(data, dict) and "median_ms" in data and "ranked_ms" not in data:
            return {("ranked_ms" if k == "median_ms" else k): v for k, v in data.items()}
        return data


class Task(Record):
    id: str = Field(description="unique in the run: r<round>-t<n>; <task>-k<n> for a kernel that task handed back")
    round: int
    direction: int = Field(description="which bottleneck (LLM) or which proposal (tuner, replay) to pursue")
    parent: BeamEntry
    spec: RunSpec
    config: SearchConfig
    floor: Floor | None = None
    history: list[Attempt] = Field([], description="earlier attempts of the run (hash, note, outcome, lesson)")
    screen_above_ms: float | None = Field(None, description="set as the task is handed out: a candidate slower than "
                                          "this cannot enter the beam, so its timing may stop early")
    kernel: Kernel | None = Field(None, description="the candidate, when the driver made it (the offline optimiser's "
                                  "point, rendered); none: the worker's proposer makes it (a model, a replay)")
    from_task: str = Field("", description="the task whose model reply held ``kernel`` besides its own (handed back)")  # fmt: skip
    known_compiled: dict[str, str] = Field({}, description="set as the task is handed out, for a knob variant: "
                                           "compiled-code hash -> the candidate timed on it, of the variant's own "
                                           "knob space; running one of them makes the candidate a duplicate")  # fmt: skip
    model: str = Field("", description="the model the task asks, one of the run's several (set as it is handed "
                       "out, ``beamsearch.model_shares``); empty: the run's only model")  # fmt: skip


class VerifyTry(Record):
    kernel: Kernel
    verdict: Verdict


class TaskResult(Record):
    task_id: str
    parent_id: str
    round: int
    direction: int
    status: TaskStatus
    reason: str
    kernel: Kernel | None = Field(None, description="the final kernel (after any refinement)")
    from_task: str = Field("", description="the task whose model reply held this kernel besides its own: the "
                           "kernel was handed back and tried as a task of its own; empty for a task's own proposal")  # fmt: skip
    handed_back: list[Kernel] = Field([], description="the reply's other new kernels, handed back to the driver, "
                                      "which makes each a task of its own (``beamsearch.handback``)")  # fmt: skip
    reply_notes: list[str] = Field([], description="what became of the reply's kernels besides this task's own: "
                                   "repeats and those over the cap not tried, where each handed-back one went")  # fmt: skip
    tries: list[VerifyTry] = []
    timing: TimingResult | None = None
    parent_profile: Profile | None = None
    parent_roofline: Roofline | None = None
    diagnosis: Diagnosis | None = None
    diagnosis_by: str = Field("", description="the task that made the diagnosis, when it was another's (a parent "
                              "is diagnosed once per run); its exchanges are copied in shared_diagnosis")
    shared_diagnosis: list[Exchange] = Field([], description="that task's diagnosis exchanges: counted in its "
                                             "tokens and cost, not in these")
    profile: Profile | None = None
    roofline: Roofline | None = None
    exchanges: list[Exchange] = []
    reflection: Reflection | None = None
    lesson: str = ""
    parent_ms: float | None = None
    pct_of_floor: float | None = None
    worker: str = Field("", description="node and device the task ran on")
    stage_s: dict[str, float] = Field({}, description="wall seconds per stage: profile_parent, diagnose, ...")
    gpu_measure_s: float = Field(0.0, description="seconds of the timing and ncu child runs (start-up "
                                 "included): an upper bound on the task's time under the GPU lock")
    finished_at: float = 0.0
    model: str = Field("", description="the model the task asked (``Task.model``); empty: the run's only one, or none")

    @property
    def ranked_ms(self) -> float | None:
        """The candidate's time to rank by: only from a timing that passed its checks (``TimingResult.ranked_ms``)."""
        return self.timing.ranked_ms if self.timing is not None else None

    @property
    def screened(self) -> bool:
        """Its timing passed, and stopped early: too slow to enter the beam (``Task.screen_above_ms``)."""
        t = self.timing
        return t is not None and t.ranked_ms is not None and t.timing.screened_above_ms is not None

    @property
    def compiled_hash(self) -> str | None:
        """The timing's hash; else the verification's (a ``duplicate`` of code the run timed before)."""
        if self.timing is not None:
            return self.timing.compiled_hash
        return self.tries[-1].verdict.compiled_hash if self.tries else None

    @property
    def tokens(self) -> int:
        return sum(e.call.prompt_tokens + e.call.completion_tokens for e in self.exchanges)

    @property
    def cost_usd(self) -> float:
        return sum(e.call.cost_usd for e in self.exchanges)


class ProfileJob(Record):
    """An ncu profile of a kernel the round keeps in the beam (``beamsearch.beam_profiles``): the next
    round's tasks start from it. Not a candidate: it proposes, verifies and times nothing."""

    id: str = Field(description="unique in the run: r<round>-profile-<the kernel's id>")
    round: int
    entry: BeamEntry = Field(description="the kernel to profile")
    spec: RunSpec


class ProfileResult(Record):
    """What a profile job came to: the profile, or one that is unavailable and says why (ncu failed, the
    job's worker died twice, it timed out)."""

    job_id: str
    kernel_id: str = Field(description="the beam entry profiled")
    profile: Profile
    roofline: Roofline | None = None
    worker: str = Field("", description="node and device the job ran on")
    stage_s: dict[str, float] = Field({}, description="wall seconds per stage: profile")
    gpu_measure_s: float = Field(0.0, description="seconds of the ncu child run; 0 when the worker had the profile")
    finished_at: float = 0.0


class Baseline(Record):
    label: str
    target: str
    median_ms: float | None
    status: TimingStatus = Field(description="the timing's status: only ``ok`` has a time")
    reason: str = ""
    library_ops: list[str] | None = Field(None, description="its operators that run a vendor library, as "
                                          "``addmm (cuBLAS)`` (workers.harness.library_ops); None: unknown")


class RoundRecord(Record):
    round: int
    tasks: int
    ok: int
    failed: int
    best_id: str | None = Field(None, description="the round's fastest new candidate")
    best_ms: float | None = None
    beam: list[str] = Field([], description="ids in the beam after the round, fastest first")
    running_best_ms: float | None = None
    wall_s: float = 0.0
    profile_wall_s: float = Field(0.0, description="of wall_s, the time after the round's last candidate (after its "
                                  "start when every candidate was reused on --resume), when only profiles of the "
                                  "beam's new kernels ran")  # fmt: skip
    profile_s: float = Field(0.0, description="the seconds the round's profile jobs took, summed over workers")
    profiles: int = Field(0, description="profile jobs: the beam's new kernels, and kernels pushed out after their job")
    profiles_unused: int = Field(0, description="of those, profiles of kernels the beam did not keep in the end")
    screened: int = Field(0, description="candidates whose timing stopped early: too slow to enter the beam")
    inconclusive: int = Field(0, description="candidates whose timing failed, alone too, only checks other processes "
                              "on the GPU can fail: not ranked, not failed")
    gpu_measure_s: float = 0.0
    tokens: int = 0
    cost_usd: float = 0.0


class Outcome(Record):
    """What a kernel came to, as the offline optimiser learns it: a time, or a failure's text."""

    time_ms: float | None = None
    failure: str | None = None


class TimedCode(Record):
    """The first point of a knob space timed running one compiled code (``OptimiserState.compiled``)."""

    point: dict[str, int]
    task_id: str = Field(description="the candidate timed on it (the root's id for the root's own code)")
    time_ms: float


class SpaceSearch(Record):
    """One searcher of the offline optimiser: over the knob space of ``root``, and what it has learned."""

    root_id: str = Field(description="the candidate whose kernel is the space's start")
    root: Kernel
    space: KnobSpace
    budget: int | None = Field(None, description="the candidates the run meant to spend when the search began")
    searcher: SearcherState


class OptimiserState(Record):
    """The offline optimiser's part of the resume point."""

    searches: dict[str, SpaceSearch] = Field({}, description="by the root kernel's hash")
    outcomes: dict[str, Outcome] = Field({}, description="normalised-code hash -> what that kernel came to, so a "
                                         "point whose kernel was already measured is told, not run again")
    compiled: dict[str, dict[str, TimedCode]] = Field({}, description="by search: compiled-code hash -> the first "
                                                      "point timed running it; a later point running it is a "
                                                      "duplicate, stopped before its timing, told that time")  # fmt: skip
    observed: list[str] = Field([], description="task ids whose results the searchers have learned: a round "
                                "resumed after a later round's results came in does not teach them twice")  # fmt: skip


class PendingKernel(Record):
    """A kernel handed back by a task, waiting for a place in a round (``beamsearch.handback``)."""

    id: str = Field(description="the task it runs as: <the task whose reply held it>-k<n>, the n-th "
                    "kernel that task handed back")  # fmt: skip
    kernel: Kernel
    parent: BeamEntry
    direction: int
    from_task: str


class PlannedPoint(Record):
    """A knob point a planned candidate answers: of the search keyed by its root kernel's hash."""

    search: str
    point: dict[str, int]


class RoundPlan(Record):
    """A round's tasks as planned, written before the first is handed out. The next round is planned while
    this one's last candidates run, from whatever results are back; a resumed round runs this plan rather
    than a new one, so nothing is tried twice and nothing finished is lost."""

    round: int
    tasks: list[Task]
    points: dict[str, list[PlannedPoint]] = Field({}, description="task id -> the knob points its candidate "
                                                  "answers (offline optimiser's tasks)")  # fmt: skip
    places: int = Field(0, description="handed-back kernels the round may try besides its tasks")
    searches: dict[str, SpaceSearch] = Field({}, description="the knob searches of its points that began after "
                                             "the last resume point, as they began (the saved state lacks them)")


class BeamState(Record):
    """Everything needed to resume: the beam after ``round``, and what the run has tried."""

    config: SearchConfig
    problem: str
    spec: RunSpec
    round: int = Field(0, description="last finished round; 0: only the starting kernel is measured")
    beam: list[BeamEntry] = []
    input: BeamEntry | None = None
    baselines: list[Baseline] = []
    floor: Floor | None = None
    history: list[Attempt] = []
    optimiser: OptimiserState = OptimiserState()
    seen: dict[str, str] = Field({}, description="normalised-code hash -> id of the first candidate with it")
    fastest_compiled: dict[str, tuple[str, float]] = Field(
        {}, description="compiled-code hash -> (id, ms) of the fastest candidate that launches that code")
    rounds: list[RoundRecord] = []
    pending: list[PendingKernel] = Field([], description="handed-back kernels the last round had no place for: "
                                         "they open the next round")  # fmt: skip
    gpu_name: str = ""
    shared_bytes: int | None = Field(None, description="the shared memory a program may take on the GPU "
                                     "(DeviceFacts); None on the CPU")  # fmt: skip
    started_at: float = 0.0
    elapsed_s: float = Field(0.0, description="wall seconds over all sessions of the run")
    setup_s: float | None = Field(None, description="of elapsed_s, the seconds before round 1 (the start's "
                                  "measurements, baselines and compiler seed), which --budget-minutes does not count")
    models: ModelsState = Field(ModelsState(), description="a run of several models: each one's counts and share")


# Re-timings of one kernel further apart than this (of the fastest) are shown, each one, where the result is said:
# the interpreter's and a busy GPU's times wander by more than an honest headline hides.
PASSES_DISAGREE = 0.10

FinalStatus = Literal[
    "ok",  # a re-timing passed (alone, after any failure): the finalist has a time and can be crowned
    "failed",  # failed, alone too
    "inconclusive",  # failed alone too, only checks other processes on the GPU can fail: not ranked, not
    # held against the kernel
]


class FinalTiming(Record):
    """One finalist's re-timing. Only one whose status is ``ok`` has a time and can be crowned: a re-timing
    that failed is taken again alone (``retried_alone_after`` keeps the first failure), and a kernel whose
    time alone fails too keeps no time."""

    id: str
    median_ms: float | None
    status: FinalStatus
    reason: str = Field("", description="why a finalist has no time; empty when ``ok``")
    medians_ms: list[float] = Field([], description="the passing re-timings' medians (the interleaved ones and "
                                    "the one alone), of which median_ms is the median")
    retried_alone_after: str = Field("", description="the first re-timing that failed: status and reason")

    @model_validator(mode="before")
    @classmethod
    def _reason_apart(cls, data: Any) -> Any:
        """Older summaries wrote the reason into the status (``failed: <reason>``): split it off."""
        if isinstance(data, dict) and isinstance(data.get("status"), str) and ": " in data["status"]:
            status, reason = data["status"].split(": ", 1)
            return {**data, "status": status, "reason": data.get("reason") or reason}
        return data

    @property
    def crowned_ms(self) -> float | None:
        """The time the finalist competes with: only a re-timing that passed (alone, after any failure)."""
        return self.median_ms if self.status == "ok" else None

    @property
    def note(self) -> str:
        """What happened to a finalist whose re-timing did not simply pass; empty when it did."""
        if not self.retried_alone_after:
            return "" if self.status == "ok" else f"{self.id}: {self.outcome}; not crowned"
        first = f"{self.id}: a re-timing failed ({self.retried_alone_after}); timed again alone, "
        if self.crowned_ms is not None:
            return first + f"it passed: {self.crowned_ms:.4g} ms counts"
        return first + f"{self.outcome}; not crowned"

    @property
    def outcome(self) -> str:
        """The status with its reason, as one line for tables and notes."""
        return f"{self.status}: {self.reason}" if self.reason else self.status

    @property
    def spread(self) -> float | None:
        """How far the passing re-timings are apart: (slowest - fastest) / fastest; None with fewer than two."""
        if len(self.medians_ms) < 2 or min(self.medians_ms) <= 0:
            return None
        return (max(self.medians_ms) - min(self.medians_ms)) / min(self.medians_ms)

    @property
    def disagree(self) -> bool:
        """The passes disagree by more than noise (``PASSES_DISAGREE``): the reader is shown each one."""
        return self.spread is not None and self.spread > PASSES_DISAGREE


class Summary(Record):
    problem: str
    config: SearchConfig
    spec: RunSpec
    versions: dict[str, str]
    gpu_name: str
    baselines: list[Baseline]
    input_ms: float | None
    floor: Floor | None = None
    rounds: list[RoundRecord]
    final_retime: list[FinalTiming] = Field([], description="the beam re-timed side by side at the end")
    retime_notes: list[str] = Field([], description="finalists whose re-timing failed: retried alone, and how "
                                    "that went (``FinalTiming.note``)")
    best_id: str | None
    best_ms: float | None
    best_round: int | None
    speedup_vs_input: float | None
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    best_baseline: str | None = Field(None, description="the fastest PyTorch baseline's label (GPU runs)")
    speedup_vs_best_baseline: float | None = Field(None, description="its time over the best kernel's: the bar")
    pct_of_floor: float | None
    candidates: int
    candidates_ok: int
    tokens: int
    cost_usd: float
    wall_s: float
    gpu_measure_s: float
    stop_reason: str = Field("", description="why the search stopped: its rounds, its budget, or no candidate left")
    setup_s: float | None = Field(None, description="seconds before round 1 (the starting kernel, the baselines, the "
                                  "compiler seed): not counted by --budget-minutes; None in older summaries")
    search_s: float | None = Field(None, description="seconds of the rounds: what --budget-minutes counts")
    compiler_seed: str = Field("", description="what became of the compiler seed: kept, not kept, unavailable and "
                               "why, or left out; empty where unknown")
    slower_than_best_baseline: bool | None = Field(None, description="the best kernel is slower than the best "
                                                   "baseline; None where there is no bar (a CPU run, no baseline)")
    loss_reason: str = Field("", description="why the best kernel is slower than the best baseline, where known")
    approximate_math: bool = Field(False, description="the best kernel computes with the math knob's fast "
                                   "approximate transcendentals: within the problem's tolerance, not the precise values")
    warnings: list[str] = Field([], description="what a reader of the result must not miss: a search that tried "
                                "no candidate")
    not_tried: list[str] = Field([], description="handed-back kernels still waiting for a place when the run stopped")  # fmt: skip
    models: list[ModelStats] = Field([], description="a run of several models: what each one's tasks came to")

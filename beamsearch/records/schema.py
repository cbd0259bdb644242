"""Typed records that cross a process boundary or land on disk.

Every model is frozen and ignores unknown fields, so traces written by an older version still load.
Units are in the field names (``_ms``, ``_s``); values are stored raw and rounded only in reports.
Failure is a value: a ``status`` plus a human-readable ``reason`` (and a traceback where there is one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

DType = Literal["bf16", "fp16", "fp32"]
ShapeSet = Literal["full", "small"]


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Tolerance(Record):
    """Elementwise pass rule: ``|out - ref| <= atol + rtol * |ref|`` (as ``torch.allclose``)."""

    atol: float = Field(ge=0, allow_inf_nan=False)
    rtol: float = Field(ge=0, allow_inf_nan=False)


# Defaults per dtype. The reference is computed one precision higher (bf16/fp16 -> fp32, fp32 -> fp64),
# so these bound the candidate's own rounding: a few ulps of the output dtype.
DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "bf16": Tolerance(atol=1e-2, rtol=1e-2),
    "fp16": Tolerance(atol=1e-3, rtol=1e-3),
    "fp32": Tolerance(atol=1e-4, rtol=1e-4),
}


def given_tolerance(dtype: DType, atol: float | None, rtol: float | None) -> Tolerance | None:
    """The rule where ``atol`` or ``rtol`` is given, the other the dtype's default; None where neither is."""
    if atol is None and rtol is None:
        return None
    default = DEFAULT_TOLERANCES[dtype]
    return Tolerance(atol=default.atol if atol is None else atol, rtol=default.rtol if rtol is None else rtol)


class RunSpec(Record):
    """Where and how a problem is instantiated, and the rule its outputs are held to: the same spec gives
    the same inputs for a seed."""

    problem_path: str
    shapes: ShapeSet
    device: str = Field(description="torch device string: 'cpu', 'cuda' or 'cuda:N'")
    dtype: DType = "bf16"
    tolerance: Tolerance | None = Field(None, description="the values checks' rule; none: the dtype's default "
                                                          "(DEFAULT_TOLERANCES)")

    def values_tolerance(self) -> Tolerance:
        return self.tolerance or DEFAULT_TOLERANCES[self.dtype]

    @field_validator("problem_path")
    @classmethod
    def _absolute(cls, v: str) -> str:  # children run in their own working directory
        return str(Path(v).expanduser().resolve())


class CheckResult(Record):
    name: str
    passed: bool
    detail: str = ""


TimingStatus = Literal["ok", "failed", "timeout", "crashed"]


class Timing(Record):
    """Per-call times of one callable. On CPU they are Triton-interpreter times, not a speed measure."""

    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    n: int
    warmup_n: int
    device_end_n: int = Field(0, description="repetitions timed to the device-wide end: the call left work "
                                             "on another stream")
    device_gap_ms: float | None = Field(None, description="GPU: median time from the call's stream end to the "
                                                          "device-wide end (the host waking from its sync)")
    sync_margin_ms: float | None = Field(None, description="GPU: the largest such gap for a call of the same "
                                                           "length on one stream, measured; escapes are judged "
                                                           "above it")
    method: str
    device_name: str
    on_gpu: bool
    dtype: DType
    shapes: ShapeSet
    host_batch_ms: float | None = Field(None, description="GPU: host clock per call over a synchronised batch of "
                                                          "back-to-back calls (the cross-check of the events)")
    host_enqueue_ms: float | None = Field(None, description="GPU: median host time to enqueue one call")
    screened_above_ms: float | None = Field(None, description="the timing stopped after its first repetitions, "
                                                              "whose median was above this (a search's beam cut-off)")


class TimingKnobs(Record):
    """How a target is timed: the inputs' seed, the time budgets and the lock folder."""

    seed: int = 0
    warmup_ms: float = 300.0  # also lets an idle GPU's clocks ramp up
    rep_ms: float = 500.0
    min_reps: int = 10
    max_reps: int = 1000
    lock_dir: str = ""
    screen_above_ms: float | None = Field(None, description="stop after the first repetitions when their median "
                                                            "is above this (``workers.harness.clock.measure``)")


# In-round timings only rank candidates against the beam: the beam's kernels are timed again in full,
# side by side, before one is crowned (``workers.actor.task.retime``). A fifth of the full repetitions keeps
# the median's spread well under the gaps that decide a beam, while each timing holds the GPU's measurement
# lock, which every worker of the GPU waits on, about a third as long. The warm-up is short: the clock's
# first estimate and margin have run the call ten times already, and a search keeps the GPU busy.
SEARCH_TIMING: dict[str, float] = {"warmup_ms": 25.0, "rep_ms": 100.0, "max_reps": 100}


class TimingRequest(TimingKnobs):
    spec: RunSpec
    target: str = Field(description="'eager', 'compile', 'compile-max-autotune', or a kernel file path")
    exclusive: bool = Field(False, description="take the GPU lock before building anything, not only for the "
                                               "timed calls: the retry after running out of memory")


class TimingResult(Record):
    target: str
    status: TimingStatus
    reason: str = ""
    timing: Timing | None = None
    lock_wait_s: float = 0.0
    first_call_s: float = Field(0.0, description="first call, including Triton/inductor compilation")
    duration_s: float = 0.0
    traceback: str = ""
    checks: list[CheckResult] = Field([], description="checks of the timed target (kernels): harness intact, "
                                                      "no work left running, right output, clocks agree")
    checked_reps: list[int] = Field([], description="the timed repetitions (0-based) whose outputs were "
                                    "checked: kept whole at random after each call, or sampled after every call and "
                                    "chosen by the judge afterwards (``workers.harness.timed_outputs``)")
    sandbox: str = Field("", description="how the timed kernel's process was confined (Landlock), or why not")
    compiled_hash: str | None = Field(None, description="hash of the compiled Triton code one call launches "
                                      "(PTX less debug info, grids, arguments); None on CPU or when unknown")
    steps_s: dict[str, float] = Field({}, description="when each step of the job ended, in seconds from its "
                                      "start: where the time went")
    retried_alone_after: str = Field("", description="a search's timing taken again with the GPU to itself: the "
                                     "first try's status and reason (out of memory, or a check other jobs can fail)")
    library_ops: list[str] | None = Field(None, description="a PyTorch baseline's operators that run a vendor "
                                          "library (``addmm (cuBLAS)``); None: not a baseline, or unknown")

    @property
    def ranked_ms(self) -> float | None:
        """The time to rank by: only a timing that passed its checks has one. A failed timing's numbers
        (a wrong answer from a timed call, clocks that disagree) are kept as evidence, not as a time."""
        return self.timing.median_ms if self.status == "ok" and self.timing is not None else None


class VerifyRequest(Record):
    spec: RunSpec
    kernel_path: str
    seeds: list[int] = [0, 1, 2]
    tolerance: Tolerance
    exclusive: bool = Field(False, description="hold the GPU's measurement lock throughout (no timing or "
                                               "profiling beside it): the retry after running out of memory")
    timing: TimingKnobs | None = Field(None, description="once every check has passed, time the kernel in the "
                                                         "process that ran it (its verdict carries the timing)")
    slots: int = Field(0, ge=0, description="hold one of this many verification places on the GPU (gpu_slot) while "
                                            "the checks and the timing run; 0: none")
    first_call_limit_s: float | None = Field(None, gt=0, description="the longest the kernel's first call (its "
                                             "compile) may take; None: only the child's timeout bounds it")
    session: bool = Field(False, description="a verification of a session (child_process.ChildSession): a "
                          "kernel that passes every check and its timing leaves its runner for the next kernel")
    known_compiled: dict[str, str] = Field({}, description="compiled-code hash -> the candidate of this run that was "
                                           "timed running that code: a kernel whose first call launches one of "
                                           "these is a ``duplicate``, not checked further nor timed (GPU only)")


VerdictStatus = Literal[
    "ok",  # every check passed
    "incorrect",  # ran, but a check failed (values, shape, unwritten output, mutation, PyTorch compute...)
    "compile_failed",  # the file does not import, defines no kernel_function, or Triton fails to compile
    "bind_failed",  # kernel_function's signature cannot be bound to the problem's inputs and parameters
    "runtime_error",  # kernel_function raised (illegal memory access, out of memory, sys.exit, and, under
    # the interpreter, Triton errors that a GPU build reports as compile_failed)
    "crashed",  # the child process died without a verdict (a signal, os._exit)
    "timeout",  # a call after the first hung (its process killed), or the child was killed after the time limit
    "problem_error",  # the problem itself (not the kernel) failed to load or run, or the device is missing
    "duplicate",  # its first call ran code a kernel of the run was timed on (VerifyRequest.known_compiled):
    # not checked further nor timed, and never ranked
]


class Verdict(Record):
    passed: bool
    started_at: float = Field(0.0, description="epoch seconds when the child began work")
    status: VerdictStatus
    reason: str
    kernel_path: str
    checks: list[CheckResult] = []
    max_abs_err: float | None = Field(None, description="worst |out - ref| over all seeds; None if nothing compared")
    max_rel_err: float | None = Field(None, description="worst |out - ref| / |ref| over elements with |ref| > atol")
    seeds: list[int] = []
    spec: RunSpec | None = None
    tolerance: Tolerance | None = None
    duration_s: float = Field(0.0, description="wall time seen by the caller, child start and exit included")
    startup_s: float = Field(0.0, description="from handing the request over to the child's first line of work")
    child_s: float = Field(0.0, description="time inside the child, from the request read to the verdict")
    kernel_call_s: float = Field(0.0, description="time inside kernel_function calls (first call compiles)")
    first_call_s: float = Field(0.0, description="the first call alone: one run, plus the compile where it was "
                                "not compiled ahead of the place (``workers.harness.compile_ahead``)")
    traceback: str = ""
    nudge_seed: int | None = Field(None, description="seed of the random places changed for the small-change "
                                                     "call (drawn per verification, so no kernel can foresee it)")
    sandbox: str = Field("", description="how the kernel's process was confined (Landlock), or why it was not")
    retried_alone: bool = Field(False, description="a first verification ran out of GPU memory beside other "
                                                   "work; this is the second, with the GPU to itself")
    steps_s: dict[str, float] = Field({}, description="when each step of the job ended, in seconds from its "
                                      "start: where the time went")
    timing: TimingResult | None = Field(None, description="the timing asked for with the request, taken after "
                                                          "the checks passed")
    gpu_peak_gb: float | None = Field(None, description="the most GPU memory the job's two processes reserved "
                                      "(PyTorch's allocators, CUDA contexts not counted): how many such jobs fit "
                                      "on one GPU at once; None on the CPU")
    use_wait_s: float = Field(0.0, description="seconds the checks' steps waited for the GPU's use lock: for "
                              "other jobs' timings and profiles to end (gpu_lock.gpu_in_use)")
    compiled_hash: str | None = Field(None, description="hash of the compiled code the first call launched, where "
                                      "the request named known codes (``VerifyRequest.known_compiled``)")
    compiled_ahead: list[str] = Field([], description="the Triton kernels compiled before the job took its place "
                                      "(``workers.harness.compile_ahead``; GPU only)")
    compile_ahead_stopped: str = Field("", description="why that pass stopped before kernel_function returned "
                                       "(the rest compiled in the first call); empty when it did not")


class BenchRow(Record):
    """One timed target of a bench run; kernels carry their verdict (not timed unless it passed)."""

    label: str
    target: str
    verdict: Verdict | None = None
    timing: TimingResult | None = None
    pct_of_floor: float | None = Field(None, description="floor / median: 100 % is the physical limit")
    suspect: bool = Field(False, description="measured faster than the floor allows: not accepted")

    @property
    def ranked_ms(self) -> float | None:
        """The kernel's time, from a timing that passed its checks (``TimingResult.ranked_ms``)."""
        return self.timing.ranked_ms if self.timing is not None else None


class BenchReport(Record):
    problem: str
    spec: RunSpec
    rows: list[BenchRow]
    floor: Floor | None = None
    floor_note: str = Field("", description="why there is no floor (CPU run, unknown GPU)")


class KernelProfile(Record):
    """Nsight Compute metrics of one kernel (its launches within one profiled call, combined)."""

    name: str
    launches: int
    grid: str = ""
    block: str = ""
    metrics: dict[str, float]
    missing: list[str] = Field([], description="requested metrics ncu did not report (or reported as n/a)")


class Profile(Record):
    """One call of kernel_function under ncu: each of its own Triton kernels, and their time-weighted whole."""

    available: bool
    reason: str = Field("", description="why the profile is unavailable; empty when it is available")
    skipped: bool = Field(False, description="not taken on purpose: only the kernels the beam keeps are profiled")
    kernels: list[KernelProfile] = []
    combined: dict[str, float] = Field({}, description="counts summed, rates and percentages time-weighted")
    ignored_kernels: list[str] = Field([], description="kernels in the profiled call that are not the candidate's")
    gpu_name: str = ""
    ncu_version: str = ""
    command: list[str] = []
    duration_s: float = Field(0.0, description="wall time from handing the job to the profiled process to ncu's "
                              "exit (start-up too, when no spare was waiting)")
    steps_s: dict[str, float] = Field({}, description="when each step ended, in seconds from handing the job "
                                      "over: job read (start-up, if no spare was waiting), inputs, first call, "
                                      "profiled call, ncu done")


class ProfileRequest(Record):
    spec: RunSpec
    kernel_path: str
    seed: int = 0
    lock_dir: str = ""
    handed_over_at: float = Field(0.0, description="epoch seconds when the request was handed to the profiled process")


class ProfiledCall(Record):
    """What the profiled child reports besides ncu's own output: the Triton kernels the call launched."""

    status: Literal["ok", "failed"]
    reason: str = ""
    own_kernels: list[str] = []
    lock_wait_s: float = 0.0
    steps_s: dict[str, float] = {}


BottleneckClass = Literal["memory", "compute", "underutilized", "unknown"]


class Roofline(Record):
    """Where a kernel sits against the hardware, from its ncu metrics (speed-of-light percentages)."""

    compute_sol_pct: float | None
    memory_sol_pct: float | None
    bottleneck: BottleneckClass
    at_roofline: bool
    tensor_cores_used: bool | None = Field(None, description="None when the tensor-pipe metric is missing")
    underutilized_below_pct: float
    at_roofline_pct: float
    warnings: list[str] = []


class Work(Record):
    """The least a problem must do: each input (and parameter) read once, each output written once."""

    bytes_moved: int
    flops: int = Field(description="PyTorch's FLOP counter on the reference model (matmul, conv, attention)")


class Floor(Record):
    """A time no correct kernel can beat by much: max(bytes / bandwidth, FLOPs / compute rate)."""

    work: Work
    dram_gbps: float
    tflops: float
    memory_ms: float
    compute_ms: float
    floor_ms: float
    bound: Literal["memory", "compute"]
    peaks_source: str = Field(description="where the bandwidth and rate come from (measured or datasheet)")


class DeviceFacts(Record):
    """What a run's set-up learns of its device: the problem's floor, the GPU's name and memory."""

    floor: Floor | None
    gpu_name: str = Field(description="the GPU's name, or 'cpu (Triton interpreter)'")
    floor_note: str = Field("", description="why there is no floor")
    memory_gb: float | None = Field(None, description="the GPU's total memory; None on the CPU")
    shared_bytes: int | None = Field(None, description="the shared memory one program may take (the opt-in "
                                     "limit Triton checks a launch against); None on the CPU")  # fmt: skip


BenchReport.model_rebuild()


# ----------------------------------------------------------------------------------------- proposers

KernelOrigin = Literal["input", "llm", "tuner", "replay", "compiler"]


class Kernel(Record):
    """A candidate's source. ``hash`` identifies it (whitespace-normalised), ``note`` says what changed."""

    source: str
    origin: KernelOrigin
    parent_hash: str | None = None
    note: str = ""

    @property
    def hash(self) -> str:
        import hashlib

        normalised = "\n".join(line.rstrip() for line in self.source.strip().splitlines())
        return hashlib.sha256(normalised.encode()).hexdigest()[:16]


class Evidence(Record):
    metric: str
    value: float | str | None = None
    interpretation: str = ""


class RootCause(Record):
    cause: str
    evidence: list[Evidence] = []


class Fix(Record):
    fix: str
    rationale: str = ""


class Bottleneck(Record):
    """One diagnosed bottleneck, in the shape KernelAgent's prompts use (so its replies parse too)."""

    category: Literal["memory", "compute", "underutilized"]
    summary: str
    reasoning: str = ""
    root_causes: list[RootCause] = []
    recommended_fixes: list[Fix] = []


class Diagnosis(Record):
    bottlenecks: list[Bottleneck]
    source: Literal["llm", "rules"]
    roofline: Roofline | None = None


class Attempt(Record):
    """What an earlier proposal did, for the next prompt: the change, what came of it, the lesson."""

    kernel_hash: str
    note: str
    outcome: str
    lesson: str = ""

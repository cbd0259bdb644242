"""Verifying a candidate kernel: the caller's side. The kernel itself only runs in a child process.

A worker verifies the optimiser's knob variants in a session (``VerifySession``): one judge and one
runner process for variant after variant, as long as each passes every check and its timing, or stops
as a ``duplicate`` of code the run timed (``runner_reusable``). A variant that fails anything ends both
processes, so the next starts in fresh ones. The runner keeps the first variant's record of the harness and of the threads running before any
kernel was imported, so what a variant changes or leaves running is seen by every later variant's checks.
No two kernels of one process see inputs of the same seed: a kernel that kept an earlier kernel's answers
would find none that fit.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from beamsearch.records.schema import (
    RunSpec,
    TimingKnobs,
    TimingResult,
    Verdict,
    VerifyRequest,
)
from workers.harness.child_process import ChildRun, ChildSession, run_child

DEFAULT_VERIFY_TIMEOUT_S = 300.0
MIN_SEEDS = 3
VERIFY_CHILD = "workers.harness.verify_child"


def runner_reusable(verdict: Verdict) -> bool:
    """Whether a verification's runner may go on to the next kernel of a session: every check passed and,
    where one was asked for, the timing too, or the kernel was a ``duplicate`` whose calls so far passed.
    Anything else (a failed check, an error, a hang, a timing that failed its checks or ran out of memory)
    may have left the process in a state the next kernel should not inherit."""
    return (verdict.passed and timing_passed(verdict.timing)) or verdict.status == "duplicate"


def timing_passed(timing: TimingResult | None) -> bool:
    """The timing after a verification passed, or none was asked for."""
    return timing is None or timing.status == "ok"


def _reusable_json(verdict_json: str) -> bool:
    try:
        return runner_reusable(Verdict.model_validate_json(verdict_json))
    except ValidationError:
        return False


class VerifySession:
    """Verifications on ``device`` that share their processes while each kernel passes or is a duplicate
    (``runner_reusable``, ``verify_kernel(session=...)``); ``close`` ends the processes. Not for several
    threads at once."""

    def __init__(self, device: str) -> None:
        self.child = ChildSession(VERIFY_CHILD, device, again=_reusable_json)
        self.seeds: set[int] = set()  # those the current processes' kernels were given

    def run(self, request: VerifyRequest, timeout_s: float) -> ChildRun:
        """The request, in the session's processes unless one of its seeds was given there before."""
        seeds = set(request.seeds) | ({request.timing.seed} if request.timing is not None else set())
        if self.seeds & seeds:
            self.close()
        if self.child.child is None:
            self.seeds = set()
        self.seeds |= seeds
        return self.child.run(request, timeout_s)

    @property
    def processes(self) -> int:
        """Judges started (or taken from the spares) over the session's life."""
        return self.child.processes

    def close(self) -> None:
        self.child.close()
        self.seeds = set()


def verify_kernel(
    spec: RunSpec,
    kernel_path: str,
    *,
    seeds: list[int] | None = None,
    timeout_s: float = DEFAULT_VERIFY_TIMEOUT_S,
    exclusive: bool = False,
    timing: TimingKnobs | None = None,
    slots: int = 0,
    first_call_limit_s: float | None = None,
    session: VerifySession | None = None,
    known_compiled: dict[str, str] | None = None,
) -> Verdict:
    """Run every check on ``kernel_path`` in a child process and return the verdict; with ``timing``,
    a kernel that passes is then timed in the same process (``Verdict.timing``). With ``slots``, the checks
    and the timing wait for one of that many verification places on the GPU (``gpu_slot``). With
    ``first_call_limit_s``, a first call (the compile) that takes longer is a ``timeout``. With
    ``session``, in the session's processes while the kernels before passed (``VerifySession``). With
    ``known_compiled`` (compiled-code hash -> candidate), a kernel whose first call runs one of those codes
    is a ``duplicate`` of it, not checked further nor timed (GPU only).

    Never raises for anything the kernel does: a hang becomes ``timeout``, a dead child ``crashed``.
    """
    seeds = seeds or [0, 1, 2]
    if len(set(seeds)) < MIN_SEEDS:
        raise ValueError(f"verification needs at least {MIN_SEEDS} distinct seeds of fresh inputs, got {seeds}")
    kernel_path = str(Path(kernel_path).expanduser().resolve())
    request = VerifyRequest(
        spec=spec,
        kernel_path=kernel_path,
        seeds=seeds,
        tolerance=spec.values_tolerance(),
        exclusive=exclusive,
        timing=timing,
        slots=slots,
        first_call_limit_s=first_call_limit_s,
        session=session is not None,
        known_compiled=known_compiled or {},
    )
    if session is not None:
        run = session.run(request, timeout_s)
    else:
        run = run_child(VERIFY_CHILD, request, timeout_s, spec.device)
    common = dict(kernel_path=kernel_path, seeds=request.seeds, spec=spec, tolerance=request.tolerance,
                  duration_s=run.duration_s, traceback=run.output_tail)  # fmt: skip
    if run.status == "timeout":
        return Verdict(passed=False, status="timeout", reason=f"no verdict within {timeout_s:.0f} s", **common)
    if run.status == "crashed":
        return Verdict(passed=False, status="crashed", reason=run.describe_death(), **common)
    try:
        verdict = Verdict.model_validate_json(run.result_json)
    except ValidationError as e:
        return Verdict(passed=False, status="crashed", reason=f"unreadable verdict from the child: {e}", **common)
    startup_s = verdict.started_at - run.requested_at if verdict.started_at else 0.0
    return verdict.model_copy(update={"duration_s": run.duration_s, "startup_s": startup_s})

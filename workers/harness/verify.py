"""Verifying a candidate kernel: the caller's side. The kernel itself only runs in a child process."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from beamsearch.schema import DEFAULT_TOLERANCES, RunSpec, TimingKnobs, Tolerance, Verdict, VerifyRequest
from workers.harness.child_process import run_child

DEFAULT_VERIFY_TIMEOUT_S = 300.0
MIN_SEEDS = 3


def verify_kernel(
    spec: RunSpec,
    kernel_path: str,
    *,
    seeds: list[int] | None = None,
    tolerance: Tolerance | None = None,
    timeout_s: float = DEFAULT_VERIFY_TIMEOUT_S,
    exclusive: bool = False,
    timing: TimingKnobs | None = None,
    slots: int = 0,
    first_call_limit_s: float | None = None,
) -> Verdict:
    """Run every check on ``kernel_path`` in a child process and return the verdict; with ``timing``,
    a kernel that passes is then timed in the same process (``Verdict.timing``). With ``slots``, the checks
    and the timing wait for one of that many verification places on the GPU (``gpu_slot``). With
    ``first_call_limit_s``, a first call (the compile) that takes longer is a ``timeout``.

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
        tolerance=tolerance or DEFAULT_TOLERANCES[spec.dtype],
        exclusive=exclusive,
        timing=timing,
        slots=slots,
        first_call_limit_s=first_call_limit_s,
    )
    run = run_child("workers.harness.verify_child", request, timeout_s, spec.device)
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

"""Timing a target: the caller's side. The target runs in a child process, under the device lock."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from beamsearch.records.schema import RunSpec, TimingRequest, TimingResult
from workers.harness.child_process import run_child

DEFAULT_TIMING_TIMEOUT_S = 900.0  # torch.compile with max-autotune can take minutes
BUILTIN_TARGETS = ("eager", "compile", "compile-max-autotune")


def time_target(spec: RunSpec, target: str, *, timeout_s: float = DEFAULT_TIMING_TIMEOUT_S, **knobs: object) -> TimingResult:
    """Time ``target`` (a built-in name or a kernel path). Never raises for what the target does.

    ``knobs`` are TimingRequest fields (seed, warmup_ms, rep_ms, min_reps, max_reps, lock_dir).
    """
    if target not in BUILTIN_TARGETS:
        target = str(Path(target).expanduser().resolve())
    request = TimingRequest(spec=spec, target=target, **knobs)
    run = run_child("workers.harness.timing_child", request, timeout_s, spec.device)
    if run.status == "timeout":
        return TimingResult(target=target, status="timeout", reason=f"not timed within {timeout_s:.0f} s",
                            duration_s=run.duration_s, traceback=run.output_tail)  # fmt: skip
    if run.status == "crashed":
        return TimingResult(target=target, status="crashed", reason=run.describe_death(),
                            duration_s=run.duration_s, traceback=run.output_tail)  # fmt: skip
    try:
        return TimingResult.model_validate_json(run.result_json)
    except ValidationError as e:
        return TimingResult(target=target, status="crashed", reason=f"unreadable timing from the child: {e}",
                            duration_s=run.duration_s, traceback=run.output_tail)  # fmt: skip

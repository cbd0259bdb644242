"""Child process: build one timing target on the problem's inputs and time it under the device lock.

Targets: ``eager`` (the model in the dtype under test), ``compile`` (``torch.compile`` default),
``compile-max-autotune`` (``mode="max-autotune-no-cudagraphs"``), or a kernel file path (bound like in
verification). The first call, which compiles, runs before the lock is taken: the lock covers only the
measurement. Run only through ``workers.timing.time_target``.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

from beamsearch.schema import TimingRequest, TimingResult
from workers.binding import bind, model_values
from workers.child_process import serve
from workers.clock import measure
from workers.gpu_lock import gpu_lock
from workers.problem_instance import (
    ProblemInstance,
    instantiate,
    load_kernel_function,
    load_problem_module,
    select_device,
)

COMPILE_MODES = {"compile": None, "compile-max-autotune": "max-autotune-no-cudagraphs"}


def build_callable(target: str, instance: ProblemInstance) -> Callable[[], Any]:
    model, inputs = instance.model, instance.inputs
    if target == "eager":
        return lambda: model(*inputs)
    if target in COMPILE_MODES:
        compiled = torch.compile(model, mode=COMPILE_MODES[target])
        return lambda: compiled(*inputs)
    return bind(load_kernel_function(target), inputs, model_values(model))


def time_in_child(req: TimingRequest) -> TimingResult:
    start = time.perf_counter()
    spec = req.spec
    try:
        if spec.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(f"device {spec.device} asked for, but no CUDA GPU is visible")
        select_device(spec)
        instance = instantiate(load_problem_module(spec), spec, req.seed)
        with torch.no_grad():
            fn = build_callable(req.target, instance)
            first = time.perf_counter()
            _run_synchronised(fn, spec.device)
            first_call_s = time.perf_counter() - first
            with gpu_lock(spec.device, req.lock_dir) as waited_s:
                timing = measure(
                    fn, spec.device, dtype=spec.dtype, shapes=spec.shapes, warmup_ms=req.warmup_ms,
                    rep_ms=req.rep_ms, min_reps=req.min_reps, max_reps=req.max_reps,
                )  # fmt: skip
    except BaseException as e:  # noqa: BLE001 - whatever the target does, report it
        return TimingResult(
            target=req.target, status="failed", reason=f"{type(e).__name__}: {e}".splitlines()[0][:500],
            duration_s=time.perf_counter() - start, traceback=traceback.format_exc(),
        )  # fmt: skip
    return TimingResult(
        target=req.target, status="ok", timing=timing, lock_wait_s=waited_s, first_call_s=first_call_s,
        duration_s=time.perf_counter() - start,
    )  # fmt: skip


def _run_synchronised(fn: Callable[[], Any], device: str) -> None:
    fn()
    if device.startswith("cuda"):
        torch.cuda.synchronize()


if __name__ == "__main__":
    serve(TimingRequest, time_in_child)

"""Child process: build one timing target on the problem's inputs and time it under the device lock.

Targets: ``eager`` (the model in the dtype under test), ``compile`` (``torch.compile`` default),
``compile-max-autotune`` (``mode="max-autotune-no-cudagraphs"``), or a kernel file path (bound like in
verification). The first call, which compiles, runs before the lock is taken: the lock covers only the
measurement. Run only through ``workers.harness.timing.time_target``.

Before each repetition a fraction of the input elements change (``workers.harness.timed_outputs``), so no two
timed calls see the same input: caching answers by input values gains nothing here.

A kernel file is timed the way a search times a verified candidate (``verify_child.time_after_checks``):
it is imported and called in a runner (``kernel_runner``) forked when this process starts, before it has
touched a GPU or read its job, and this process is the judge. The runner confines itself (Landlock) and
reports what it saw (the harness replaced, work left running); on a GPU it hashes the compiled code one
call launches, then times the calls while this process holds the lock, keeping copies of the outputs of
a few repetitions chosen at random after each call returned and a sample of every repetition's outputs.
The judge checks the copies and the samples of repetitions it chooses afterwards against references
it makes from its own copies of the inputs and the model, in its own process, where nothing the kernel
does to PyTorch (dispatch modes, replaced operators) can reach them. The CUDA events must agree with the
host clock and most repetitions must end on the call's own stream. A failure is a ``failed`` result that
keeps the numbers.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

from beamsearch.records.schema import TimingKnobs, TimingRequest, TimingResult, VerifyRequest
from workers.harness.binding import model_values
from workers.harness.child_process import adopt_orphans, end_adopted, serve
from workers.harness.clock import measure
from workers.harness.compare import warm_up_on_gpu
from workers.harness.gpu_lock import gpu_in_use, gpu_lock
from workers.harness.kernel_runner import KernelProcess
from workers.harness.library_ops import library_ops_of
from workers.harness.problem_instance import ProblemInstance, instantiate, load_problem_module, select_device
from workers.harness.runner_messages import CallReply
from workers.harness.steps import Steps
from workers.harness.timed_outputs import InputNudger
from workers.harness.verify_child import (
    Checks,
    Failed,
    _check_evidence,
    _Kernel,
    _SharedPool,
    _undumpable,
    time_after_checks,
)

COMPILE_MODES = {"compile": None, "compile-max-autotune": "max-autotune-no-cudagraphs"}
BUILT_IN = {"eager", *COMPILE_MODES}


def build_callable(target: str, instance: ProblemInstance) -> Callable[[], Any]:
    model, inputs = instance.model, instance.inputs
    if target == "eager":
        return lambda: model(*inputs)
    compiled = torch.compile(model, mode=COMPILE_MODES[target])
    return lambda: compiled(*inputs)


def time_in_child(req: TimingRequest, runner: KernelProcess) -> TimingResult:
    with contextlib.ExitStack() as alone:  # the exclusive retry's lock, held to the end
        try:
            if req.target in BUILT_IN:
                runner.stop()  # PyTorch's own code runs here; no kernel file to keep apart
                return _time_built_in(req, alone)
            return _time_kernel_file(req, runner, alone)
        finally:
            runner.stop()  # before the result is written: nothing of the kernel's runs past this point
            if req.target not in BUILT_IN:  # (PyTorch's compile may keep its own workers)
                end_adopted()  # what this judge adopted from a runner that ended early


def _time_kernel_file(req: TimingRequest, runner: KernelProcess, alone: contextlib.ExitStack) -> TimingResult:
    """Load and call the kernel once in the runner (compiling it), then time it as a search does."""
    start = time.perf_counter()
    spec = req.spec
    checks = Checks()  # started now: its steps count from this job's start
    checks.steps = Steps(start)
    kernel = _Kernel(runner)
    waited_s = first_call_s = 0.0
    try:
        if spec.device.startswith("cuda") and not torch.cuda.is_available():
            raise Failed("failed", f"device {spec.device} asked for, but no CUDA GPU is visible")
        select_device(spec)
        if req.exclusive:
            waited_s = alone.enter_context(gpu_lock(spec.device, req.lock_dir))
        alone.enter_context(gpu_in_use(spec.device, req.lock_dir))  # set aside while measuring (gpu_lock)
        module = load_problem_module(spec)
        kernel.load(req.target, spec.device, checks)
        checks.steps.end("kernel_imported")
        pool = _SharedPool(spec.device)
        with pool:
            instance = instantiate(module, spec, req.seed)
        first = time.perf_counter()
        reply, _ = kernel.call(instance.inputs, model_values(instance.model), "its first call", observe=False)
        assert isinstance(reply, CallReply)  # read_reply's type for a call
        _check_evidence(reply.report, checks, "its first call", reply.report.threads_started)
        first_call_s = time.perf_counter() - first
        checks.steps.end("first_call")
        del instance  # the timing makes its own
        knobs = TimingKnobs.model_validate(req.model_dump(include=set(TimingKnobs.model_fields)))
        timed = VerifyRequest(spec=spec, kernel_path=req.target, tolerance=spec.values_tolerance(),
                              timing=knobs, exclusive=req.exclusive)  # fmt: skip
        offset_s = time.perf_counter() - start
        result = time_after_checks(timed, kernel, module, pool, checks.sandbox)
    except Failed as f:
        status = f.status if f.status in ("crashed", "timeout") else "failed"
        return TimingResult(target=req.target, status=status, reason=f.reason[:900], lock_wait_s=waited_s,
                            first_call_s=first_call_s, duration_s=time.perf_counter() - start, traceback=f.tb,
                            checks=checks.results, sandbox=checks.sandbox or kernel.sandbox,
                            steps_s=checks.steps.ended)  # fmt: skip
    except Exception as e:  # the harness's own steps (problem, inputs) failed, e.g. out of memory
        return TimingResult(target=req.target, status="failed", reason=f"{type(e).__name__}: {e}".splitlines()[0][:500],
                            lock_wait_s=waited_s, first_call_s=first_call_s, duration_s=time.perf_counter() - start,
                            traceback=traceback.format_exc(), checks=checks.results, sandbox=checks.sandbox,
                            steps_s=checks.steps.ended)  # fmt: skip
    steps = {**checks.steps.ended, **{k: round(v + offset_s, 3) for k, v in result.steps_s.items()}}
    return result.model_copy(update={"lock_wait_s": result.lock_wait_s + waited_s, "first_call_s": first_call_s,
                                     "duration_s": time.perf_counter() - start, "steps_s": steps})  # fmt: skip


def _time_built_in(req: TimingRequest, alone: contextlib.ExitStack) -> TimingResult:
    start = time.perf_counter()
    steps = Steps(start)
    spec = req.spec
    waited_s = first_call_s = 0.0
    try:
        if spec.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(f"device {spec.device} asked for, but no CUDA GPU is visible")
        select_device(spec)
        if req.exclusive:
            waited_s = alone.enter_context(gpu_lock(spec.device, req.lock_dir))
        alone.enter_context(gpu_in_use(spec.device, req.lock_dir))  # set aside while measuring (gpu_lock)
        instance = instantiate(load_problem_module(spec), spec, req.seed)
        steps.end("inputs")
        with torch.no_grad():
            fn = build_callable(req.target, instance)
            steps.end("target_built")
            first = time.perf_counter()
            fn()
            if spec.device.startswith("cuda"):
                torch.cuda.synchronize()
            first_call_s = time.perf_counter() - first
            steps.end("first_call")
            # one more call, before the lock: which of its work is a vendor library's (named by CUDA's libraries)
            library = library_ops_of(fn) if spec.device.startswith("cuda") else None
            steps.end("library_ops")
            nudger = InputNudger(instance.inputs)  # as for kernels: the same work between repetitions
            with contextlib.nullcontext(0.0) if req.exclusive else gpu_lock(spec.device, req.lock_dir) as waited:
                waited_s += waited
                steps.end("locked")
                timing = measure(fn, spec.device, dtype=spec.dtype, shapes=spec.shapes, warmup_ms=req.warmup_ms,
                                 rep_ms=req.rep_ms, min_reps=req.min_reps, max_reps=req.max_reps, between_reps=nudger,
                                 screen_above_ms=req.screen_above_ms)  # fmt: skip
            steps.end("measured")
    except BaseException as e:  # noqa: BLE001 - whatever the target does, report it
        return TimingResult(target=req.target, status="failed", reason=f"{type(e).__name__}: {e}".splitlines()[0][:500],
                            duration_s=time.perf_counter() - start, traceback=traceback.format_exc(),
                            steps_s=steps.ended)  # fmt: skip
    return TimingResult(target=req.target, status="ok", timing=timing, lock_wait_s=waited_s, first_call_s=first_call_s,
                        duration_s=time.perf_counter() - start, steps_s=steps.ended, library_ops=library)  # fmt: skip


if __name__ == "__main__":
    adopt_orphans()  # a kernel's process whose runner died comes here, not to init, and is ended with the job
    _runner = KernelProcess.fork()  # before the job and any GPU work: the fork inherits neither
    _undumpable()
    serve(TimingRequest, lambda request: time_in_child(request, _runner), warm_up=warm_up_on_gpu)

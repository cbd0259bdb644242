"""Child process: build one timing target on the problem's inputs and time it under the device lock.

Targets: ``eager`` (the model in the dtype under test), ``compile`` (``torch.compile`` default),
``compile-max-autotune`` (``mode="max-autotune-no-cudagraphs"``), or a kernel file path (bound like in
verification). The first call, which compiles, runs before the lock is taken: the lock covers only the
measurement. On a GPU a kernel file's second call, also before the lock, hashes the compiled code it
launches (``workers.compiled_code``), so the driver can spot two sources that compile to one kernel.
Run only through ``workers.timing.time_target``.

Before each repetition a fraction of the input elements change (``workers.timed_outputs``), so no two
timed calls see the same input: caching answers by input values gains nothing here. A kernel file is
timed in its own process, so it gets the guards that fit there (``KernelWatch``): before it is imported,
the harness is snapshotted, the process confined (Landlock), and the inputs and the model copied;
afterwards the snapshot must be unchanged, no thread or process it started may be alive, the outputs of
the timed repetitions kept at random (chosen after each call returned) must match references made from
those copies for the inputs each repetition saw, the CUDA events must agree with the host clock, and
most repetitions must end on the call's own stream. A failure is a ``failed`` result that keeps the
numbers. The kernel shares this process with the references, as it shares its runner with the kept
copies in a search: what it cannot know during a call is whether that call will be checked.
"""

from __future__ import annotations

import contextlib
import copy
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from beamsearch.schema import DEFAULT_TOLERANCES, CheckResult, RunSpec, Timing, TimingRequest, TimingResult
from workers.binding import bind, model_values
from workers.child_process import serve
from workers.clock import measure, timing_checks
from workers.compiled_code import launch_hash
from workers.gpu_lock import gpu_lock, lock_folder
from workers.integrity import BackgroundWork, Snapshot, ThreadStarts, install_thread_tripwire
from workers.problem_instance import (
    ProblemInstance,
    instantiate,
    load_kernel_function,
    load_problem_module,
    select_device,
)
from workers.sandbox import confine_job
from workers.steps import Steps
from workers.timed_outputs import InputNudger, KeptOutputs, wrong_kept

COMPILE_MODES = {"compile": None, "compile-max-autotune": "max-autotune-no-cudagraphs"}
_synchronize = torch.cuda.synchronize  # taken before any kernel is imported


class Rejected(Exception):
    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"{check}: {detail}")
        self.check, self.detail = check, detail


def build_callable(target: str, instance: ProblemInstance) -> Callable[[], Any]:
    model, inputs = instance.model, instance.inputs
    if target == "eager":
        return lambda: model(*inputs)
    if target in COMPILE_MODES:
        compiled = torch.compile(model, mode=COMPILE_MODES[target])
        return lambda: compiled(*inputs)
    return bind(load_kernel_function(target), inputs, model_values(model))


class KernelWatch:
    """What a timed kernel file is checked against; made before the kernel is imported."""

    def __init__(self, instance: ProblemInstance, spec: RunSpec, lock_dir: str) -> None:
        self.spec = spec
        self.checks: list[CheckResult] = []
        self.tolerance = DEFAULT_TOLERANCES[spec.dtype]
        # Copies made before the kernel is imported: the timed repetitions' references come from them.
        self.pristine = [t.clone() if isinstance(t, torch.Tensor) else t for t in instance.inputs]
        self.model = copy.deepcopy(instance.model)
        install_thread_tripwire()
        folder = Path.cwd().parent  # the job's folder: this process writes its result file there
        self.sandbox = confine_job(Path.cwd(), [folder, lock_folder(lock_dir)])
        self.snapshot = Snapshot.take()
        self.background = BackgroundWork()
        self.threads = ThreadStarts()

    def record(self, name: str, passed: bool, detail: str) -> None:
        """Keep one line per check: its first pass, or the failure that ends timing."""
        if passed and any(c.name == name for c in self.checks):
            return
        self.checks.append(CheckResult(name=name, passed=passed, detail="" if passed else detail))
        if not passed:
            raise Rejected(name, detail)

    def check_process(self, where: str) -> None:
        changed = self.snapshot.changed()
        self.record("harness_intact", not changed,
                    f"the kernel changed the harness in its process ({where}): "
                    + "; ".join(f"{name} was replaced" for name in changed)[:800])  # fmt: skip
        left = self.background.left_running()
        if self.threads.n:
            left.insert(0, f"{self.threads.n} thread(s) started during calls")
        self.record("background_work", not left,
                    f"kernel_function left work running after it returned ({where}): {', '.join(left)[:500]}")  # fmt: skip

    def check_kept(self, kept: KeptOutputs) -> None:
        """The outputs of the timed repetitions kept at random must match references for their inputs."""
        problem = wrong_kept(kept.kept, kept.offered, self.pristine, self.model, self.spec, self.tolerance)
        self.record("timed_outputs", problem is None, problem or "")

    def check_timing(self, timing: Timing, device: str, screen_above_ms: float | None) -> None:
        for check in timing_checks(timing, device, screen_above_ms):
            self.record(check.name, check.passed, check.detail)


def time_in_child(req: TimingRequest) -> TimingResult:
    with contextlib.ExitStack() as alone:  # the exclusive retry's lock, held to the end
        return _time_in_child(req, alone)


def _time_in_child(req: TimingRequest, alone: contextlib.ExitStack) -> TimingResult:
    start = time.perf_counter()
    steps = Steps(start)
    spec = req.spec
    watch: KernelWatch | None = None
    timing: Timing | None = None
    waited_s = first_call_s = 0.0
    compiled_hash: str | None = None
    checked: list[int] = []
    try:
        if spec.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(f"device {spec.device} asked for, but no CUDA GPU is visible")
        select_device(spec)
        if req.exclusive:
            waited_s = alone.enter_context(gpu_lock(spec.device, req.lock_dir))
        instance = instantiate(load_problem_module(spec), spec, req.seed)
        steps.end("inputs")
        with torch.no_grad():
            if req.target != "eager" and req.target not in COMPILE_MODES:
                watch = KernelWatch(instance, spec, req.lock_dir)
                steps.end("watch_ready")
            fn = build_callable(req.target, instance)
            if watch is not None:
                watch.check_process("at import")
            steps.end("target_built")
            first = time.perf_counter()
            with watch.threads if watch is not None else contextlib.nullcontext():
                _run_synchronised(fn, spec.device)
            first_call_s = time.perf_counter() - first
            steps.end("first_call")
            if watch is not None:
                watch.check_process("first call")
                if spec.device.startswith("cuda"):
                    with watch.threads, contextlib.suppress(Exception):  # a hash is a bonus, never a failure
                        compiled_hash = launch_hash(fn, _synchronize)
                    watch.check_process("the call that hashes the compiled code")
                    steps.end("hashed")
            nudger = InputNudger(instance.inputs)
            kept = KeptOutputs(lambda: nudger.seed)
            with contextlib.nullcontext(0.0) if req.exclusive else gpu_lock(spec.device, req.lock_dir) as waited:
                waited_s += waited
                steps.end("locked")
                with watch.threads if watch is not None else contextlib.nullcontext():
                    timing = measure(
                        fn, spec.device, dtype=spec.dtype, shapes=spec.shapes, warmup_ms=req.warmup_ms,
                        rep_ms=req.rep_ms, min_reps=req.min_reps, max_reps=req.max_reps, between_reps=nudger,
                        after_rep=kept.offer if watch is not None else None, screen_above_ms=req.screen_above_ms,
                    )  # fmt: skip
            steps.end("measured")
            nudger.restore()
            if watch is not None:
                watch.check_process("during the timed calls")
                checked = sorted(k.rep for k in kept.kept)
                watch.check_kept(kept)
                watch.check_timing(timing, spec.device, req.screen_above_ms)
                steps.end("checked")
    except Rejected as r:
        return TimingResult(
            target=req.target, status="failed", reason=str(r)[:900], timing=timing, lock_wait_s=waited_s,
            first_call_s=first_call_s, duration_s=time.perf_counter() - start, checks=watch.checks if watch else [],
            sandbox=watch.sandbox if watch else "", checked_reps=checked, steps_s=steps.ended,
        )  # fmt: skip
    except BaseException as e:  # noqa: BLE001 - whatever the target does, report it
        return TimingResult(
            target=req.target, status="failed", reason=f"{type(e).__name__}: {e}".splitlines()[0][:500],
            duration_s=time.perf_counter() - start, traceback=traceback.format_exc(),
            checks=watch.checks if watch else [], sandbox=watch.sandbox if watch else "",
            steps_s=steps.ended,
        )  # fmt: skip
    return TimingResult(
        target=req.target, status="ok", timing=timing, lock_wait_s=waited_s, first_call_s=first_call_s,
        duration_s=time.perf_counter() - start, checks=watch.checks if watch else [],
        sandbox=watch.sandbox if watch else "", compiled_hash=compiled_hash, steps_s=steps.ended,
        checked_reps=checked,
    )  # fmt: skip


def _run_synchronised(fn: Callable[[], Any], device: str) -> None:
    fn()
    if device.startswith("cuda"):
        _synchronize()


if __name__ == "__main__":
    serve(TimingRequest, time_in_child)

"""Child process: verify a candidate kernel and write its Verdict, without ever running its code.

Run only through ``workers.harness.verify.verify_kernel``, which hands it a request (``child_process.serve``).
This process is the *judge*: it builds the model, the inputs and the references, and compares. The
kernel is imported and called in a second process, the *runner* (``kernel_runner``), forked at
start-up before the judge has read its job or its signing key. Inputs and outputs are shared memory
between the two, so nothing is copied and the kernel's writes into its inputs are seen. Whatever the
kernel does to its own process (patching ``torch.allclose``, popping our operator guard, forging a
result file, killing itself) cannot change the comparison or the signed verdict made here.

On a GPU the runner first compiles what the kernel launches for the inputs' shapes (``compile_ahead``),
before the job takes its place: the first call then loads compiled code instead of compiling it while
other jobs wait. For each seed: build the model and fresh inputs, compute the reference one precision up, have the
runner call the kernel under its observers (fresh allocations poisoned), then check what they saw
(tampering, work left running, PyTorch compute, host-side reads), structure, unwritten elements,
non-finite values, tolerance and unchanged inputs. On the first seed, three more calls: the same tensors
with other values written in place (caching by pointer), fresh tensors holding those values with a few
elements changed (a cache keyed on a sample of the input), and fresh tensors with exactly those values
again (a cache keyed on all of it hands back the previous output's memory).

The checks and the timing run holding one of the GPU's verification places (``gpu_slot``, a memory
budget) when the request names them. When the request asks for a timing and every check has
passed, the runner times the kernel on fresh inputs (``time_after_checks``) while this process holds
the GPU's measurement lock, and hands back copies of the outputs of a few timed repetitions, chosen at
random after each call returned, and a sample of every repetition's outputs (``workers.harness.timed_outputs``).
Once the lock is released, each copy, and the samples of repetitions chosen here then, must match a
reference made here for the inputs that repetition saw, from copies of the inputs and the model this
process made before the timing. A timing that fails its checks leaves the verdict passed and is itself
``failed``, as from the timing child.

Every request after the kernel's first call has a deadline (``HANG_SLACK_S``, ``HANG_FACTOR``): a
runner that misses it is killed then and there, inside the lock when it was timing, and the verdict (or
the timing) is ``timeout``.

With ``VerifyRequest.known_compiled`` (GPU only), the first seed's checked call is followed by one that
hashes the compiled code it launches; a code the run has timed ends the job as ``duplicate``.

In a session (``VerifyRequest.session``), a kernel that passed every check and its timing, or stopped as
a duplicate (``verify.runner_reusable``), leaves the runner alive and this process waiting for the next
request, the next kernel of the same worker; any other verdict stops the runner and ends the process as
before.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import os
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from pydantic import ValidationError

from beamsearch.records.schema import (
    DEFAULT_TOLERANCES,
    CheckResult,
    RunSpec,
    Timing,
    TimingResult,
    Tolerance,
    Verdict,
    VerifyRequest,
)
from workers.harness.binding import model_values
from workers.harness.child_process import (
    TAIL_CHARS,
    adopt_orphans,
    end_adopted,
    serve,
    use_one_work_queue,
)
from workers.harness.clock import expected_measure_s, timing_checks
from workers.harness.compare import Comparison, compare, warm_up_on_gpu
from workers.harness.gpu_lock import gpu_in_use, gpu_lock, gpu_slot
from workers.harness.kernel_runner import (
    KernelProcess,
    KernelProcessDied,
    KernelProcessHung,
    release_memory,
    strays,
)
from workers.harness.problem_instance import (
    TORCH_DTYPES,
    ProblemInstance,
    ProblemLoadError,
    fresh_values_into,
    instantiate,
    load_problem_module,
    nudge_seed,
    perturb_,
    reference_copies,
    reference_output,
    select_device,
    shapes_instance,
)
from workers.harness.runner_messages import (
    REQUEST,
    CallReply,
    CallRequest,
    CompileReply,
    CompileRequest,
    ErrorReply,
    Evidence,
    HashReply,
    LoadReply,
    LoadRequest,
    Message,
    Note,
    ReleaseReply,
    ReleaseRequest,
    Request,
    TimeReply,
    describe_invalid,
    read_reply,
)
from workers.harness.shared_tensors import ProtocolError, encode_inputs
from workers.harness.steps import Steps
from workers.harness.timed_outputs import Kept, Sampled, SampledRep, choose_checked, wrong_timed
from workers.harness.torch_guard import as_bits, describe
from workers.harness.verify import runner_reusable, timing_passed

POINTER_CHECK_SEED_OFFSET = 1000
# A request after the first call is a hang once it takes HANG_SLACK_S plus HANG_FACTOR times what the
# calls so far predict. The first call has no such bound (it compiles, perhaps autotunes): the child's
# own timeout covers it. The bound matters most for the timing, which holds the GPU's measurement lock:
# a kernel that deadlocks only now and then (a race on a spin-wait) must not keep every other worker's
# timing waiting for the child's timeout.
HANG_SLACK_S = 10.0
HANG_FACTOR = 10.0
# Looser rules a values failure's note tries on PyTorch's own result: a few times the rule is the dtype's
# rounding piling up (a GEMM's bf16 output normalised over 16 channels needed 4x); far past that is an
# algorithm off in the dtype (PyTorch's bf16 cumsum over 32,768 elements, off by thousands).
LOOSER_RULE_FACTORS = (2, 4, 8, 16)


class Failed(Exception):
    """A verdict reached before the end: carries the status and the reason."""

    def __init__(self, status: str, reason: str, tb: str = "") -> None:
        super().__init__(reason)
        self.status, self.reason, self.tb = status, reason, tb


class Checks:
    def __init__(self) -> None:
        self.results: list[CheckResult] = []
        self.max_abs_err: float | None = None
        self.max_rel_err: float | None = None
        self.call_times_s: list[float] = []
        self.nudge_seed: int | None = None
        self.compiled_hash: str | None = None
        self.compiled_ahead: list[str] = []
        self.compile_ahead_stopped = ""
        self.sandbox = ""
        self.steps = Steps()

    def record(self, name: str, passed: bool, detail: str = "") -> None:
        """Keep one line per check: its first pass, or the failure that ends verification."""
        if passed and any(r.name == name for r in self.results):
            return
        self.results.append(CheckResult(name=name, passed=passed, detail="" if passed else detail))
        if not passed:
            raise Failed("incorrect", f"{name}: {detail}")

    def errors(self, abs_err: float, rel_err: float) -> None:
        self.max_abs_err = max(self.max_abs_err or 0.0, abs_err)
        self.max_rel_err = max(self.max_rel_err or 0.0, rel_err)


def verify(req: VerifyRequest, runner: KernelProcess) -> Verdict:
    started_at = time.time()
    start = time.perf_counter()
    checks = Checks()
    status, reason, tb = "ok", "all checks passed", ""
    timing: TimingResult | None = None
    lock_dir = req.timing.lock_dir if req.timing is not None else ""  # one folder for every lock of this job
    kernel = _Kernel(runner, req.first_call_limit_s)
    use_waits_s: list[float] = []
    module = pool = None  # the problem and its memory pool; a session drops them before it frees memory

    @contextlib.contextmanager
    def use() -> Iterator[None]:
        with gpu_in_use(req.spec.device, lock_dir) as waited:
            use_waits_s.append(waited)
            yield

    try:
        with gpu_lock(req.spec.device, lock_dir) if req.exclusive else contextlib.nullcontext():
            # The slot is a memory budget (``SearchConfig.verify_per_gpu``), so it covers the timing too:
            # the timing's inputs, their pristine copies and the kept outputs are held while it waits for
            # the measurement lock.
            module = _load(req, checks, kernel, use)
            _compile_ahead(req, module, kernel, checks)
            with gpu_slot(req.spec.device, "verify", req.slots):
                checks.steps.end("slot_taken")
                pool = _verify(req, module, checks, kernel, use)
                if req.timing is not None:
                    with gpu_in_use(req.spec.device, lock_dir):  # set aside while measuring (gpu_lock)
                        timing = time_after_checks(req, kernel, module, pool, checks.sandbox)
                    checks.steps.end("timed")
                if req.session and timing_passed(timing):
                    with use():  # freeing memory is GPU work too
                        _release(kernel, checks)
    except Failed as f:
        status, reason, tb = f.status, f.reason, f.tb
        if status == "duplicate" and req.session:
            try:  # its runner goes on to the next kernel, as a passed kernel's does, if nothing is left running
                with use():
                    _release(kernel, checks)
            except Failed as g:
                status, reason, tb = g.status, g.reason, g.tb
    except Exception as e:  # the harness's own steps (inputs, copies, references) failed, e.g. out of memory
        status, reason, tb = "problem_error", f"verification could not run: {type(e).__name__}: {e}"[:500], traceback.format_exc()
    except BaseException:
        runner.stop()
        end_adopted()
        raise
    verdict = Verdict(
        started_at=started_at,
        passed=status == "ok",
        status=status,
        reason=reason,
        kernel_path=req.kernel_path,
        checks=checks.results,
        max_abs_err=checks.max_abs_err,
        max_rel_err=checks.max_rel_err,
        seeds=req.seeds,
        spec=req.spec,
        tolerance=req.tolerance,
        child_s=time.perf_counter() - start,
        kernel_call_s=sum(checks.call_times_s),
        first_call_s=checks.call_times_s[0] if checks.call_times_s else 0.0,
        traceback=tb,
        nudge_seed=checks.nudge_seed,
        sandbox=checks.sandbox,
        steps_s=checks.steps.ended,
        timing=timing,
        gpu_peak_gb=_peak_gb(req.spec.device, kernel),
        use_wait_s=sum(use_waits_s),
        compiled_hash=checks.compiled_hash,
        compiled_ahead=checks.compiled_ahead,
        compile_ahead_stopped=checks.compile_ahead_stopped,
    )
    if req.session and runner_reusable(verdict):  # the runner waits, idle, for the session's next kernel
        del module, pool  # the pool's segments (inputs shared with the runner) are given back only with it
        with use():
            release_memory(req.spec.device)  # and the next kernel's peak is its own: places are budgeted by it
        checks.steps.end("runner_kept")
    else:
        runner.stop()  # before the verdict is written: nothing of the kernel's runs past this point
        end_adopted()  # what this judge adopted from a runner that ended before it was stopped
        checks.steps.end("runner_stopped")
    return verdict.model_copy(update={"steps_s": checks.steps.ended})


def _release(kernel: _Kernel, checks: Checks) -> None:
    """A session's kernel passed (or stopped as a duplicate): its runner frees the kernel's memory for the
    wait until the next one. What it left running or changed after its last call fails it here, as its
    calls' evidence would have."""
    reply, _ = kernel.request(ReleaseRequest())
    assert isinstance(reply, ReleaseReply)  # read_reply's type for a release
    _check_evidence(reply, checks, "after its last call, once the judge was done with it")
    checks.steps.end("released")


def _peak_gb(device: str, kernel: _Kernel) -> float | None:
    """This process's allocator peak and the runner's, together (``Verdict.gpu_peak_gb``)."""
    if not device.startswith("cuda"):
        return None
    return round((torch.cuda.max_memory_reserved(torch.device(device)) + kernel.peak_bytes) / 1e9, 3)


class _Kernel:
    """The judge's side of the conversation with the runner: requests in, Failed or replies out."""

    def __init__(self, runner: KernelProcess, first_call_limit_s: float | None = None) -> None:
        self.runner = runner
        self.first_call_limit_s = first_call_limit_s  # VerifyRequest.first_call_limit_s
        self.sandbox = ""  # as the runner reported it, also in an error reply
        self.call_trips_s: list[float] = []  # each call's round trip on this clock: the runner's word is not needed
        self.peak_bytes = 0  # the runner's word: it only schedules jobs, it never judges a kernel

    def warm_call_s(self) -> float:
        """The slowest call after the first (which compiled); the first if it is the only one."""
        return max(self.call_trips_s[1:] or self.call_trips_s)

    def request(self, body: Request, tensors: list[torch.Tensor] = (), expected_s: float | None = None,
                notes: list[dict[str, Any]] | None = None) -> tuple[Message, list[torch.Tensor]]:  # fmt: skip
        """The runner's reply to ``body``, validated (``runner_messages.read_reply``); an error reply is
        raised as Failed with its status, and a reply that is not a valid one of the two is ``crashed``.

        ``expected_s``: how long the request should take; past HANG_SLACK_S + HANG_FACTOR times that, it
        is a hang (``timeout``) and the runner is killed. The first call, with no calls before it to
        predict it, is bounded by ``first_call_limit_s`` alone, where there is one."""
        if not self.runner.alive():
            raise Failed("problem_error", "the kernel's process died before the job began (out of memory?): "
                         + self.runner.describe_death(_output_tail()))  # fmt: skip
        first_call = isinstance(body, (CallRequest, CompileRequest)) and not self.call_trips_s and expected_s is None
        deadline_s = None if expected_s is None else HANG_SLACK_S + HANG_FACTOR * expected_s
        if first_call and self.first_call_limit_s is not None:
            deadline_s = self.first_call_limit_s
        try:
            raw, tensors_back = self.runner.request(body.model_dump(mode="json"), list(tensors), deadline_s, notes)
            reply = read_reply(body.op, raw)
        except KernelProcessHung as e:
            if isinstance(body, CompileRequest):
                raise Failed("timeout", f"compiling it ahead of its first call took over {deadline_s:.0f} s, "
                                        "the compile time limit; its process was killed") from e  # fmt: skip
            if expected_s is None:
                raise Failed("timeout", f"its first call (the compile) took over {deadline_s:.0f} s, the "
                                        "compile time limit; its process was killed") from e  # fmt: skip
            raise Failed("timeout", f"no reply within {deadline_s:.0f} s, where the calls so far predict "
                                    f"{expected_s:.2f} s: the kernel hangs (a deadlock or a race on a "
                                    "spin-wait?); its process was killed") from e  # fmt: skip
        except KernelProcessDied as e:
            raise Failed("crashed", self.runner.describe_death(_output_tail())) from e
        except ProtocolError as e:
            raise Failed("crashed", f"unreadable reply from the kernel's process: {e}") from e
        except ValidationError as e:
            raise Failed("crashed", f"unreadable reply from the kernel's process: {describe_invalid(e)}") from e
        if isinstance(reply, (CallReply, TimeReply)):
            peak = reply.report.peak_bytes if isinstance(reply, CallReply) else reply.peak_bytes
            self.peak_bytes = max(self.peak_bytes, peak)
        if isinstance(reply, ErrorReply):
            if reply.error.sandbox is not None:
                self.sandbox = reply.error.sandbox
            raise Failed(reply.error.status, reply.error.reason[:600], reply.error.traceback)
        return reply, tensors_back

    def load(self, kernel_path: str, device: str, checks: Checks) -> None:
        try:
            reply, _ = self.request(LoadRequest(kernel_path=kernel_path, device=device))
        except Failed:
            checks.sandbox = self.sandbox
            raise
        assert isinstance(reply, LoadReply)  # read_reply's type for a load
        checks.sandbox = reply.sandbox
        checks.results.append(CheckResult(name="imports", passed=True))
        _check_evidence(reply, checks, "at import")

    def compile_ahead(self, kernel_path: str, inputs: list[Any], values: dict[str, Any]) -> CompileReply:
        """The runner compiles what the kernel launches for these meta tensors (``compile_ahead``), within
        the first call's limit: a compile that overruns it here is the same ``timeout``."""
        tensors: list[torch.Tensor] = []
        try:
            reply, _ = self.request(CompileRequest(kernel_path=kernel_path, **encode_inputs(inputs, values, tensors)), tensors)
        except Failed as f:
            if f.status == "crashed":  # the kernel's own Python ran on meta tensors, unobserved, and ended it
                f.reason = f"while compiled ahead of its first call (kernel_function on meta tensors): {f.reason}"
            raise
        assert isinstance(reply, CompileReply)  # read_reply's type for a compile
        return reply

    def call(self, inputs: list[Any] | None, values: dict[str, Any], where: str, op: str = "call",
             expected_s: float | None = None, notes: list[dict[str, Any]] | None = None,
             **fields: Any) -> tuple[Message, list[torch.Tensor]]:  # fmt: skip
        """Call the kernel on ``inputs`` (None: the tensors of the previous call, as they are now); ``op``
        and ``fields`` name another request on them (hash, time, an unobserved call): the reply is that
        op's (``runner_messages.REPLIES``). ``expected_s``: how long it should take (default: as long as
        the slowest call so far)."""
        tensors: list[torch.Tensor] = []
        if inputs is not None:
            fields |= encode_inputs(inputs, values, tensors)
        body = REQUEST.validate_python({"op": op, **fields})
        if expected_s is None and self.call_trips_s:
            expected_s = max(self.call_trips_s)  # a call may compile again (new specialisation)
        start = time.perf_counter()
        try:
            reply, outs = self.request(body, tensors, expected_s, notes)
        except Failed as f:
            if f.status in ("runtime_error", "compile_failed", "timeout"):
                f.reason = f"kernel_function {'hung' if f.status == 'timeout' else 'raised'} ({where}): {f.reason}"
            raise
        if op == "call":
            self.call_trips_s.append(time.perf_counter() - start)
        return reply, outs


def _load(req: VerifyRequest, checks: Checks, kernel: _Kernel,
          use: Callable[[], contextlib.AbstractContextManager[Any]]) -> Any:  # fmt: skip
    """The problem's module, and the kernel imported in the runner. Raises Failed.

    ``use``: a hold of the GPU's use lock (``gpu_in_use``), taken around each step that runs on the GPU
    (the kernel's import here; in ``_verify`` each seed's inputs, reference and call, each cache check)
    rather than around all of them: a timing of another job that waits to have the GPU alone waits for the
    step running, not for the whole verification, and the steps after it wait for that timing."""
    spec = req.spec
    if spec.device.startswith("cuda") and not torch.cuda.is_available():
        raise Failed("problem_error", f"device {spec.device} asked for, but no CUDA GPU is visible")
    try:
        with use():
            select_device(spec)
            module = load_problem_module(spec)
    except (ProblemLoadError, RuntimeError, ValueError) as e:  # a bad problem file, or cuda:N that is not there
        raise Failed("problem_error", str(e), traceback.format_exc()) from e
    if not Path(req.kernel_path).is_file():
        raise Failed("compile_failed", f"kernel file {req.kernel_path} does not exist")
    checks.steps.end("problem_loaded")
    with use():
        kernel.load(req.kernel_path, spec.device, checks)
    checks.steps.end("kernel_imported")
    return module


def _compile_ahead(req: VerifyRequest, module: Any, kernel: _Kernel, checks: Checks) -> None:
    """On a GPU, have the runner compile what the kernel launches for the first seed's shapes
    (``compile_ahead``) before the job takes a place and the GPU's use lock: the compile is CPU work, and
    other jobs' timings would wait for it. Raises Failed for what the kernel does meanwhile, as a call."""
    if not req.spec.device.startswith("cuda"):
        return
    try:
        shapes = shapes_instance(module, req.spec, req.seeds[0])
    except Exception:  # noqa: BLE001 - the problem needs values to build its inputs: the first call compiles
        return
    reply = kernel.compile_ahead(req.kernel_path, shapes.inputs, model_values(shapes.model))
    _check_evidence(reply, checks, "while compiled ahead of its first call", reply.threads_started)
    checks.compiled_ahead, checks.compile_ahead_stopped = reply.compiled, reply.stopped
    checks.steps.end("compiled_ahead")


def _verify(req: VerifyRequest, module: Any, checks: Checks, kernel: _Kernel,
            use: Callable[[], contextlib.AbstractContextManager[Any]]) -> _SharedPool:  # fmt: skip
    """Every check; raises Failed at the first that fails. Returns the memory pool a timing goes on with.
    ``use``: as for ``_load``."""
    spec = req.spec
    pool = _SharedPool(spec.device)
    for i, seed in enumerate(req.seeds):
        # The last seed's tensors go before this seed's are made: a verification's memory peak sets how
        # many share the GPU (``SearchConfig.verify_per_gpu``).
        instance = reference = nudged = again = values = None
        with use():
            try:
                with pool:
                    instance = instantiate(module, spec, seed)
                checks.steps.end(f"seed{i}_inputs")
                reference = reference_output(instance, spec)
                checks.steps.end(f"seed{i}_reference")
            except Exception as e:
                raise Failed("problem_error", f"problem failed for seed {seed}: {e}", traceback.format_exc()) from e
            values = model_values(instance.model)
            where = f"seed {seed}"
            try:
                _checked_call(kernel, instance.inputs, values, reference, req, checks, where)
            except Failed as f:
                if checks.results and checks.results[-1].name == "values" and not checks.results[-1].passed:
                    f.reason += _eager_note(instance, reference, req)
                raise
        checks.steps.end(f"seed{i}_checked")
        if i > 0:
            continue
        if req.known_compiled and spec.device.startswith("cuda"):
            with use():
                _known_code(kernel, values, req, checks)
        # Same tensors, new values: a kernel that caches results by pointer returns the old answer.
        with use():
            fresh_values_into(module, spec, seed + POINTER_CHECK_SEED_OFFSET, instance.inputs)
            del reference  # the last one goes before the next is made
            reference = reference_output(instance, spec)
            _checked_call(kernel, None, values, reference, req, checks, f"{where}, inputs changed in place",
                          values_check="values_after_inputs_changed", same_inputs=instance.inputs)  # fmt: skip
        # Fresh tensors, the same values but for a few elements at random places: a cache keyed on part
        # of the input, or answers worked out at import for inputs a kernel could foresee.
        with use():
            with pool:
                nudged = [t.clone() if isinstance(t, torch.Tensor) else t for t in instance.inputs]
            checks.nudge_seed = nudge_seed()
            perturb_(nudged, checks.nudge_seed)
            del reference  # the last one goes before the next is made
            reference = reference_output(ProblemInstance(instance.model, nudged), spec)
            _checked_call(kernel, nudged, values, reference, req, checks, f"{where}, a few input elements changed",
                          values_check="values_after_small_change")  # fmt: skip
            # The runner let go of the first inputs on that call: their memory takes the next copy, so the
            # pool, which never gives memory back, holds two sets of inputs rather than three.
            instance.inputs = []
            _collect_shared(spec.device)
        # Fresh tensors, the very same values: a cache keyed on all of the input hands back the previous
        # output (timing changes the inputs between repetitions, so there such a cache never hits).
        with use():
            with pool:
                again = [t.clone() if isinstance(t, torch.Tensor) else t for t in nudged]
            _checked_call(kernel, again, values, reference, req, checks, f"{where}, the same values again")
        checks.steps.end("cache_checks")
    return pool


def _eager_note(instance: ProblemInstance, reference: Any, req: VerifyRequest) -> str:
    """How PyTorch's own forward in the dtype under test fares against the same reference and rule: where it
    keeps to the rule, the kernel is less accurate than PyTorch; where it misses it by a few times, the
    rule is tighter than the dtype allows for this problem, and the note names a looser rule PyTorch's
    result keeps to; where it is far off, the kernel should compute in fp32 rather than loosen the rule."""
    try:
        with torch.no_grad():
            eager = _as_list(instance.model(*instance.inputs))
        pairs = [(o, r) for o, r in zip(eager, _as_list(reference), strict=True)
                 if isinstance(o, torch.Tensor) and isinstance(r, torch.Tensor) and o.shape == r.shape]  # fmt: skip
        cmps = [compare(o, r, req.tolerance) for o, r in pairs]
        if not cmps:
            return ""
        dtype, err = req.spec.dtype, max(c.max_abs_err for c in cmps)
        bad = sum(c.n_mismatched + c.n_unexpected_nonfinite for c in cmps)
        if not bad:
            return f"; PyTorch's own {dtype} forward keeps to it (max abs err {err:.4g})"
        missed = f"; PyTorch's own {dtype} forward misses this rule too ({bad} of {sum(c.n for c in cmps)} elements, max abs err {err:.4g})"
        # from the dtype's default where the run's rule is tighter (a rule of 0 stays 0 however multiplied)
        default = DEFAULT_TOLERANCES[dtype]
        base = Tolerance(atol=max(req.tolerance.atol, default.atol), rtol=max(req.tolerance.rtol, default.rtol))
        for factor in LOOSER_RULE_FACTORS:
            looser = Tolerance(atol=base.atol * factor, rtol=base.rtol * factor)
            if all(_keeps_to(compare(o, r, looser)) for o, r in pairs):
                return f"{missed}, but is within atol {looser.atol:.3g} + rtol {looser.rtol:.3g} (a run's rule: --atol, --rtol)"
        return f"{missed}: far off, so compute in fp32 inside the kernel rather than loosen the rule"
    except Exception:  # a courtesy only: the kernel's verdict stands without it
        return ""


def _keeps_to(cmp: Comparison) -> bool:
    return cmp.n_mismatched == 0 and cmp.n_unexpected_nonfinite == 0


def _collect_shared(device: str) -> None:
    """Free the memory this process shared that the runner has let go of (until then it stays held)."""
    if device.startswith("cuda"):
        torch.cuda.ipc_collect()


def _known_code(kernel: _Kernel, values: dict[str, Any], req: VerifyRequest, checks: Checks) -> None:
    """Hash the code the first seed's call launched (one more call on its inputs); code a kernel of the run
    was timed on ends the job: a duplicate is never ranked, so checking and timing it again buys nothing."""
    _hash_code(kernel, None, values, checks)
    first = req.known_compiled.get(checks.compiled_hash or "")
    if first is not None:
        raise Failed("duplicate", f"same compiled code as {first}, already timed: not checked further nor timed")


def _hash_code(kernel: _Kernel, inputs: list[Any] | None, values: dict[str, Any], checks: Checks) -> None:
    """One more call, on ``inputs`` (None: the last call's tensors), hashing the compiled code it launches
    into ``checks.compiled_hash``; what the call leaves running or changes fails ``checks``."""
    reply, _ = kernel.call(inputs, values, "hashing its compiled code", op="hash")
    assert isinstance(reply, HashReply)  # read_reply's type for a hash
    checks.compiled_hash = reply.compiled_hash
    _check_evidence(reply, checks, "the call that hashes the compiled code", reply.threads_started)
    checks.steps.end("hashed")


def time_after_checks(req: VerifyRequest, kernel: _Kernel, module: Any, pool: _SharedPool, sandbox: str) -> TimingResult:
    """Time the verified kernel in its runner on the timing seed's inputs, as the timing child would,
    and check the outputs of the timed repetitions it kept and the samples of a few repetitions chosen
    here afterwards. Never raises: a failure is the timing's status."""
    assert req.timing is not None
    knobs, spec = req.timing, req.spec
    start = time.perf_counter()
    checks = Checks()  # the timing's own: its failures fail the timing, not the verdict
    timing: Timing | None = None
    waited_s = 0.0
    common: dict[str, Any] = dict(target=req.kernel_path, sandbox=sandbox)
    try:
        _collect_shared(spec.device)  # the verification's inputs the runner let go of: the pool reuses them
        with pool:
            instance = instantiate(module, spec, knobs.seed)
        # This process's own copies, apart from the memory shared with the runner: the references for
        # the kept repetitions are made from them, whatever the kernel does to its inputs or weights.
        copies = reference_copies(instance.inputs, spec)
        model = copy.deepcopy(instance.model)
        values = model_values(instance.model)
        checks.steps.end("inputs")
        if spec.device.startswith("cuda"):
            _hash_code(kernel, instance.inputs, values, checks)
        budget = dict(warmup_ms=knobs.warmup_ms, rep_ms=knobs.rep_ms, min_reps=knobs.min_reps, max_reps=knobs.max_reps)
        inputs = None if spec.device.startswith("cuda") else instance.inputs  # on a GPU, handed over to hash
        with contextlib.nullcontext(0.0) if req.exclusive else gpu_lock(spec.device, knobs.lock_dir) as waited:
            waited_s = waited
            checks.steps.end("locked")
            expected_s = expected_measure_s(spec.device.startswith("cuda"), kernel.warm_call_s(), **budget)
            notes: list[dict[str, Any]] = []  # each change's seed, sent before the change is made
            reply, outs = kernel.call(inputs, values, "timed", op="time", expected_s=expected_s, notes=notes,
                                      dtype=spec.dtype, shapes=spec.shapes,
                                      budget=budget | {"screen_above_ms": knobs.screen_above_ms})  # fmt: skip
        checks.steps.end("measured")
        # The runner's copies, shared: its device was synchronised before it replied, and it runs nothing
        # of the kernel's until asked again (a thread left running fails background_work below).
        assert isinstance(reply, TimeReply)  # read_reply's type for a timing
        kept, sampled = _kept(reply, outs), _sampled(reply, outs)
        timing = reply.timing
        checked = choose_checked(timing.n)  # drawn here, after the calls: the runner never knows them
        common["checked_reps"] = sorted({k.rep for k in kept} | set(checked))
        _check_evidence(reply, checks, "during the timed calls", reply.threads_started)
        for check in timing_checks(timing, spec.device, knobs.screen_above_ms):
            checks.record(check.name, check.passed, check.detail)
        seeds = _seeds(notes)
        again = lambda: instantiate(module, spec, knobs.seed).inputs  # noqa: E731 - where the model spoils the copies
        problem = wrong_timed(kept, sampled, checked, timing.n, seeds, copies, again, model, spec, req.tolerance)
        checks.record("timed_outputs", problem is None, problem or "")
        checks.steps.end("checked")
    except Failed as f:
        status = f.status if f.status in ("crashed", "timeout") else "failed"
        return TimingResult(status=status, reason=f.reason[:900], timing=timing, lock_wait_s=waited_s,
                            duration_s=time.perf_counter() - start, traceback=f.tb, checks=checks.results,
                            compiled_hash=checks.compiled_hash, steps_s=checks.steps.ended, **common)  # fmt: skip
    except Exception as e:  # the harness's own steps (inputs, copies, references) failed, e.g. out of memory
        return TimingResult(status="failed", reason=f"{type(e).__name__}: {e}".splitlines()[0][:500], timing=timing,
                            lock_wait_s=waited_s, duration_s=time.perf_counter() - start,
                            traceback=traceback.format_exc(), checks=checks.results, steps_s=checks.steps.ended, **common)  # fmt: skip
    return TimingResult(status="ok", timing=timing, lock_wait_s=waited_s, duration_s=time.perf_counter() - start,
                        checks=checks.results, compiled_hash=checks.compiled_hash, steps_s=checks.steps.ended, **common)  # fmt: skip


def _seeds(notes: list[dict[str, Any]]) -> list[int]:
    """The seeds the runner announced before each change of the inputs (``runner_messages.Note``)."""
    try:
        return [Note.model_validate(note).note.nudge_seed for note in notes]
    except ValidationError as e:
        raise Failed("crashed", f"unreadable seeds from the kernel's process: {describe_invalid(e)}") from e


def _kept(reply: TimeReply, outs: list[torch.Tensor]) -> list[Kept]:
    """The runner's kept repetitions, their outputs taken from the tensors it sent back."""
    try:
        return [Kept(rep=k.rep, changes=k.changes, outputs=[None if i is None else outs[i] for i in k.outputs],
                     returned=list(k.returned)) for k in reply.kept]  # fmt: skip
    except IndexError as e:
        why = f"unreadable kept outputs from the kernel's process: an output index past the {len(outs)} tensors sent"
        raise Failed("crashed", why) from e


def _sampled(reply: TimeReply, outs: list[torch.Tensor]) -> Sampled:
    """The runner's samples of every timed repetition, their values taken from the tensors it sent back."""
    reps = [SampledRep(rep=r.rep, changes=r.changes, seed=r.seed, returned=list(r.returned),
                       shapes=[None if s is None else list(s) for s in r.shapes]) for r in reply.sampled.reps]  # fmt: skip
    try:
        return Sampled(reps, [None if i is None else outs[i] for i in reply.sampled.values])
    except IndexError as e:
        why = f"unreadable samples from the kernel's process: a values index past the {len(outs)} tensors sent"
        raise Failed("crashed", why) from e


def _checked_call(
    kernel: _Kernel,
    inputs: list[Any] | None,
    values: dict[str, Any],
    reference: Any,
    req: VerifyRequest,
    checks: Checks,
    where: str,
    values_check: str = "values",
    same_inputs: list[Any] | None = None,
) -> None:
    given = inputs if inputs is not None else same_inputs
    snapshot = _snapshot(given, values)
    reply, outs = kernel.call(inputs, values, where)
    assert isinstance(reply, CallReply)  # read_reply's type for a call
    report = reply.report
    checks.call_times_s.append(report.call_s)
    _check_evidence(report, checks, where, report.threads_started)
    forbidden = _counts(report.forbidden)
    checks.record("pytorch_compute", not forbidden,
                  f"PyTorch compute operators ran inside kernel_function ({where}): {describe(forbidden)}")  # fmt: skip
    host = _counts(report.host_reads)
    checks.record("host_compute", not host,
                  f"tensor data was read on the host inside kernel_function ({where}): {describe(host)}")  # fmt: skip
    _check_unchanged(snapshot, checks, where)  # first: an input changed and returned is a changed input
    problem = reply.structure
    if problem is None:
        problem = _structure_problem(outs, reply.n_outputs, _as_list(reference), req.spec)
    checks.record("output_structure", problem is None, f"{problem} ({where})")
    for k, (o, r) in enumerate(zip(outs, _as_list(reference), strict=True)):
        cmp = compare(o, r, req.tolerance)
        checks.errors(cmp.max_abs_err, cmp.max_rel_err)
        label = f"output {k}" if len(outs) > 1 else "output"
        checks.record(
            "all_written",
            cmp.n_unwritten == 0,
            f"{cmp.n_unwritten} of {cmp.n} {label} elements were never written ({where}; first at flat index "
            f"{cmp.first_bad_index})",
        )
        checks.record(
            "finite",
            cmp.n_unexpected_nonfinite == 0,
            f"{cmp.n_unexpected_nonfinite} {label} elements are NaN/Inf where the reference is finite ({where})",
        )
        checks.record(
            values_check,
            cmp.n_mismatched == 0,
            f"{cmp.n_mismatched} of {cmp.n} {label} elements outside atol={req.tolerance.atol} "
            f"rtol={req.tolerance.rtol}; max abs err {cmp.max_abs_err:.4g}, max rel err {cmp.max_rel_err:.4g}, "
            f"first at flat index {cmp.first_bad_index} ({where})",
        )
    reused = report.same_as_previous
    checks.record("fresh_output", not reused,
                  f"output {reused[0] if reused else 0} is the memory the previous call returned: a cached result handed back "
                  f"again ({where})")  # fmt: skip


def _check_evidence(evidence: Evidence, checks: Checks, where: str, threads_started: int = 0) -> None:
    """What the runner saw of the kernel meddling with its process, or leaving work behind."""
    tampering = list(evidence.tampering)
    checks.record("harness_intact", not tampering,
                  f"the kernel changed the harness in its process ({where}): {'; '.join(tampering)[:800]}")  # fmt: skip
    background = list(evidence.background) + [f"process {pid} (which left the kernel's process)" for pid in strays()]
    if threads_started:
        background.insert(0, f"{threads_started} thread(s) started during the call")
    checks.record("background_work", not background,
                  f"kernel_function left work running after it returned ({where}): {', '.join(background)[:500]}")  # fmt: skip


def _structure_problem(outs: list[torch.Tensor], n_outputs: int, refs: list[Any], spec: RunSpec) -> str | None:
    if n_outputs != len(refs) or len(outs) != len(refs):
        return f"returned {n_outputs} outputs, the reference returns {len(refs)}"
    want_device = torch.device(spec.device)
    for k, (o, r) in enumerate(zip(outs, refs, strict=True)):
        want_dtype = TORCH_DTYPES[spec.dtype] if r.is_floating_point() else r.dtype
        if tuple(o.shape) != tuple(r.shape):
            return f"output {k} has shape {tuple(o.shape)}, expected {tuple(r.shape)}"
        if o.dtype != want_dtype:
            return f"output {k} has dtype {o.dtype}, expected {want_dtype}"
        if o.device.type != want_device.type:
            return f"output {k} is on {o.device}, expected {want_device}"
    return None


def _snapshot(inputs: list[Any], values: dict[str, Any]) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """Copies of every tensor the kernel is given: its inputs and the model values (weight, bias...)."""
    named = [(f"input {k}", t) for k, t in enumerate(inputs)]
    named += [(f"model value '{name}'", t) for name, t in values.items()]
    tensors = {id(t): (label, t) for label, t in reversed(named) if isinstance(t, torch.Tensor)}  # one copy each
    return [(label, t, t.clone()) for label, t in reversed(tensors.values())]


def _check_unchanged(snapshot: list[tuple[str, torch.Tensor, torch.Tensor]], checks: Checks, where: str) -> None:
    for label, now, before in snapshot:
        same = now.shape == before.shape and bool((_bits(now) == _bits(before)).all())
        checks.record("inputs_unchanged", same, f"{label} was modified by kernel_function ({where})")


class _SharedPool:
    """Where tensors handed to the runner are allocated. On a GPU a CUDA IPC handle opens a whole
    allocation segment, so they get segments of their own (a memory pool), apart from the references
    and copies the kernel must not reach. CPU tensors are shared one by one; no pool is needed."""

    def __init__(self, device: str) -> None:
        self.pool = None
        if device.startswith("cuda") and hasattr(torch.cuda, "use_mem_pool"):  # torch >= 2.6
            self.pool = torch.cuda.MemPool()
        self._ctx: Any = None

    def __enter__(self) -> None:
        if self.pool is not None:
            self._ctx = torch.cuda.use_mem_pool(self.pool)
            self._ctx.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(*exc)
            self._ctx = None


def _counts(x: dict[str, int]) -> Counter[str]:
    return Counter({k: v for k, v in x.items() if v > 0})


def _bits(t: torch.Tensor) -> torch.Tensor:
    return as_bits(t) if t.is_floating_point() else t


def _as_list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _output_tail() -> str:
    """The end of this job's output log (the runner writes to it too)."""
    try:
        return (Path.cwd().parent / "output.log").read_bytes()[-TAIL_CHARS:].decode(errors="replace")
    except OSError:
        return ""


def _undumpable() -> None:
    """Keep processes of the same user (the runner among them) out of this one's memory and open files
    (/proc/<pid>/mem, /proc/<pid>/fd): PR_SET_DUMPABLE 0. Root can still look; see the README."""
    if os.environ.get("BEAMSEARCH_UNDUMPABLE", "1") == "0":
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)


if __name__ == "__main__":
    adopt_orphans()  # a kernel's process whose runner died comes here, not to init, and is ended with the job
    _runner = KernelProcess.fork()  # before the job, its key and any GPU work: the fork inherits none of them
    # The judge only: the kernel runs with CUDA's default queues, so one work queue cannot hide a missing
    # synchronisation between its streams.
    use_one_work_queue()
    _undumpable()
    serve(VerifyRequest, lambda request: verify(request, _runner),
          again=lambda request, verdict: request.session and runner_reusable(verdict), warm_up=warm_up_on_gpu)

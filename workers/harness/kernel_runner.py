"""The process that imports and calls a candidate kernel for verification or timing, and nothing else.

The verification child (``verify_child``, the *judge*; the timing child is one too) forks this process at
start-up, before it has touched a GPU or read anything about its job, so the runner holds no secret of
the judge's: not the key that signs the verdict, not the references. The judge then sends requests over a socket pair
(``shared_tensors``): *load* a kernel file, *compile* what it launches before the checks (on a GPU,
``compile_ahead``), *call* it on these inputs (shared memory, never copied).
The runner answers with the outputs (shared back) and what its observers saw: PyTorch operators
(``torch_guard.ObservedCall``), host-side reads, threads and processes left running, and names of
the harness that were replaced (``integrity``). The judge compares and decides; anything the runner
says about itself is evidence, not a verdict, since the kernel runs in this process.

Once every check has passed, the judge may ask for a timing in this same process, so a candidate
starts one GPU process fewer: *hash* the compiled code one call launches, then *time* the calls with
``workers.harness.clock`` (the clock the timing child uses for baselines), the inputs changed before each
repetition, copies of a few repetitions' outputs kept, chosen at random only after each call has
returned, and a sample of every repetition's outputs at positions drawn only then
(``workers.harness.timed_outputs``). The copies and samples go back to the judge with the change each
repetition's inputs had, and the judge checks them: every timed call may be the one checked. Timing calls are not
observed: an observer costs time, and a kernel honest only when watched fails that check.

On the CPU the runner's address space is capped (``RLIMIT_AS``): a kernel asking for hundreds of GB
gets an allocation error instead of pushing the machine into swap while its memory is poisoned.

In a session the judge may send another *load* after a kernel passed everything: the runner drops the last
kernel's tensors and imports the next, keeping what it recorded before the first import (the harness's
names, the threads running, the sandbox), so what any kernel of the session changed or left running is
evidence against every later one too.
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import signal
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from pydantic import ValidationError

from workers.harness.allocator import keep_large_blocks_whole
from workers.harness.binding import BindError, bind
from workers.harness.child_process import (
    adopt_orphans,
    adopting,
    end_descendants,
    start_cuda_early,
    warm_up_early,
)
from workers.harness.clock import measure
from workers.harness.compile_ahead import compile_ahead, warm_up_pass
from workers.harness.compiled_code import launch_hash
from workers.harness.integrity import BackgroundWork, Snapshot, ThreadStarts, child_processes, running
from workers.harness.problem_instance import load_kernel_function, select_device_name
from workers.harness.runner_messages import (
    REQUEST,
    CallReply,
    CallReport,
    CallRequest,
    CompileReply,
    CompileRequest,
    ErrorReply,
    HashReply,
    HashRequest,
    KeptRep,
    LoadReply,
    LoadRequest,
    Message,
    Note,
    NudgeNote,
    OnInputs,
    ReleaseReply,
    ReleaseRequest,
    RunnerError,
    RunnerStatus,
    SampledRepMessage,
    SampledReps,
    TimeReply,
    TimeRequest,
)
from workers.harness.sandbox import confine_job
from workers.harness.shared_tensors import Channel, ChannelClosed, ChannelTimeout, ProtocolError, decode_value
from workers.harness.timed_outputs import InputNudger, KeptOutputs, SampledOutputs
from workers.harness.torch_guard import ObservedCall, install_tripwires, warm_up

TRACEBACK_CHARS = 8000
_synchronize = torch.cuda.synchronize  # taken before any kernel is imported


class KernelProcessDied(RuntimeError):
    pass


class KernelProcessHung(TimeoutError):
    """The runner did not answer in the time allowed; it has been killed."""


class KernelProcess:
    """The judge's handle on its runner."""

    def __init__(self, pid: int, channel: Channel) -> None:
        self.pid = pid
        self.channel = channel
        self.returncode: int | None = None

    @classmethod
    def fork(cls) -> KernelProcess:
        """Start the runner as a fork of this process. Call before CUDA is initialised and before any
        secret is in memory: the fork gets a copy of everything this process holds."""
        ours, theirs = Channel.pair()
        pid = os.fork()
        if pid == 0:  # the runner: never returns into the caller's code
            code = 1
            try:
                ours.close()
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, 0)  # the judge's stdin carries its job and key: not ours to read
                os.close(devnull)
                _serve(theirs)
                code = 0
            finally:
                os._exit(code)
        theirs.close()
        _forked.add(pid)
        return cls(pid, ours)

    def request(self, body: dict[str, Any], tensors: list[torch.Tensor] = (), timeout_s: float | None = None,
                notes: list[dict[str, Any]] | None = None) -> tuple[dict[str, Any], list[torch.Tensor]]:  # fmt: skip
        """Send a request and wait for the reply. Raises KernelProcessDied when the runner is gone, and
        KernelProcessHung when no reply came within ``timeout_s``: the runner is killed before that is
        raised, so nothing of a hung kernel runs on once the caller lets go of a lock it holds. ``notes``
        collects the messages the runner sends before its reply (a timing's seeds, ``runner_messages.Note``)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            self.channel.send(body, tensors)
            while True:
                reply, out = self.channel.recv(None if deadline is None else deadline - time.monotonic())
                if notes is None or "note" not in reply:
                    return reply, out
                notes.append(reply)
        except ChannelClosed as e:
            raise KernelProcessDied(str(e)) from e
        except ChannelTimeout as e:
            self.stop()
            raise KernelProcessHung(str(e)) from e

    def alive(self) -> bool:
        return self._poll(block=False) is None

    def describe_death(self, output_tail: str) -> str:
        """How the runner ended (waits a little for its exit status)."""
        from workers.harness.child_process import last_output_line

        code = self._poll(block=True)
        if code is None:
            how = "stopped answering"
        elif code < 0:
            try:
                how = f"was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code} without writing a result (os._exit or sys.exit in the kernel?)"
        last = last_output_line(output_tail)
        return f"the kernel's process {how}" + (f"; last output: {last[:300]}" if last else "")

    def stop(self) -> None:
        """End the runner and every process its kernels started, those that left its group and session
        included: the runner adopts them (``adopt_orphans``). It is stopped first, so it starts no more."""
        if self.returncode is None:  # once reaped, the pid may belong to another process
            try:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGSTOP)
                end_descendants(self.pid)
            finally:  # never left stopped
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
        self._poll(block=True)
        self.channel.close()

    def _poll(self, block: bool) -> int | None:
        if self.returncode is not None:
            return self.returncode
        deadline = time.monotonic() + (5.0 if block else 0.0)
        while True:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                return self.returncode
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)


# ---------------------------------------------------------------------------------------- runner side


class _Runner:
    def __init__(self) -> None:
        self.fn: Callable[..., Any] | None = None
        self.device = "cpu"
        self.snapshot: Snapshot | None = None
        self.background: BackgroundWork | None = None
        self.inputs: list[Any] = []
        self.values: dict[str, Any] = {}
        self.outputs: list[torch.Tensor] = []  # kept alive until the judge sends its next request
        self.sandbox = ""

    def load(self, body: LoadRequest) -> LoadReply | ErrorReply:
        self.device = body.device
        select_device_name(self.device)
        if self.snapshot is None:  # the first kernel of this process: before anything of a kernel's runs
            if self.device.startswith("cpu"):
                _limit_address_space()
            else:
                keep_large_blocks_whole()  # its outputs and kept copies are all of one size
            install_tripwires()
            self.sandbox = _confine_to_work_folder()
            self.snapshot = Snapshot.take()
            self.background = BackgroundWork()
        else:  # the next kernel of a session: the records of before the first kernel stay
            self.release()
        try:
            self.fn = load_kernel_function(body.kernel_path)
        except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt at import included
            reply = _error("compile_failed", e, import_=True)
            return ErrorReply(error=reply.error.model_copy(update={"sandbox": self.sandbox}))
        return LoadReply(sandbox=self.sandbox, **self._evidence())

    def compile(self, body: CompileRequest, tensors: list[torch.Tensor]) -> CompileReply | ErrorReply:
        """Compile what the loaded kernel's file launches for the request's meta inputs, in a second import
        of it that is then dropped (``compile_ahead``). The tensors stay unbound: calls bring their own."""
        if self.fn is None or body.inputs == "same":
            return ErrorReply(error=RunnerError(status="runtime_error", reason="compile asked for before a load, or "
                                                "without inputs", traceback=""))  # fmt: skip
        if not self.device.startswith("cuda"):
            return CompileReply(compiled=[], stopped="not on a GPU", threads_started=0, **self._evidence())
        reserved = _peak_bytes(self.device)
        with ThreadStarts() as threads:
            compiled, stopped = compile_ahead(body.kernel_path, *_decoded(body, tensors))
        try:
            _synchronize()  # a launch that escaped the pass faults here, not in a checked call
        except BaseException as e:  # noqa: BLE001
            return _error("runtime_error", e)
        if _peak_bytes(self.device) > reserved:  # the pass took memory: not the kernel's peak in its place
            release_memory(self.device)
        return CompileReply(compiled=compiled, stopped=stopped, threads_started=threads.n, **self._evidence())

    def bound(self, body: OnInputs, tensors: list[torch.Tensor]) -> Callable[[], Any]:
        """kernel_function bound to the request's inputs (or the previous request's: ``"same"``)."""
        if body.inputs != "same":
            self.inputs, self.values = _decoded(body, tensors)
        return bind(self.fn, self.inputs, self.values)

    def call(self, body: CallRequest, tensors: list[torch.Tensor]) -> tuple[CallReply | ErrorReply, list[torch.Tensor]]:
        previous, self.outputs = self.outputs, []  # alive during this call: new memory cannot overlap them
        try:
            call = self.bound(body, tensors)
        except BindError as e:
            return _bind_error(e), []
        observed = ObservedCall() if body.observe else None  # None: only threads counted
        threads = ThreadStarts()
        started = time.perf_counter()
        try:
            with torch.no_grad(), observed or threads:
                out = call()
            if self.device.startswith("cuda"):
                _synchronize()  # asynchronous faults (illegal address) surface here
        except BaseException as e:  # noqa: BLE001 - whatever the kernel raises, SystemExit included
            return _error("runtime_error", e), []
        call_s = time.perf_counter() - started
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        report = CallReport(
            peak_bytes=_peak_bytes(self.device),
            same_as_previous=[k for k, o in enumerate(outs) if type(o) is torch.Tensor
                              and any(_overlap(o, p) for p in previous)],  # fmt: skip
            forbidden=dict(observed.forbidden) if observed else {},
            host_reads=dict(observed.host_reads) if observed else {},
            threads_started=observed.threads_started if observed else threads.n,
            call_s=call_s,
            **self._evidence(extra_tampering=observed.tampering if observed else []),
        )
        problem = _structure_problem(outs, [t for t in [*self.inputs, *self.values.values()] if isinstance(t, torch.Tensor)])
        if problem is not None:
            return CallReply(report=report, structure=problem, n_outputs=len(outs)), []
        self.outputs = outs
        return CallReply(report=report, structure=None, n_outputs=len(outs)), outs

    def hash(self, body: HashRequest, tensors: list[torch.Tensor]) -> HashReply | ErrorReply:
        """One more call, hashing the compiled code it launches (``workers.harness.compiled_code``)."""
        try:
            call = self.bound(body, tensors)
        except BindError as e:
            return _bind_error(e)
        compiled_hash = None
        with torch.no_grad(), ThreadStarts() as threads, contextlib.suppress(Exception):  # a bonus, never a failure
            compiled_hash = launch_hash(call, _synchronize)
        return HashReply(compiled_hash=compiled_hash, threads_started=threads.n, **self._evidence())

    def time(self, body: TimeRequest, tensors: list[torch.Tensor],
             announce: Callable[[int], None]) -> tuple[TimeReply | ErrorReply, list[torch.Tensor]]:  # fmt: skip
        """Time the calls (``workers.harness.clock.measure``), the inputs changed before each repetition with a
        seed sent to the judge first (``announce``) and not kept here, and hand back copies of the outputs
        of the repetitions kept at random, each with how many changes its inputs had had (``kept``;
        ``outputs``: indices into the tensors sent back, None where the call returned no plain tensor),
        and a sample of every repetition's outputs (``sampled``: each repetition's changes, position seed
        and outputs' dtypes and shapes; ``values``: per output, the index of its rows of sampled values).
        The inputs are left changed. The judge holds the GPU's measurement lock meanwhile."""
        self.outputs = []  # the judge is done with the last call's: their memory is the timing's
        try:
            call = self.bound(body, tensors)
        except BindError as e:
            return _bind_error(e), []
        nudger = InputNudger(self.inputs, announce)
        kept = KeptOutputs(lambda: nudger.count)
        sampled = SampledOutputs(lambda: nudger.count)

        def after_rep(out: Any) -> None:  # off the clock, the device synchronised
            sampled.offer(out)
            kept.offer(out)

        try:
            with torch.no_grad(), ThreadStarts() as threads:
                timing = measure(call, self.device, dtype=body.dtype, shapes=body.shapes,
                                 between_reps=nudger, after_rep=after_rep, **body.budget.model_dump())  # fmt: skip
                samples = sampled.sampled()
        except BaseException as e:  # noqa: BLE001 - whatever the kernel raises, SystemExit included
            return _error("runtime_error", e), []
        out: list[torch.Tensor] = []
        described = []
        for k in kept.kept:
            indices = []
            for o in k.outputs:
                indices.append(None if o is None else len(out))
                if o is not None:
                    out.append(o)
            described.append(KeptRep(rep=k.rep, changes=k.changes, outputs=indices, returned=k.returned))
        values = []
        for v in samples.values:
            values.append(None if v is None else len(out))
            if v is not None:
                out.append(v)
        reps = [SampledRepMessage(rep=r.rep, changes=r.changes, seed=r.seed, returned=r.returned, shapes=r.shapes)
                for r in samples.reps]  # fmt: skip
        return TimeReply(timing=timing, kept=described, threads_started=threads.n, peak_bytes=_peak_bytes(self.device),
                         sampled=SampledReps(reps=reps, values=values), **self._evidence()), out  # fmt: skip

    def release(self) -> ReleaseReply:
        """Drop the kernel and its tensors (the judge is done with them) and give their memory back, so a
        session's idle runner holds none of it while other verifications run."""
        self.fn, self.inputs, self.values, self.outputs = None, [], {}, []
        release_memory(self.device)
        return ReleaseReply(**self._evidence())

    def _evidence(self, extra_tampering: list[str] = ()) -> dict[str, Any]:
        tampering = list(extra_tampering)
        if self.snapshot is not None:
            tampering += [f"{name} was replaced" for name in self.snapshot.changed()]
        background = self.background.left_running() if self.background is not None else []
        return {"tampering": tampering, "background": background}


def _decoded(body: OnInputs, tensors: list[torch.Tensor]) -> tuple[list[Any], dict[str, Any]]:
    """A request's inputs and values, its tensors in place of their indices (not ``"same"``)."""
    assert body.inputs != "same"
    return [decode_value(v, tensors) for v in body.inputs], {k: decode_value(v, tensors) for k, v in body.values.items()}


def release_memory(device: str) -> None:
    """Free what this process no longer holds and give the allocator's cache back; the next peak starts
    here. Between the kernels of a session (the judge and the runner each)."""
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.ipc_collect()  # memory another process had opened by IPC, held until both let go
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(torch.device(device))


def _peak_bytes(device: str) -> int:
    """The most memory this process's allocator has reserved: the judge schedules GPU jobs by it."""
    return torch.cuda.max_memory_reserved(torch.device(device)) if device.startswith("cuda") else 0


_forked: set[int] = set()  # the runners this process forked


def strays() -> list[int]:
    """In a judge that adopts orphans: its live children other than the runners it forked, that is,
    processes a kernel started that reached it (the kernel's runner gave up adopting, or died). Empty in
    a process that does not adopt (a test calling a judge's code has children of its own)."""
    if not adopting():
        return []
    return sorted(p for p in child_processes() - _forked if running(p))


def _serve(channel: Channel) -> None:
    adopt_orphans()  # a process a kernel starts stays in sight: left running, it fails the call (BackgroundWork)
    warm_up()  # while the judge waits for its job
    if start_cuda_early():
        warm_up_early(warm_up_pass)
    gc.freeze()  # as the judge does (``child_process.serve``): ``release_memory`` scans only what jobs made
    runner = _Runner()
    while True:
        try:
            body, tensors = channel.recv()
        except (ChannelClosed, ProtocolError):
            return  # the judge is gone (or mad): nothing left to do
        out = []  # the judge asked again, so it is done with the last reply's tensors: a release frees them too
        try:
            request = REQUEST.validate_python(body)
        except ValidationError:
            return  # not the judge's protocol: nothing to answer
        reply: Message
        try:
            if isinstance(request, LoadRequest):
                reply, out = runner.load(request), []
            elif isinstance(request, CompileRequest):
                reply, out = runner.compile(request, tensors), []
            elif isinstance(request, CallRequest):
                reply, out = runner.call(request, tensors)
            elif isinstance(request, HashRequest):
                reply, out = runner.hash(request, tensors), []
            elif isinstance(request, ReleaseRequest):
                reply, out = runner.release(), []
            else:
                reply, out = runner.time(request, tensors, lambda seed: channel.send(_note(seed)))
        except BaseException as e:  # noqa: BLE001 - our own step failed (the kernel may have broken it)
            error = _error("runtime_error", e).error
            why = f"the harness failed in the kernel's process: {error.reason}"
            reply, out = ErrorReply(error=error.model_copy(update={"reason": why})), []
        del tensors
        try:
            channel.send(reply.model_dump(mode="json"), out)
        except (ChannelClosed, ProtocolError, RuntimeError) as e:
            try:
                why = f"the kernel's outputs could not be handed over: {e}"[:500]
                channel.send(ErrorReply(error=RunnerError(status="runtime_error", reason=why, traceback="")).model_dump())
            except (ChannelClosed, ProtocolError):
                return


def _confine_to_work_folder() -> str:
    """Landlock: from here on this process writes only beneath its working folder (the job's work/, its
    temporary files included) and the compiler caches. Not the job folder itself: the result file there
    is the judge's."""
    return confine_job(Path.cwd())


def _structure_problem(outs: list[Any], inputs: list[torch.Tensor]) -> str | None:
    """What makes an output unfit to hand over: not a plain tensor, or memory of an input."""
    for k, o in enumerate(outs):
        if not isinstance(o, torch.Tensor):
            return f"output {k} is a {type(o).__name__}, not a torch.Tensor"
        if type(o) is not torch.Tensor and not isinstance(o, torch.nn.Parameter):
            return f"output {k} is a tensor subclass ({type(o).__name__}), not a plain torch.Tensor"
        for j, t in enumerate(inputs):
            if _overlap(o, t):
                return f"output {k} shares memory with input {j} (an input returned, or a view of one)"
    return None


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device or a.untyped_storage().nbytes() == 0 or b.untyped_storage().nbytes() == 0:
        return False
    a0, b0 = a.untyped_storage().data_ptr(), b.untyped_storage().data_ptr()
    return a0 < b0 + b.untyped_storage().nbytes() and b0 < a0 + a.untyped_storage().nbytes()


def _note(seed: int) -> dict[str, Any]:
    return Note(note=NudgeNote(nudge_seed=seed)).model_dump()


def _bind_error(e: BindError) -> ErrorReply:
    return ErrorReply(error=RunnerError(status="bind_failed", reason=str(e), traceback=""))


def _error(status: RunnerStatus, e: BaseException, import_: bool = False) -> ErrorReply:
    if any(c.__name__ == "CompilationError" for c in type(e).__mro__):
        status = "compile_failed"
    reason = one_line(e)
    if os.environ.get("TRITON_INTERPRET") == "1" and any("autotuner" in f.filename for f in traceback.extract_tb(e.__traceback__)):
        reason = ("Triton's autotuner needs a GPU and cannot run under its CPU interpreter (run on a GPU, or write "
                  f"one config into the launch): {reason}")  # fmt: skip
    if import_:
        reason = f"importing the kernel failed: {reason}"
    return ErrorReply(error=RunnerError(status=status, reason=reason, traceback=traceback.format_exc()[-TRACEBACK_CHARS:]))


def one_line(e: BaseException) -> str:
    """First and last line of the message: Triton puts the location first and the cause last."""
    lines = [ln.strip() for ln in f"{type(e).__name__}: {e}".splitlines() if ln.strip()]
    text = lines[0] if len(lines) < 2 else f"{lines[0]} ... {lines[-1]}"
    return text[:500]


def _limit_address_space() -> None:
    """Cap virtual memory at what is mapped now plus half the machine's memory (CPU runs only: CUDA
    reserves far more address space than it uses)."""
    try:
        mapped = _status_kb("VmSize") * 1024
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        limit = mapped + total // 2
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (OSError, ValueError):
        pass


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise ValueError(field)

"""Child process: Triton's compile of a knob variant that a worker will probably run soon, ahead of its task.

A variant's runner compiles it on meta tensors (``compile_ahead``) before its checks, the largest of its
steps that needs no GPU, while the worker does nothing else. Here the same pass runs earlier, while the
worker's current candidate is checked and timed: the compiled code lands in Triton's on-disk cache, shared
by every process of the node, so the variant's own pass, whichever worker runs it, loads it instead of
compiling.

The kernel's code never runs in this process. Each job forks a fresh runner (``kernel_runner``, the process
verification calls kernels in) in a fresh folder; the runner confines its writes to that folder and the
compiler caches before it imports the kernel, compiles ahead as it would in a verification, and is then
killed. So is every process it started: this process is their subreaper, so even one whose parent died
is found. The folder goes with the job. Nothing is compiled ahead where the runner could not be confined,
and a process whose CUDA started (a reply it was sent, a problem that starts it) ends after its job,
since a runner forked from it could not start its own. This process keeps only the problem's module and
the imports, from job to job.

A saving, never a check: the reply is only logged, and the variant is still compiled ahead, loaded and
checked in its own verification, which loads what is in the cache as it would load what its own runner
compiled there. A compile is held to the variant's own compile limit, so a variant too slow to compile in
its verification is not compiled here either.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from pydantic import Field

from beamsearch.schema import Record, RunSpec
from workers.harness.binding import model_values
from workers.harness.child_process import EARLY_CUDA_INIT, descendants, serve, warm_up_early
from workers.harness.kernel_runner import KernelProcess
from workers.harness.problem_instance import load_problem_module, shapes_instance
from workers.harness.runner_messages import CompileReply, CompileRequest, ErrorReply, LoadRequest, read_reply
from workers.harness.sandbox import unavailable
from workers.harness.shared_tensors import encode_inputs

# For the runner's start (CUDA, its warm-ups) and the kernel's import, before its compile
LOAD_LIMIT_S = 25.0
PR_SET_CHILD_SUBREAPER = 36


class PrecompileRequest(Record):
    spec: RunSpec
    kernel_path: str
    seed: int = Field(description="the variant's first seed: its inputs' shapes, as its verification makes them")
    compile_limit_s: float = Field(description="the variant's compile limit in its verification")


class PrecompileResult(Record):
    compiled: list[str] = Field([], description="the kernels compiled (or found compiled)")
    stopped: str = Field("", description="why the pass stopped before its end; empty when it ran to the end")
    sandbox: str = Field("", description="how the runner was confined (``kernel_runner``)")
    seconds: float = 0.0


_problems: dict[str, Any] = {}  # the problem's module by its spec: one problem a search, loaded once


def handle(req: PrecompileRequest) -> PrecompileResult:
    start = time.perf_counter()
    if why := unavailable():
        return PrecompileResult(stopped=f"not compiled ahead where its runner cannot be confined: {why}")
    try:
        key = req.spec.model_dump_json()
        if key not in _problems:
            _problems[key] = load_problem_module(req.spec)
        shapes = shapes_instance(_problems[key], req.spec, req.seed)
    except Exception as e:  # noqa: BLE001 - the variant's verification meets the same and says so
        return PrecompileResult(stopped=f"the problem's inputs on meta tensors: {type(e).__name__}: {e}"[:300])
    if torch.cuda.is_initialized():
        return PrecompileResult(stopped="CUDA started in the compile process: a runner forked from it cannot start its own")
    result = _compile_in_runner(req, shapes.inputs, model_values(shapes.model))
    return result.model_copy(update={"seconds": time.perf_counter() - start})


def _compile_in_runner(req: PrecompileRequest, inputs: list[Any], values: dict[str, Any]) -> PrecompileResult:
    home = Path.cwd()
    folder = Path(tempfile.mkdtemp(prefix="job-", dir=home))
    os.chdir(folder)  # the runner's folder, the one it may write: what it leaves there goes with the job
    try:
        runner = KernelProcess.fork()
    except OSError as e:
        shutil.rmtree(folder, ignore_errors=True)
        return PrecompileResult(stopped=f"no runner could be started: {e}")
    finally:
        os.chdir(home)
    try:
        load = read_reply("load", runner.request(LoadRequest(kernel_path=req.kernel_path, device=req.spec.device)
                                                 .model_dump(mode="json"), timeout_s=LOAD_LIMIT_S)[0])  # fmt: skip
        if isinstance(load, ErrorReply):
            return PrecompileResult(stopped=load.error.reason[:300], sandbox=load.error.sandbox or "")
        tensors: list[torch.Tensor] = []
        body = CompileRequest(kernel_path=req.kernel_path, **encode_inputs(inputs, values, tensors))
        reply = read_reply("compile", runner.request(body.model_dump(mode="json"), tensors,
                                                     timeout_s=req.compile_limit_s)[0])  # fmt: skip
        if isinstance(reply, ErrorReply):
            return PrecompileResult(stopped=reply.error.reason[:300], sandbox=load.sandbox)
        assert isinstance(reply, CompileReply)  # read_reply's type for a compile
        return PrecompileResult(compiled=reply.compiled, stopped=reply.stopped, sandbox=load.sandbox)
    except Exception as e:  # noqa: BLE001 - a runner that died, hung or answered nonsense: this job's saving is lost
        return PrecompileResult(stopped=f"the kernel's process: {type(e).__name__}: {e}"[:300])
    finally:
        runner.stop()
        _end_orphans()
        shutil.rmtree(folder, ignore_errors=True)


def _end_orphans(rounds: int = 5) -> None:
    """Kill and reap what the runner started: as this process's subreaper, they are its descendants even
    once their parent died. A few rounds, for any started while the last were killed."""
    for _ in range(rounds):
        left = descendants(os.getpid())
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if not left:
            return


def warm_up_without_cuda() -> None:
    """What a runner's first pass pays whatever the kernel, short of CUDA, paid once here and inherited by
    every runner forked: the first meta tensor made through PyTorch's Python references (it imports sympy)
    and Triton's key of its own installation."""
    from triton.runtime.cache import triton_key

    torch.empty_like(torch.empty(8, device="meta"))
    triton_key()


if __name__ == "__main__":
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # ``torch.cuda.is_available()`` in a problem's module asks NVML, not the driver, which would start CUDA here
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    if os.environ.get(EARLY_CUDA_INIT, "").startswith("cuda"):
        warm_up_early(warm_up_without_cuda)
    serve(PrecompileRequest, handle, early_cuda=False, again=lambda request, result: not torch.cuda.is_initialized())

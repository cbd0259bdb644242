"""Child process: Triton's compile of a knob variant that a worker will probably run soon, ahead of its task.

A variant's runner compiles it on meta tensors (``compile_ahead``) before its checks, the largest of its
steps that needs no GPU, while the worker does nothing else. Here the same pass runs earlier, while the
worker's current candidate is checked and timed: the compiled code lands in Triton's on-disk cache, shared
by every process of the node, so the variant's own pass, whichever worker runs it, loads it instead of
compiling.

The kernel's code never runs in this process. Each job forks a fresh runner (``kernel_runner``, the process
verification calls kernels in), which confines its writes to its work folder and the compiler caches
before it imports the kernel, then compiles ahead as it would in a verification, and is stopped with
anything it started: a kernel can write here only where its runner could, and nothing it does outlives
its job. This process keeps only the problem's module and the imports, from job to job.

A saving, never a check: the reply is only logged, and the variant is still compiled ahead, loaded and
checked in its own verification, which loads what is in the cache as it would load what its own runner
compiled there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Any

import torch
from pydantic import Field, ValidationError

from beamsearch.schema import Record, RunSpec
from workers.harness.binding import model_values
from workers.harness.child_process import EARLY_CUDA_INIT, descendants, serve, warm_up_early
from workers.harness.kernel_runner import KernelProcess, KernelProcessDied, KernelProcessHung
from workers.harness.problem_instance import load_problem_module, shapes_instance
from workers.harness.runner_messages import CompileReply, CompileRequest, ErrorReply, LoadRequest, read_reply
from workers.harness.shared_tensors import encode_value

STEP_LIMIT_S = 25.0  # for the runner's import, and for its compile: about three times a variant's compile limit


class PrecompileRequest(Record):
    spec: RunSpec
    kernel_path: str
    seed: int = Field(description="the variant's first seed: its inputs' shapes, as its verification makes them")


class PrecompileResult(Record):
    compiled: list[str] = Field([], description="the kernels compiled (or found compiled)")
    stopped: str = Field("", description="why the pass stopped before its end; empty when it ran to the end")
    sandbox: str = Field("", description="how the runner was confined (``kernel_runner``)")
    seconds: float = 0.0


_problems: dict[str, Any] = {}  # the problem's module by its spec: one problem a search, loaded once


def handle(req: PrecompileRequest) -> PrecompileResult:
    start = time.perf_counter()
    try:
        key = req.spec.model_dump_json()
        if key not in _problems:
            _problems[key] = load_problem_module(req.spec)
        shapes = shapes_instance(_problems[key], req.spec, req.seed)
    except Exception as e:  # noqa: BLE001 - the variant's verification meets the same and says so
        return PrecompileResult(stopped=f"the problem's inputs on meta tensors: {type(e).__name__}: {e}"[:300])
    result = _compile_in_runner(req, shapes.inputs, model_values(shapes.model))
    return result.model_copy(update={"seconds": time.perf_counter() - start})


def _compile_in_runner(req: PrecompileRequest, inputs: list[Any], values: dict[str, Any]) -> PrecompileResult:
    runner = KernelProcess.fork()
    try:
        load = read_reply("load", runner.request(LoadRequest(kernel_path=req.kernel_path, device=req.spec.device)
                                                 .model_dump(mode="json"), timeout_s=STEP_LIMIT_S)[0])  # fmt: skip
        if isinstance(load, ErrorReply):
            return PrecompileResult(stopped=load.error.reason[:300], sandbox=load.error.sandbox or "")
        tensors: list[torch.Tensor] = []
        body = CompileRequest(kernel_path=req.kernel_path, inputs=[encode_value(t, tensors) for t in inputs],
                              values={k: encode_value(v, tensors) for k, v in values.items()})  # fmt: skip
        reply = read_reply("compile", runner.request(body.model_dump(mode="json"), tensors, timeout_s=STEP_LIMIT_S)[0])
        if isinstance(reply, ErrorReply):
            return PrecompileResult(stopped=reply.error.reason[:300], sandbox=load.sandbox)
        assert isinstance(reply, CompileReply)  # read_reply's type for a compile
        return PrecompileResult(compiled=reply.compiled, stopped=reply.stopped, sandbox=load.sandbox)
    except (KernelProcessDied, KernelProcessHung, ValidationError) as e:
        return PrecompileResult(stopped=f"the kernel's process: {type(e).__name__}: {e}"[:300])
    finally:
        _end_runner(runner)


def _end_runner(runner: KernelProcess) -> None:
    """The runner and every process it started, found while the runner still lives (an orphan is no
    longer anyone's descendant): nothing of a job runs on."""
    for pid in descendants(runner.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    runner.stop()


def warm_up_without_cuda() -> None:
    """What a runner's first pass pays whatever the kernel, short of CUDA, paid once here and inherited by
    every runner forked: the first meta tensor made through PyTorch's Python references (it imports sympy)
    and Triton's key of its own installation. CUDA must not start in this process: a fork of a process that
    started it cannot use it."""
    from triton.runtime.cache import triton_key

    torch.empty_like(torch.empty(8, device="meta"))
    triton_key()


if __name__ == "__main__":
    if os.environ.get(EARLY_CUDA_INIT, "").startswith("cuda"):
        warm_up_early(warm_up_without_cuda)
    serve(PrecompileRequest, handle, early_cuda=False, again=lambda request, result: True)

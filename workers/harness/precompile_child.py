"""Child process: Triton's compile of a knob variant that a worker will probably run soon, ahead of its task.

A variant's runner compiles it on meta tensors (``compile_ahead``) before its checks, the largest of its
steps that needs no GPU, while the worker does nothing else. Here the same pass runs earlier, while the
worker's current candidate is checked and timed, in a process of its own: the compiled code lands in
Triton's on-disk cache, shared by every process of the node, so the variant's own pass, whichever worker
runs it, loads it instead of compiling.

Like the runner's pass, this is a saving, never a check: nothing here is read as evidence, whatever the
kernel does the result is only logged, and the variant is still compiled ahead, loaded and checked in its
own runner. The process confines its writes (Landlock) to its folder and the compiler caches before any
kernel's code runs, as the runner does, so a kernel can write here only where it could write there. It
serves job after job; one that hangs or ends its process costs the next job a fresh process.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch
from pydantic import Field

from beamsearch.schema import Record, RunSpec
from workers.harness.binding import model_values
from workers.harness.child_process import EARLY_CUDA_INIT, serve, warm_up_early
from workers.harness.compile_ahead import compile_ahead
from workers.harness.problem_instance import load_problem_module, shapes_instance
from workers.harness.sandbox import confine_job


class PrecompileRequest(Record):
    spec: RunSpec
    kernel_path: str
    seed: int = Field(description="the variant's first seed: its inputs' shapes, as its verification makes them")


class PrecompileResult(Record):
    compiled: list[str] = Field([], description="the kernels compiled (or found compiled)")
    stopped: str = Field("", description="why the pass stopped before its end; empty when it ran to the end")
    seconds: float = 0.0


_problems: dict[str, Any] = {}  # the problem's module by its spec: one problem a search, loaded once
_sandbox: list[str] = []


def handle(req: PrecompileRequest) -> PrecompileResult:
    start = time.perf_counter()
    try:
        if not _sandbox:  # before any kernel's code runs in this process; the job folder holds the results
            if req.spec.device.startswith("cuda"):  # CUDA's driver cannot start once confined: it starts first
                from triton.runtime import driver

                driver.active.get_current_target()
            _sandbox.append(confine_job(Path.cwd(), [Path.cwd().parent]))
        key = req.spec.model_dump_json()
        if key not in _problems:
            _problems[key] = load_problem_module(req.spec)
        shapes = shapes_instance(_problems[key], req.spec, req.seed)
        compiled, stopped = compile_ahead(req.kernel_path, shapes.inputs, model_values(shapes.model))
    except Exception as e:  # noqa: BLE001 - the problem's own code on meta tensors: the variant's pass meets it too
        compiled, stopped = [], f"{type(e).__name__}: {e}".splitlines()[0][:300]
    return PrecompileResult(compiled=compiled, stopped=stopped, seconds=time.perf_counter() - start)


def warm_up_without_cuda() -> None:
    """What a process's first pass pays whatever the kernel, short of Triton's driver: the first meta tensor
    made through PyTorch's Python references (it imports sympy) and Triton's key of its own installation.
    Triton's driver makes a CUDA context (GPU memory, which verification places are budgeted by), so a
    waiting spare leaves it to its first job."""
    from triton.runtime.cache import triton_key

    torch.empty_like(torch.empty(8, device="meta"))
    triton_key()


if __name__ == "__main__":
    if os.environ.get(EARLY_CUDA_INIT, "").startswith("cuda"):
        warm_up_early(warm_up_without_cuda)
    serve(PrecompileRequest, handle, early_cuda=False, again=lambda request, result: True)

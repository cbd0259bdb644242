"""Compiling a kernel's Triton code before its verification takes a place on the GPU.

A knob variant's first call spends most of its time in Triton's compiler (a CPU job), and the judge makes
that call holding a verification place and the GPU's use lock, so other jobs' timings wait for a compile.
Here the runner calls a second import of the kernel file on *meta* tensors (the inputs' shapes, strides
and dtypes, no memory) with every ``@triton.jit`` launch turned into Triton's own warm-up (compile, do not
launch). The compiled kernels land in Triton's on-disk cache, so the real first call, on the real inputs
and under every check, loads them instead of compiling. Alignment specialisation agrees: a meta tensor's
address is 0, divisible by 16 as a fresh CUDA allocation's is.

The pass is a saving, never a check: whatever stops it early (a kernel that reads values, checks
``is_cuda``, autotunes, calls a compiled kernel's handle) leaves the compile to the first call, as before.
The second import, and any file beside it that it imports and was not loaded before, is thrown away, so what the kernel
file caches at module level from meta tensors never reaches the calls that are checked. Modules both imports
share (a sibling file the kernel file imports, torch's and Triton's registries) are not isolated. It runs
the kernel's code in the runner, outside the verification place and the GPU's use lock, so the judge reads
its reply's evidence as it reads a call's, and the runner synchronises and gives back any memory it took.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from workers.harness.binding import bind
from workers.harness.problem_instance import import_file

MODULE_NAME = "beamsearch_compile_ahead"
WARM_UP_KERNEL = Path(__file__).with_name("warm_up_kernel.py")


class StoppedLaunch(RuntimeError):
    """A launch the pass cannot turn into a compile: an ``@triton.autotune`` kernel (its configs are chosen
    by timing real launches) or a compiled kernel's handle called directly (it would launch on meta
    tensors' null addresses). Such a kernel compiles in its first call."""


@contextlib.contextmanager
def launches_compile_only() -> Iterator[list[str]]:
    """Every ``@triton.jit`` launch compiles without launching (Triton's ``warmup``); an autotuned one, or
    a compiled kernel's handle, raises StoppedLaunch. Yields the names of the kernels compiled (or found
    compiled)."""
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    compiled: list[str] = []
    run, tune, handle = JITFunction.run, Autotuner.run, CompiledKernel.__getitem__

    def compile_only(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        kernel = run(self, *args, grid=grid, warmup=True, **kwargs)
        compiled.append(getattr(self, "__name__", "kernel"))
        return kernel

    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise StoppedLaunch(f"{getattr(self, 'fn', self)!r} is autotuned: it compiles in its first call")

    def refuse_handle(self: Any, grid: Any) -> Any:
        raise StoppedLaunch(f"a compiled kernel's handle ({getattr(self, 'name', '?')}) would launch on meta tensors")

    JITFunction.run, Autotuner.run, CompiledKernel.__getitem__ = compile_only, refuse, refuse_handle  # type: ignore[method-assign]
    try:
        yield compiled
    finally:
        JITFunction.run, Autotuner.run, CompiledKernel.__getitem__ = run, tune, handle  # type: ignore[method-assign]


def compile_ahead(kernel_path: str | Path, inputs: list[Any], values: dict[str, Any]) -> tuple[list[str], str]:
    """Compile what ``kernel_function`` launches for these (meta) inputs: the kernels compiled, and why
    the pass stopped early ("" when it ran to the end). Never raises for what the kernel does."""
    compiled: list[str] = []
    modules = set(sys.modules)
    try:
        with launches_compile_only() as compiled, torch.no_grad():
            fn = getattr(import_file(kernel_path, MODULE_NAME), "kernel_function", None)
            if not callable(fn):
                return compiled, "no callable kernel_function"
            bind(fn, inputs, values)()
    except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt from the kernel included
        return compiled, f"{type(e).__name__}: {e}".splitlines()[0][:300]
    finally:
        folder = Path(kernel_path).resolve().parent
        for name in set(sys.modules) - modules:  # the copy, and files beside it that it imported first
            file = getattr(sys.modules.get(name), "__file__", None)
            if name == MODULE_NAME or (file and Path(file).resolve().parent == folder):
                sys.modules.pop(name, None)
    return compiled, ""


def warm_up_pass() -> None:
    """In a GPU runner waiting for its job: the pass over a small kernel of the harness's own, so a
    candidate's pass pays only its own compile. A process's first pass also pays for the first meta tensor
    made through PyTorch's Python references (it imports sympy), Triton's key of its own installation (a
    hash of its files) and the start of Triton's driver, whatever the kernel."""
    _, stopped = compile_ahead(WARM_UP_KERNEL, [torch.empty(4096, dtype=torch.bfloat16, device="meta")], {})
    if stopped:
        raise RuntimeError(f"the warm-up's compile pass stopped: {stopped}")

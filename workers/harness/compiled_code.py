"""What one call of a kernel launches on the GPU, as one hash: every Triton launch's compiled code
(without debug information), grid and arguments (tensors by dtype, shape and strides; other values as
they are).

Two candidates with different sources can run the very same code: a knob the compiler ignores
(``num_stages`` in a kernel with no loop), a renamed variable, a reordered line in the host code. The
driver keeps only the faster of kernels with the same hash, so a beam slot is not spent twice on one
kernel. Work outside Triton (PyTorch ops in the host code) is not in the hash; keeping the faster of the
two is right whatever that work is.

Only compiled kernels have code to hash. The hash is None (candidates are then told apart by their
source alone) under Triton's interpreter, for a call that launches no Triton kernel, and for one whose
compiled kernel or launch arguments cannot be read; the timing child only asks on a GPU.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any


def launch_hash(call: Callable[[], Any], synchronize: Callable[[], None]) -> str | None:
    """Run ``call`` once more (it has run before: its kernels are compiled) and hash what it launched."""
    from triton import knobs
    from triton.runtime.jit import JITFunction

    jits = [o for o in gc.get_objects() if isinstance(o, JITFunction)]
    launches: list[tuple[Any, dict[str, Any]]] = []
    unreadable: list[str] = []

    def record(meta: Any) -> None:  # never raises: a raising hook would stop the kernel's launch
        try:
            launches.append((meta.data["function"], meta.get()))
        except Exception as e:  # noqa: BLE001 - an odd argument; the hash is given up, not the call
            unreadable.append(repr(e))

    before = [(j, j.launch_metadata) for j in jits]
    hook_before = knobs.runtime.launch_enter_hook
    try:
        for j in jits:  # Triton asks each kernel's launch_metadata for extra fields: grid and arguments
            j.launch_metadata = _describe_launch
        knobs.runtime.launch_enter_hook = record
        call()
        synchronize()
    finally:
        knobs.runtime.launch_enter_hook = hook_before
        for j, metadata in before:
            j.launch_metadata = metadata
    kernels = _kernels_by_handle(jits)
    described = []
    for function, meta in launches:
        if function not in kernels or "grid" not in meta:
            return None
        described.append({"code": code_identity(kernels[function]), "grid": meta["grid"], "args": meta["args"]})
    if unreadable or not described:
        return None
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:16]


def _describe_launch(grid: tuple[int, ...], metadata: Any, args: dict[str, Any]) -> dict[str, Any]:
    full_grid = [int(g) for g in grid] + [1] * (3 - len(grid))
    return {"grid": full_grid, "args": [_describe_arg(value) for value in args.values()]}  # names may differ


def _describe_arg(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return ["tensor", str(value.dtype), list(value.shape), list(value.stride())]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return type(value).__name__


def _kernels_by_handle(jits: list[Any]) -> dict[Any, Any]:
    """Loaded kernel handle -> compiled kernel, for every kernel the JIT functions compiled."""
    out = {}
    for j in jits:
        for kernels, *_ in list(j.device_caches.values()):
            for kernel in kernels.values():
                if getattr(kernel, "function", None) is not None:
                    out[kernel.function] = kernel
    return out


_DEBUG_ONLY = re.compile(r"^\s*(\.loc|\.file|//|\$L__(tmp|func_begin|func_end)\d+:)")


def code_identity(kernel: Any) -> str:
    """Hash of a compiled kernel's code without its debug information.

    The binary itself will not do: Triton compiles with line info, so the candidate's file name and line
    numbers are in it, and every candidate lives in a file of its own. The PTX up to its debug sections,
    less ``.loc``/``.file`` lines, debug labels and comments, with the kernel's name taken out, is the
    code; what the launch needs beside it (warps, CTAs, shared memory, register cap) is added.
    """
    meta = kernel.metadata
    launch = [getattr(meta, k, None) for k in ("num_warps", "num_ctas", "shared", "maxnreg", "target")]
    ptx = kernel.asm.get("ptx") if hasattr(kernel.asm, "get") else None
    if not isinstance(ptx, str):  # another backend: the binary, debug info and all
        return hashlib.sha256(bytes(kernel.kernel) + repr(launch).encode()).hexdigest()
    code = ptx.split("\t.section", 1)[0].split("\n.section", 1)[0]
    lines = [ln.split("//", 1)[0].rstrip() for ln in code.splitlines() if not _DEBUG_ONLY.match(ln)]
    # The name where PTX declares the entry and its parameters (``name(``, ``name_param_0``), never
    # inside an instruction: a kernel called ``add`` must not turn ``add.f32`` into a placeholder.
    own_name = re.compile(rf"(?<![\w$.%]){re.escape(kernel.name)}(?=\(|_param_\d)")
    text = own_name.sub("<kernel>", "\n".join(ln for ln in lines if ln))
    return hashlib.sha256((text + repr(launch)).encode()).hexdigest()

"""Which of a PyTorch baseline's operators run in a vendor library (cuBLAS, cuDNN, an attention or FFT
library) rather than in generated code. A search's kernels are Triton: a baseline whose GEMM is cuBLAS's
is a bar no seed can hold, and a result that loses to it says so.

The operators are read off one call under PyTorch's profiler (CPU activity: the ATen operators the call
dispatched). It sees eager's and a compiled graph's alike: Inductor calls a vendor library through the
same ATen operator (``extern_kernels.addmm`` is ``aten::addmm``), and its Triton kernels are no ATen operator.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

# ATen operators that run a vendor library's kernel on CUDA, by library
LIBRARIES: dict[str, re.Pattern[str]] = {
    "cuBLAS": re.compile(r"(mm|addmm|addmv|mv|bmm|baddbmm|addbmm|dot|vdot|_scaled_mm|_int_mm|_addmm_activation)"),
    "cuDNN": re.compile(r"(_?convolution\w*|cudnn_\w+|conv\w*|_?conv_depthwise\w*|miopen_\w+)"),
    "an attention library": re.compile(r"(_scaled_dot_product_(flash|efficient|cudnn)_attention\w*|_(flash|efficient)_attention_\w+)"),
    "cuFFT": re.compile(r"(_fft_\w+)"),
}  # fmt: skip


def library_ops(names: Iterable[str]) -> list[str]:
    """The vendor-library operators among profiler event names (``aten::addmm``), each once, as
    ``addmm (cuBLAS)``, sorted."""
    found = set()
    for name in names:
        if not name.startswith("aten::"):
            continue
        op = name.removeprefix("aten::")
        library = next((lib for lib, pattern in LIBRARIES.items() if pattern.fullmatch(op)), None)
        if library:
            found.add(f"{op} ({library})")
    return sorted(found)


def library_ops_of(call: Callable[[], Any]) -> list[str] | None:
    """Call ``call`` once under the profiler and return its vendor-library operators (``library_ops``);
    None where the profiler could not run (another profiler active, say): unknown, not none."""
    from torch.profiler import ProfilerActivity, profile

    try:
        with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU]) as prof:
            call()
    except RuntimeError:
        return None
    return library_ops(event.key for event in prof.key_averages())


@contextlib.contextmanager
def _quiet_stderr():  # the profiler's native start and stop lines would fill a run's log
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)

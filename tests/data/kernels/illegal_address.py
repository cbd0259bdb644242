"""Bad: writes far outside its output (an illegal memory access on a GPU)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(out_ptr):
    offs = tl.arange(0, 16).to(tl.int64) + (1 << 40)
    tl.store(out_ptr + offs, tl.zeros((16,), dtype=tl.float32).to(out_ptr.dtype.element_ty))


def kernel_function(x, weight):
    out = torch.empty_like(x)
    _kernel[(1,)](out)
    return out

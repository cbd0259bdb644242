"""Bad: the Triton kernel is invalid (tl.arange needs a power-of-two range)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n):
    offs = tl.arange(0, 3)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def kernel_function(x, weight):
    out = torch.empty_like(x)
    _kernel[(1,)](x, out, x.numel())
    return out

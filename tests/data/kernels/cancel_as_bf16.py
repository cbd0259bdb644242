"""For cancel_problem: rounds each step to bf16, as PyTorch's bf16 forward does (so it misses the default
bf16 tolerance against the fp32 reference exactly as PyTorch does)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    big = (x * 256.0).to(tl.bfloat16).to(tl.float32)
    y = (big + 1.0).to(tl.bfloat16).to(tl.float32) - big
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)


def kernel_function(x):
    out = torch.empty_like(x)
    _kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out

"""For cancel_problem: rounds x + 8 to the nearest 1/16, bf16's spacing there, as PyTorch's bf16 forward does
(so it misses the default bf16 tolerance against the fp32 reference as PyTorch does; rounded by hand, since
Triton's interpreter converts to bf16 by truncating)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    y = tl.floor((x + 8.0) * 16.0 + 0.5) / 16.0 - 8.0
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)


def kernel_function(x):
    out = torch.empty_like(x)
    _kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out

"""A small Triton kernel a waiting runner passes over (``compile_ahead.warm_up_pass``); never a candidate."""

import torch
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def kernel_function(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _copy[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out

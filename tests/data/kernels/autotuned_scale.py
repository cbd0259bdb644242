"""Scale each column of x by weight (scale_rows_problem.py), written with @triton.autotune as many first drafts are."""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 64}, num_warps=2),
        triton.Config({"BLOCK_SIZE": 256}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def _scale(x_ptr, w_ptr, out_ptr, n, cols, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    w = tl.load(w_ptr + offs % cols, mask=mask, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x * w).to(out_ptr.dtype.element_ty), mask=mask)


def kernel_function(x, weight):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _scale[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, weight, out, n, x.shape[-1])
    return out

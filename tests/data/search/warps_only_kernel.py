"""A starting kernel for scale_rows_problem whose only knob is num_warps (its block covers every row): a
knob space of a handful of points, for the sweep's test."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, w_ptr, out_ptr, rows, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]
    c = tl.arange(0, BLOCK_C)[None, :]
    mask = (r < rows) & (c < cols)
    x = tl.load(x_ptr + r * cols + c, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + c, mask=c < cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + r * cols + c, (x * w).to(out_ptr.dtype.element_ty), mask=mask)


def kernel_function(x, weight):
    out = torch.empty_like(x)
    rows, cols = x.shape
    BLOCK_R = triton.next_power_of_2(rows)
    scale_kernel[(triton.cdiv(rows, BLOCK_R),)](x, weight, out, rows, cols, BLOCK_R=BLOCK_R,
                                               BLOCK_C=triton.next_power_of_2(cols), num_warps=4)
    return out

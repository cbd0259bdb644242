"""scale_rows with two rows a program, written out by hand: NUM_ROWS other than 2 is wrong."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, w_ptr, out_ptr, rows, cols, NUM_ROWS: tl.constexpr, BLOCK_C: tl.constexpr):
    r0 = tl.program_id(0) * NUM_ROWS
    for c0 in range(0, cols, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        w = tl.load(w_ptr + c, mask=c < cols, other=0.0).to(tl.float32)
        m0 = (c < cols) & (r0 < rows)
        x0 = tl.load(x_ptr + r0 * cols + c, mask=m0, other=0.0).to(tl.float32)
        tl.store(out_ptr + r0 * cols + c, (x0 * w).to(out_ptr.dtype.element_ty), mask=m0)
        m1 = (c < cols) & (r0 + 1 < rows)
        x1 = tl.load(x_ptr + (r0 + 1) * cols + c, mask=m1, other=0.0).to(tl.float32)
        tl.store(out_ptr + (r0 + 1) * cols + c, (x1 * w).to(out_ptr.dtype.element_ty), mask=m1)


def kernel_function(x, weight):
    out = torch.empty_like(x)
    rows, cols = x.shape
    NUM_ROWS = 2
    BLOCK_C = 16
    scale_kernel[(triton.cdiv(rows, NUM_ROWS),)](x, weight, out, rows, cols, NUM_ROWS=NUM_ROWS, BLOCK_C=BLOCK_C,
                                                num_warps=4)
    return out

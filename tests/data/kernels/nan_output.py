"""Bad: writes NaN into the first element of every row."""

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, w_ptr, out_ptr, rows, cols, BLOCK_C: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK_C)
    m = c < cols
    y = tl.load(x_ptr + r * cols + c, mask=m).to(tl.float32) * tl.load(w_ptr + c, mask=m).to(tl.float32)
    y = tl.where(c == 0, float("nan"), y)
    tl.store(out_ptr + r * cols + c, y.to(out_ptr.dtype.element_ty), mask=m)


def kernel_function(x, weight):
    out = torch.empty_like(x)
    _kernel[(x.shape[0],)](x, weight, out, x.shape[0], x.shape[1], BLOCK_C=triton.next_power_of_2(x.shape[1]))
    return out

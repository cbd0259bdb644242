"""Shared Triton kernel for the test kernels of scale_rows_problem (out = x * weight, per column)."""

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


def launch(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, rows: int | None = None) -> torch.Tensor:
    """out[:rows] = x[:rows] * weight; all rows by default."""
    rows = x.shape[0] if rows is None else rows
    cols = x.shape[1]
    scale_kernel[(triton.cdiv(rows, 8),)](x, weight, out, rows, cols, BLOCK_R=8, BLOCK_C=triton.next_power_of_2(cols))
    return out



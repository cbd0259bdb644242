"""Mean over one dimension, which is removed from the output.

The input is viewed as (outer, R, inner): R is the reduced dimension, outer the product of the
sizes before it and inner the product of those after it; the output is (outer, inner).

Launch layout: a 2-D grid of (outer, cdiv(inner, BLOCK_N)) programs. Each owns BLOCK_N consecutive
outputs of one outer index and walks down R in chunks of BLOCK_R, loading (BLOCK_R, BLOCK_N) tiles
(contiguous along inner) and keeping fp32 column sums, divided by R at the end. Offsets are int64
because outer * R * inner exceeds 2**31 for the full problem.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _mean_dim_kernel(
    x_ptr,
    out_ptr,
    R,
    INNER,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    outer = tl.program_id(0)
    block = tl.program_id(1)
    cols = block * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < INNER
    base = outer.to(tl.int64) * R * INNER

    acc = tl.zeros((BLOCK_R, BLOCK_N), dtype=tl.float32)
    for r_start in range(0, R, BLOCK_R):
        r = r_start + tl.arange(0, BLOCK_R)
        mask = (r < R)[:, None] & col_mask[None, :]
        offs = base + r[:, None].to(tl.int64) * INNER + cols[None, :]
        acc += tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)

    mean = tl.sum(acc, axis=0) / R
    tl.store(out_ptr + outer.to(tl.int64) * INNER + cols, mean.to(out_ptr.dtype.element_ty), mask=col_mask)


def kernel_function(x: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """torch.mean(x, dim) for a floating-point x (the problem's default dim is 1)."""
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension")
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got {x.dtype}")
    if not -x.dim() <= dim < x.dim():
        raise ValueError(f"dim {dim} is out of range for a {x.dim()}-D tensor")
    dim = dim % x.dim()

    x = x.contiguous()
    shape = list(x.shape)
    R = shape[dim]
    outer = 1
    for d in shape[:dim]:
        outer *= d
    inner = 1
    for d in shape[dim + 1 :]:
        inner *= d
    out = torch.empty(shape[:dim] + shape[dim + 1 :], device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out
    if R == 0:
        return out.fill_(float("nan"))  # the mean of nothing, as torch.mean gives

    BLOCK_R = 16
    BLOCK_N = 128
    grid = (outer, triton.cdiv(inner, BLOCK_N))
    _mean_dim_kernel[grid](
        x,
        out,
        R,
        inner,
        BLOCK_R=BLOCK_R,
        BLOCK_N=BLOCK_N,
        num_warps=4,
    )
    return out

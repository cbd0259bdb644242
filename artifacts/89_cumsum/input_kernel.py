"""Inclusive cumulative sum along one dimension.

The scanned dimension is moved last (a copy only when it is not already last and contiguous), so
the kernel sees (rows, L) contiguous rows.

Launch layout: a 1-D grid of one program per row. Each program walks its row in chunks of BLOCK:
it scans the chunk with tl.cumsum in fp32, adds the running total of the chunks before it, stores,
and carries the chunk's last prefix forward. Row offsets are int64 because rows * L is 2**30 for
the full problem.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _cumsum_kernel(
    x_ptr,
    out_ptr,
    L,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    base = row.to(tl.int64) * L

    carry = tl.zeros((), dtype=tl.float32)
    for start in range(0, L, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < L
        v = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        prefix = tl.cumsum(v, axis=0) + carry
        tl.store(out_ptr + base + cols, prefix.to(out_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(v, axis=0)


def kernel_function(x: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """torch.cumsum(x, dim) for a floating-point x (the problem's default dim is 1)."""
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension")
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got {x.dtype}")
    if not -x.dim() <= dim < x.dim():
        raise ValueError(f"dim {dim} is out of range for a {x.dim()}-D tensor")

    moved = x.movedim(dim, -1).contiguous()
    out = torch.empty_like(moved)
    L = moved.shape[-1]
    rows = moved.numel() // L if L else 0
    if rows == 0 or L == 0:
        return out.movedim(-1, dim)

    BLOCK = 1024
    grid = (rows,)
    _cumsum_kernel[grid](
        moved,
        out,
        L,
        BLOCK=BLOCK,
        num_warps=4,
    )
    return out.movedim(-1, dim)

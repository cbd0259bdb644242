"""Log-softmax along one dimension: y = x - max(x) - log(sum(exp(x - max(x)))), per row.

The reduced dimension is moved last (a copy only when it is not already last and contiguous), so
the kernel sees (rows, L) contiguous rows.

Launch layout: a 1-D grid of one program per row. Each program makes two passes over its row in
chunks of BLOCK: the first keeps, per lane, a running maximum and a sum of exponentials rescaled
whenever the maximum grows (the online form), then combines the lanes into the row's max and
log-sum-exp; the second reloads the row and writes x - max - log-sum-exp. All arithmetic is fp32.
Row offsets are int64 because rows * L exceeds 2**31 for the full problem.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _log_softmax_kernel(
    x_ptr,
    out_ptr,
    L,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    base = row.to(tl.int64) * L

    # Pass 1: per-lane running max and rescaled sum of exp.
    run_max = tl.full((BLOCK,), float("-inf"), dtype=tl.float32)
    run_sum = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, L, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + base + cols, mask=cols < L, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(run_max, v)
        # A lane that has seen only -inf keeps a zero sum (avoids -inf - -inf = NaN).
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - safe_max) + tl.exp(v - safe_max)
        run_max = new_max

    row_max = tl.max(run_max, axis=0)
    safe_row_max = tl.where(row_max == float("-inf"), 0.0, row_max)
    total = tl.sum(run_sum * tl.exp(run_max - safe_row_max), axis=0)
    shift = safe_row_max + tl.log(total)

    # Pass 2: write x - (max + log(sum exp)).
    for start in range(0, L, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < L
        v = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + base + cols, (v - shift).to(out_ptr.dtype.element_ty), mask=mask)


def kernel_function(x: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """log_softmax of x along ``dim`` (the problem's default is 1); returns a new tensor."""
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
    _log_softmax_kernel[grid](
        moved,
        out,
        L,
        BLOCK=BLOCK,
        num_warps=4,
    )
    return out.movedim(-1, dim)

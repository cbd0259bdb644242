"""The exact GELU, y = x * (1 + erf(x / sqrt(2))) / 2, element by element, computed in fp32.

Launch layout: a 1-D grid of cdiv(numel, BLOCK) programs over the flat, contiguous tensor; each
program takes BLOCK consecutive elements (the last block is masked). Offsets are int64 because the
full problem has about 1.6 billion elements, close to 2**31.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _gelu_kernel(
    x_ptr,
    out_ptr,
    n,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def kernel_function(x: torch.Tensor) -> torch.Tensor:
    """GELU (erf form) of x, any shape; returns a new tensor."""
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got {x.dtype}")

    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return out

    BLOCK = 1024
    grid = (triton.cdiv(n, BLOCK),)
    _gelu_kernel[grid](
        x,
        out,
        n,
        BLOCK=BLOCK,
        num_warps=4,
    )
    return out

"""1-D max pooling (like nn.MaxPool1d, ceil_mode=False) of an (N, C, L) tensor.

The output length is (L + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1, and window
positions that fall in the padding are ignored (they act as -inf).

Launch layout: a 2-D grid of (N * C, cdiv(OL, BLOCK)) programs: axis 0 picks the row, axis 1 a
block of BLOCK consecutive outputs of that row. Each program visits the kernel_size window taps
(unrolled at compile time), keeping a running fp32 maximum. Row offsets are int64 because
N * C * L is about 8 * 10**8 for the full problem.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _maxpool1d_kernel(
    x_ptr,
    out_ptr,
    L,
    OL,
    KSIZE: tl.constexpr,
    STRIDE: tl.constexpr,
    PADDING: tl.constexpr,
    DILATION: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    block = tl.program_id(1)
    o = block * BLOCK + tl.arange(0, BLOCK)
    o_mask = o < OL
    x_row = x_ptr + row.to(tl.int64) * L
    start = o * STRIDE - PADDING  # first tap of each window; negative in the padding

    acc = tl.full((BLOCK,), float("-inf"), dtype=tl.float32)
    for k in tl.static_range(KSIZE):
        i = start + k * DILATION
        ok = o_mask & (i >= 0) & (i < L)
        v = tl.load(x_row + i, mask=ok, other=0.0).to(tl.float32)
        v = tl.where(ok, v, float("-inf"))
        # Propagate NaN like PyTorch's max pooling does.
        acc = tl.maximum(acc, v, propagate_nan=tl.PropagateNan.ALL)

    tl.store(out_ptr + row.to(tl.int64) * OL + o, acc.to(out_ptr.dtype.element_ty), mask=o_mask)


def _single_int(value, name):
    """Accept an int or a one-element tuple/list (how nn.MaxPool1d may hold it) and return the int."""
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ValueError(f"{name} must be a single int for 1-D pooling, got {value}")
        value = value[0]
    return int(value)


def kernel_function(x: torch.Tensor, kernel_size, stride=None, padding=0, dilation=1) -> torch.Tensor:
    """Max-pool x of shape (N, C, L) over its last dimension; returns a new tensor."""
    if x.dim() != 3:
        raise ValueError(f"x must be 3-D (N, C, L), got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got {x.dtype}")
    k = _single_int(kernel_size, "kernel_size")
    s = k if stride is None else _single_int(stride, "stride")
    p = _single_int(padding, "padding")
    d = _single_int(dilation, "dilation")
    if k <= 0 or s <= 0 or d <= 0 or p < 0:
        raise ValueError(f"bad pooling parameters: kernel_size={k}, stride={s}, padding={p}, dilation={d}")
    if p > k // 2:
        raise ValueError(f"padding ({p}) must be at most half the kernel size ({k})")

    N, C, L = x.shape
    OL = (L + 2 * p - d * (k - 1) - 1) // s + 1
    if OL <= 0:
        raise ValueError(f"input {tuple(x.shape)} is too small for this pooling window")

    x = x.contiguous()
    out = torch.empty((N, C, OL), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out

    BLOCK = 256
    grid = (N * C, triton.cdiv(OL, BLOCK))
    _maxpool1d_kernel[grid](
        x,
        out,
        L,
        OL,
        KSIZE=k,
        STRIDE=s,
        PADDING=p,
        DILATION=d,
        BLOCK=BLOCK,
        num_warps=4,
    )
    return out

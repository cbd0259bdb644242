"""3-D max pooling (like nn.MaxPool3d, ceil_mode=False) of an (N, C, D, H, W) tensor.

Each output size is (L + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1, and
window positions that fall in the padding are ignored (they act as -inf).

Launch layout: a 1-D grid of cdiv(N * C * OD * OH * OW, BLOCK) programs over the flat,
contiguous output. Each program takes BLOCK consecutive outputs, recovers (n*c, od, oh, ow)
from the flat index, and visits the kernel_size**3 window taps (unrolled at compile time),
keeping a running fp32 maximum. Indices are int64 since N * C * D * H * W is about 2**30
for the full problem.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _maxpool3d_kernel(
    x_ptr,
    out_ptr,
    total,
    D,
    H,
    W,
    OD,
    OH,
    OW,
    KSIZE: tl.constexpr,
    STRIDE: tl.constexpr,
    PADDING: tl.constexpr,
    DILATION: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total

    # Flat output index -> (nc, od, oh, ow) for a contiguous (N*C, OD, OH, OW) layout.
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    t = t // OH
    od = t % OD
    nc = t // OD

    # First input coordinate covered by each window (may be negative: padding).
    d0 = od * STRIDE - PADDING
    h0 = oh * STRIDE - PADDING
    w0 = ow * STRIDE - PADDING
    plane = nc * D * H * W

    acc = tl.full((BLOCK,), float("-inf"), dtype=tl.float32)
    for kd in tl.static_range(KSIZE):
        idd = d0 + kd * DILATION
        d_ok = (idd >= 0) & (idd < D)
        for kh in tl.static_range(KSIZE):
            ih = h0 + kh * DILATION
            h_ok = (ih >= 0) & (ih < H)
            for kw in tl.static_range(KSIZE):
                iw = w0 + kw * DILATION
                ok = mask & d_ok & h_ok & (iw >= 0) & (iw < W)
                src = plane + (idd * H + ih) * W + iw
                v = tl.load(x_ptr + src, mask=ok, other=0.0).to(tl.float32)
                v = tl.where(ok, v, float("-inf"))
                # Propagate NaN like PyTorch's max pooling does.
                acc = tl.maximum(acc, v, propagate_nan=tl.PropagateNan.ALL)

    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def _single_int(value, name):
    """Accept an int or a tuple/list of equal ints (a cubic window) and return the int."""
    if isinstance(value, (tuple, list)):
        if len(value) == 0 or any(v != value[0] for v in value):
            raise ValueError(f"{name} must be the same along every spatial dim, got {value}")
        value = value[0]
    return int(value)


def kernel_function(x: torch.Tensor, kernel_size, stride=None, padding=0, dilation=1) -> torch.Tensor:
    """Max-pool x of shape (N, C, D, H, W) with a cubic window; returns a new tensor."""
    if x.dim() != 5:
        raise ValueError(f"x must be 5-D (N, C, D, H, W), got shape {tuple(x.shape)}")
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

    N, C, D, H, W = x.shape
    OD = (D + 2 * p - d * (k - 1) - 1) // s + 1
    OH = (H + 2 * p - d * (k - 1) - 1) // s + 1
    OW = (W + 2 * p - d * (k - 1) - 1) // s + 1
    if OD <= 0 or OH <= 0 or OW <= 0:
        raise ValueError(f"input {tuple(x.shape)} is too small for this pooling window")

    x = x.contiguous()
    out = torch.empty((N, C, OD, OH, OW), device=x.device, dtype=x.dtype)
    total = out.numel()
    if total == 0:
        return out

    BLOCK = 256
    grid = (triton.cdiv(total, BLOCK),)
    _maxpool3d_kernel[grid](
        x,
        out,
        total,
        D,
        H,
        W,
        OD,
        OH,
        OW,
        KSIZE=k,
        STRIDE=s,
        PADDING=p,
        DILATION=d,
        BLOCK=BLOCK, num_warps=16,
    )
    return out

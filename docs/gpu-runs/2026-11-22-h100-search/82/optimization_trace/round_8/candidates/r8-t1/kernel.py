"""Depthwise 2-D convolution (like nn.Conv2d with groups = C and C output channels).

out[n, c, oh, ow] = bias[c] + sum over (kh, kw) of
    x[n, c, oh * stride - padding + kh * dilation, ow * stride - padding + kw * dilation] * w[c, 0, kh, kw]
with zeros outside the image.

Launch layout: a 2-D grid (N * C, cdiv(OH, BLOCK_H) * cdiv(OW, BLOCK_W)). Each program
computes one BLOCK_H x BLOCK_W tile of the output plane of one (n, c) pair, visiting the
k * k taps (unrolled at compile time) and accumulating in fp32. Plane offsets are int64.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _depthwise_conv2d_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    C,
    H,
    W,
    OH,
    OW,
    num_w_tiles,
    KSIZE: tl.constexpr,
    STRIDE: tl.constexpr,
    PADDING: tl.constexpr,
    DILATION: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_W: tl.constexpr,
):
    plane = tl.program_id(0)  # n * C + c
    tile = tl.program_id(1)
    c = plane % C
    tile_h = tile // num_w_tiles
    tile_w = tile % num_w_tiles

    oh = tile_h * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = tile_w * BLOCK_W + tl.arange(0, BLOCK_W)
    out_mask = (oh < OH)[:, None] & (ow < OW)[None, :]

    x_plane = x_ptr + plane.to(tl.int64) * H * W
    out_plane = out_ptr + plane.to(tl.int64) * OH * OW
    w_chan = w_ptr + c * (KSIZE * KSIZE)

    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for kh in tl.static_range(KSIZE):
        ih = oh * STRIDE - PADDING + kh * DILATION
        h_ok = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KSIZE):
            iw = ow * STRIDE - PADDING + kw * DILATION
            w_ok = (iw >= 0) & (iw < W)
            m = out_mask & h_ok[:, None] & w_ok[None, :]
            xv = tl.load(x_plane + ih[:, None] * W + iw[None, :], mask=m, other=0.0).to(tl.float32)
            wv = tl.load(w_chan + kh * KSIZE + kw).to(tl.float32)
            acc += xv * wv

    if HAS_BIAS:
        acc += tl.load(b_ptr + c).to(tl.float32)

    tl.store(
        out_plane + oh[:, None] * OW + ow[None, :],
        acc.to(out_ptr.dtype.element_ty),
        mask=out_mask,
    )


def _single_int(value, name):
    """Accept an int or a tuple/list of equal ints and return the int."""
    if isinstance(value, (tuple, list)):
        if len(value) == 0 or any(v != value[0] for v in value):
            raise ValueError(f"{name} must be the same along both spatial dims, got {value}")
        value = value[0]
    return int(value)


def kernel_function(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups=None,
    kernel_size=None,
    output_padding=0,
) -> torch.Tensor:
    """Depthwise convolution of x (N, C, H, W) with weight (C, 1, k, k) and optional bias (C,)."""
    if x.dim() != 4:
        raise ValueError(f"x must be 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    N, C, H, W = x.shape
    if weight.dim() != 4 or weight.shape[0] != C or weight.shape[1] != 1:
        raise ValueError(f"weight must have shape ({C}, 1, k, k), got {tuple(weight.shape)}")
    k = weight.shape[2]
    if weight.shape[3] != k:
        raise ValueError(f"only square kernels are supported, got {tuple(weight.shape[2:])}")
    if kernel_size is not None and _single_int(kernel_size, "kernel_size") != k:
        raise ValueError(f"kernel_size={kernel_size} does not match weight shape {tuple(weight.shape)}")
    if groups is not None and _single_int(groups, "groups") != C:
        raise ValueError(f"depthwise convolution needs groups == C ({C}), got {groups}")
    if _single_int(output_padding, "output_padding") != 0:
        raise ValueError("output_padding has no meaning for a forward convolution; it must be 0")
    s = _single_int(stride, "stride")
    p = _single_int(padding, "padding")
    dl = _single_int(dilation, "dilation")
    if s <= 0 or dl <= 0 or p < 0:
        raise ValueError(f"bad parameters: stride={s}, padding={p}, dilation={dl}")
    if x.dtype != weight.dtype or x.device != weight.device:
        raise ValueError("x and weight must share dtype and device")
    if bias is not None and (bias.shape != (C,) or bias.device != x.device):
        raise ValueError(f"bias must have shape ({C},) and live on x's device")

    OH = (H + 2 * p - dl * (k - 1) - 1) // s + 1
    OW = (W + 2 * p - dl * (k - 1) - 1) // s + 1
    if OH <= 0 or OW <= 0:
        raise ValueError(f"input {tuple(x.shape)} is too small for a {k}x{k} kernel")

    x = x.contiguous()
    weight = weight.contiguous()
    has_bias = bias is not None
    bias_arg = bias.contiguous() if has_bias else weight  # dummy pointer when there is no bias
    out = torch.empty((N, C, OH, OW), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out

    BLOCK_H = 8
    BLOCK_W = 128
    num_w_tiles = triton.cdiv(OW, BLOCK_W)
    grid = (N * C, triton.cdiv(OH, BLOCK_H) * num_w_tiles)
    _depthwise_conv2d_kernel[grid](
        x,
        weight,
        bias_arg,
        out,
        C,
        H,
        W,
        OH,
        OW,
        num_w_tiles,
        KSIZE=k,
        STRIDE=s,
        PADDING=p,
        DILATION=dl,
        HAS_BIAS=has_bias,
        BLOCK_H=BLOCK_H,
        BLOCK_W=BLOCK_W, num_warps=8, num_stages=4,
    )
    return out

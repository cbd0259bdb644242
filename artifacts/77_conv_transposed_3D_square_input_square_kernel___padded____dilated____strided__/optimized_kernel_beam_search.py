"""Transposed 3-D convolution (like nn.ConvTranspose3d, groups=1) with a cubic kernel.

Written as a gather: output (n, co, od, oh, ow) sums x[n, ci, id, ih, iw] * w[ci, co, kd, kh, kw]
over every input channel ci and kernel tap (kd, kh, kw) for which
od + padding - kd * dilation == id * stride with 0 <= id < D (and likewise for h and w).

Launch layout: a 3-D grid (N * OD * OH, cdiv(C_out, BLOCK_CO), cdiv(OW, BLOCK_W)). Each
program computes a (BLOCK_CO, BLOCK_W) tile of one output row (n, :, od, oh, :). For each of
the kernel_size**3 taps (unrolled at compile time) it loops over the input channels and adds
the outer product of a BLOCK_CO slice of weights and a BLOCK_W slice of the input row into
an fp32 accumulator. Depth/height taps that miss the input (off the stride grid or out of
range) are skipped for the whole tile; width taps are masked per lane. Offsets are int64.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _conv_transpose3d_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    C_in,
    C_out,
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
    HAS_BIAS: tl.constexpr,
    BLOCK_CO: tl.constexpr,
    BLOCK_W: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)  # flat index of (n, od, oh)
    pid_co = tl.program_id(1)
    pid_w = tl.program_id(2)

    oh = row % OH
    t = row // OH
    od = t % OD
    n = t // OD

    co = pid_co * BLOCK_CO + tl.arange(0, BLOCK_CO)
    ow = pid_w * BLOCK_W + tl.arange(0, BLOCK_W)
    co_mask = co < C_out
    ow_mask = ow < OW

    KVOL: tl.constexpr = KSIZE * KSIZE * KSIZE
    x_ci_step = D * H * W  # distance between input channels in x
    w_ci_step = C_out * KVOL  # distance between input channels in weight
    acc = tl.zeros((BLOCK_CO, BLOCK_W), dtype=tl.float32)

    for kd in tl.static_range(KSIZE):
        d_num = od + PADDING - kd * DILATION
        idd = d_num // STRIDE
        d_ok = (d_num >= 0) & (d_num % STRIDE == 0) & (idd < D)
        for kh in tl.static_range(KSIZE):
            h_num = oh + PADDING - kh * DILATION
            ih = h_num // STRIDE
            h_ok = (h_num >= 0) & (h_num % STRIDE == 0) & (ih < H)
            # d and h are the same for the whole tile: skip taps that miss the input.
            if d_ok & h_ok:
                for kw in tl.static_range(KSIZE):
                    w_num = ow + PADDING - kw * DILATION
                    iw = w_num // STRIDE
                    x_mask = ow_mask & (w_num >= 0) & (w_num % STRIDE == 0) & (iw < W)
                    tap = (kd * KSIZE + kh) * KSIZE + kw
                    # Pointers for input channel 0; advanced by one channel per iteration.
                    x_ptrs = x_ptr + ((n * C_in * D + idd) * H + ih) * W + iw
                    w_ptrs = w_ptr + co.to(tl.int64) * KVOL + tap
                    for _ci in range(C_in):
                        xv = tl.load(x_ptrs, mask=x_mask, other=0.0).to(tl.float32)
                        wv = tl.load(w_ptrs, mask=co_mask, other=0.0).to(tl.float32)
                        acc += wv[:, None] * xv[None, :]
                        x_ptrs += x_ci_step
                        w_ptrs += w_ci_step

    if HAS_BIAS:
        bv = tl.load(b_ptr + co, mask=co_mask, other=0.0).to(tl.float32)
        acc += bv[:, None]

    out_offs = (((n * C_out + co[:, None].to(tl.int64)) * OD + od) * OH + oh) * OW + ow[None, :]
    tl.store(
        out_ptr + out_offs,
        acc.to(out_ptr.dtype.element_ty),
        mask=co_mask[:, None] & ow_mask[None, :],
    )


def _single_int(value, name):
    """Accept an int or a tuple/list of equal ints and return the int."""
    if isinstance(value, (tuple, list)):
        if len(value) == 0 or any(v != value[0] for v in value):
            raise ValueError(f"{name} must be the same along every spatial dim, got {value}")
        value = value[0]
    return int(value)


def kernel_function(
    x: torch.Tensor,
    weight: torch.Tensor,
    stride=1,
    padding=0,
    dilation=1,
    bias: torch.Tensor | None = None,
    output_padding=0,
    groups=1,
    kernel_size=None,
) -> torch.Tensor:
    """Transposed 3-D convolution of x (N, C_in, D, H, W) with weight (C_in, C_out, k, k, k)."""
    if x.dim() != 5:
        raise ValueError(f"x must be 5-D (N, C_in, D, H, W), got shape {tuple(x.shape)}")
    if weight.dim() != 5:
        raise ValueError(f"weight must be 5-D (C_in, C_out, k, k, k), got shape {tuple(weight.shape)}")
    if _single_int(groups, "groups") != 1:
        raise ValueError("only groups=1 is supported")
    N, C_in, D, H, W = x.shape
    if weight.shape[0] != C_in:
        raise ValueError(f"weight has {weight.shape[0]} input channels, x has {C_in}")
    C_out = weight.shape[1]
    k = weight.shape[2]
    if weight.shape[3] != k or weight.shape[4] != k:
        raise ValueError(f"only cubic kernels are supported, got {tuple(weight.shape[2:])}")
    if kernel_size is not None and _single_int(kernel_size, "kernel_size") != k:
        raise ValueError(f"kernel_size={kernel_size} does not match weight shape {tuple(weight.shape)}")
    s = _single_int(stride, "stride")
    p = _single_int(padding, "padding")
    d = _single_int(dilation, "dilation")
    op = _single_int(output_padding, "output_padding")
    if s <= 0 or d <= 0 or p < 0 or op < 0:
        raise ValueError(f"bad parameters: stride={s}, padding={p}, dilation={d}, output_padding={op}")
    if x.dtype != weight.dtype or x.device != weight.device:
        raise ValueError("x and weight must share dtype and device")
    if bias is not None and (bias.shape != (C_out,) or bias.device != x.device):
        raise ValueError(f"bias must have shape ({C_out},) and live on x's device")

    OD = (D - 1) * s - 2 * p + d * (k - 1) + op + 1
    OH = (H - 1) * s - 2 * p + d * (k - 1) + op + 1
    OW = (W - 1) * s - 2 * p + d * (k - 1) + op + 1
    if OD <= 0 or OH <= 0 or OW <= 0:
        raise ValueError("output would be empty")

    x = x.contiguous()
    weight = weight.contiguous()
    has_bias = bias is not None
    bias_arg = bias.contiguous() if has_bias else weight  # dummy pointer when there is no bias
    out = torch.empty((N, C_out, OD, OH, OW), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out

    BLOCK_CO = min(triton.next_power_of_2(C_out), 256)
    BLOCK_W = min(triton.next_power_of_2(OW), 16)
    grid = (N * OD * OH, triton.cdiv(C_out, BLOCK_CO), triton.cdiv(OW, BLOCK_W))
    _conv_transpose3d_kernel[grid](
        x,
        weight,
        bias_arg,
        out,
        C_in,
        C_out,
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
        HAS_BIAS=has_bias,
        BLOCK_CO=BLOCK_CO,
        BLOCK_W=BLOCK_W, num_warps=2,
    )
    return out

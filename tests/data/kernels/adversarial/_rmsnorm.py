"""Shared honest RMSNorm Triton kernel for the adversarial corpus (problem 36_RMSNorm).

y[n, c, s] = x[n, c, s] / sqrt(mean_c(x[n, :, s] ** 2) + eps), with S the product of the trailing dims.
The cases import ``launch`` and add their one trick around it. ``fp8=True`` rounds x to float8 (e4m3)
inside the kernel (a low-precision shortcut); ``s_stop`` stores only the first ``s_stop`` positions of
each row (a partial write).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, out_ptr, C, S, s_stop, eps, BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr,
                   FP8: tl.constexpr):
    s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    base = tl.program_id(1).to(tl.int64) * C * S
    s_mask = s < S
    acc = tl.zeros((BLOCK_S,), dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        mask = (c < C)[:, None] & s_mask[None, :]
        v = tl.load(x_ptr + base + c[:, None].to(tl.int64) * S + s[None, :], mask=mask, other=0.0)
        if FP8:
            v = v.to(tl.float8e4nv)
        v = v.to(tl.float32)
        acc += tl.sum(v * v, axis=0)
    rms = tl.sqrt(acc / C + eps)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        mask = (c < C)[:, None] & (s_mask & (s < s_stop))[None, :]
        offs = base + c[:, None].to(tl.int64) * S + s[None, :]
        v = tl.load(x_ptr + offs, mask=mask, other=0.0)
        if FP8:
            v = v.to(tl.float8e4nv)
        y = v.to(tl.float32) / rms[None, :]
        tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def launch(x: torch.Tensor, out: torch.Tensor, eps: float, *, fp8: bool = False, s_stop: int | None = None) -> torch.Tensor:
    n, c = x.shape[0], x.shape[1]
    s = x.numel() // (n * c)
    block_s = 128
    rmsnorm_kernel[(triton.cdiv(s, block_s), n)](
        x, out, c, s, s if s_stop is None else s_stop, float(eps),
        BLOCK_C=min(triton.next_power_of_2(c), 32), BLOCK_S=block_s, FP8=fp8,
    )
    return out

"""Matrix product out = A @ B for A of shape (M, K) and B of shape (K, N).

Launch layout: a 2-D grid of (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)) programs, program (i, j) owning
the output tile of rows [i * BLOCK_M, (i + 1) * BLOCK_M) and columns [j * BLOCK_N, (j + 1) * BLOCK_N).
It walks along K in chunks of BLOCK_K, multiplying a (BLOCK_M, BLOCK_K) tile of A by a
(BLOCK_K, BLOCK_N) tile of B with tl.dot into an fp32 accumulator, and stores the tile once at the
end in the output's dtype. Partial tiles at the edges are masked (loads read 0 there).

Triton's CPU interpreter multiplies bf16 tiles as their raw bits (it holds bf16 as uint16), so under
the interpreter bf16 tiles are upcast to fp32 before tl.dot (DOT_FP32); on a GPU the flag is off and
the compiled kernel is the plain bf16 one.
"""

import os

import torch
import triton
import triton.language as tl


@triton.jit
def _matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    DOT_FP32: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < M
    col_mask = cols < N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        ks = k_start + tl.arange(0, BLOCK_K)
        k_mask = ks < K
        a = tl.load(
            a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak,
            mask=row_mask[:, None] & k_mask[None, :],
            other=0.0,
        )
        b = tl.load(
            b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
            mask=k_mask[:, None] & col_mask[None, :],
            other=0.0,
        )
        if DOT_FP32:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc += tl.dot(a, b)

    c = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=row_mask[:, None] & col_mask[None, :])


def kernel_function(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Return A @ B, shape (M, N), in A's dtype."""
    if A.dim() != 2 or B.dim() != 2:
        raise ValueError(f"A and B must be 2-D, got shapes {tuple(A.shape)} and {tuple(B.shape)}")
    M, K = A.shape
    if B.shape[0] != K:
        raise ValueError(f"inner dimensions differ: A is {tuple(A.shape)}, B is {tuple(B.shape)}")
    if A.dtype != B.dtype:
        raise ValueError(f"A and B must share a dtype, got {A.dtype} and {B.dtype}")
    if A.device != B.device:
        raise ValueError("A and B must be on the same device")
    N = B.shape[1]

    out = torch.empty((M, N), device=A.device, dtype=A.dtype)
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()

    BLOCK_M = 64
    BLOCK_N = 64
    BLOCK_K = 32
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    _matmul_kernel[grid](
        A,
        B,
        out,
        M,
        N,
        K,
        A.stride(0),
        A.stride(1),
        B.stride(0),
        B.stride(1),
        out.stride(0),
        out.stride(1),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        DOT_FP32=os.environ.get("TRITON_INTERPRET") == "1" and A.dtype == torch.bfloat16,
        num_warps=4,
        num_stages=2,
    )
    return out

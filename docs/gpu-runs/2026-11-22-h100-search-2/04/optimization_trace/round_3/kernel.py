"""Matrix-vector product out = A @ B for A of shape (M, K) and B of shape (K, 1) (or (K,)).

Launch layout: a 1-D grid of cdiv(M, BLOCK_M) programs. Program i owns rows
[i * BLOCK_M, (i + 1) * BLOCK_M) of A. It walks along K in chunks of BLOCK_K columns,
multiplies each (BLOCK_M, BLOCK_K) tile of A by the matching slice of B and keeps the
partial products in an fp32 (BLOCK_M, BLOCK_K) accumulator, which is summed across K
once at the end. Row offsets are computed in int64 because M * K can exceed 2**31.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _matvec_kernel(
    a_ptr,
    b_ptr,
    out_ptr,
    M,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_om,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    # int64 row indices: row * stride_am reaches M * K, which is 2**31 for the full problem.
    rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    a_rows = a_ptr + rows[:, None] * stride_am

    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        cols = k_start + tl.arange(0, BLOCK_K)
        col_mask = cols < K
        a = tl.load(
            a_rows + cols[None, :] * stride_ak,
            mask=row_mask[:, None] & col_mask[None, :],
            other=0.0,
        ).to(tl.float32)
        b = tl.load(b_ptr + cols * stride_bk, mask=col_mask, other=0.0).to(tl.float32)
        acc += a * b[None, :]

    result = tl.sum(acc, axis=1)
    tl.store(out_ptr + rows * stride_om, result.to(out_ptr.dtype.element_ty), mask=row_mask)


def kernel_function(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Return A @ B (shape (M, 1), or (M,) when B is 1-D) in A's dtype."""
    if A.dim() != 2:
        raise ValueError(f"A must be 2-D, got shape {tuple(A.shape)}")
    if B.dim() not in (1, 2) or (B.dim() == 2 and B.shape[1] != 1):
        raise ValueError(f"B must have shape (K, 1) or (K,), got {tuple(B.shape)}")
    M, K = A.shape
    if B.shape[0] != K:
        raise ValueError(f"inner dimensions differ: A is {tuple(A.shape)}, B is {tuple(B.shape)}")
    if A.dtype != B.dtype:
        raise ValueError(f"A and B must share a dtype, got {A.dtype} and {B.dtype}")
    if A.device != B.device:
        raise ValueError("A and B must be on the same device")

    A = A.contiguous()
    B = B.contiguous()
    out_shape = (M, 1) if B.dim() == 2 else (M,)
    out = torch.empty(out_shape, device=A.device, dtype=A.dtype)
    if M == 0:
        return out

    BLOCK_M = 8
    BLOCK_K = 1024
    grid = (triton.cdiv(M, BLOCK_M),)
    _matvec_kernel[grid](
        A,
        B,
        out,
        M,
        K,
        A.stride(0),
        A.stride(1),
        B.stride(0),
        out.stride(0),
        BLOCK_M=BLOCK_M,
        BLOCK_K=BLOCK_K, num_warps=8,
    )
    return out

"""``compare``'s rule in one pass over a GPU output: one Triton program per block of elements.

The element-by-element comparison in plain torch runs some forty kernels a chunk of elements, and took
240 ms for a 3.2 GB output on an H100 (check_cost.py, in docs/gpu-runs/2026-11-26-h200-dot-limits/record.tar.xz), six or more times a verification. Here
each program classifies its block by the same rule as ``workers.harness.compare`` (unwritten, non-finite
where the reference is finite, outside ``atol + rtol * |ref|``, NaN and infinities) and writes its counts,
its largest errors and its first bad index; torch adds the programs' partials up. Used for float outputs
against an fp32 reference (bf16, fp16 and fp32 runs). Its threshold may round once where torch rounds
twice (a fused multiply-add), and its relative error divides approximately: an element exactly at the
tolerance may be judged one ulp apart, and ``max_rel_err`` is a report, not a criterion.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 4096  # elements a program; unwritten elements hold every byte 0xFF (torch_guard.POISON_BYTE): -1 as bits


@triton.jit
def _classify(out_ptr, bits_ptr, ref_ptr, n, atol, rtol, counts_ptr, errs_ptr, first_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    o = tl.load(out_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    bits = tl.load(bits_ptr + offs, mask=inside, other=0)
    r = tl.load(ref_ptr + offs, mask=inside, other=0.0)
    unwritten = inside & (bits == -1)
    o_finite = tl.abs(o) < float("inf")  # False for NaN and both infinities
    r_finite = tl.abs(r) < float("inf")
    nonfinite = inside & ~o_finite & r_finite & ~unwritten
    err = tl.abs(o - r)
    finite_pair = inside & o_finite & r_finite
    bad = finite_pair & (err > atol + rtol * tl.abs(r))
    both_nonfinite = inside & ~o_finite & ~r_finite
    agree = ((o != o) & (r != r)) | (o == r)
    bad = bad | (both_nonfinite & ~agree)
    bad = bad | (inside & o_finite & ~r_finite)
    abs_err = tl.where(finite_pair, err, 0.0)
    significant = finite_pair & (tl.abs(r) > atol)
    rel_err = tl.where(significant, err / tl.where(significant, tl.abs(r), 1.0), 0.0)
    any_bad = unwritten | nonfinite | bad
    tl.store(counts_ptr + pid * 3 + 0, tl.sum(unwritten.to(tl.int32), axis=0))
    tl.store(counts_ptr + pid * 3 + 1, tl.sum(nonfinite.to(tl.int32), axis=0))
    tl.store(counts_ptr + pid * 3 + 2, tl.sum(bad.to(tl.int32), axis=0))
    tl.store(errs_ptr + pid * 2 + 0, tl.max(abs_err, axis=0))
    tl.store(errs_ptr + pid * 2 + 1, tl.max(rel_err, axis=0))
    tl.store(first_ptr + pid, tl.min(tl.where(any_bad, offs, n), axis=0))


def fused_applies(out: torch.Tensor, ref: torch.Tensor) -> bool:
    """Whether ``compare_fused`` takes this pair: a 2- or 4-byte float output against an fp32 reference of
    the same number of elements, on the same device."""
    return (out.is_floating_point() and out.element_size() in (2, 4) and ref.dtype == torch.float32
            and out.numel() == ref.numel() and out.device == ref.device)  # fmt: skip


def compare_fused(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> tuple[list[int], list[float], int | None]:
    """(unwritten, non-finite, mismatched), (max abs err, max rel err), first bad flat index or None."""
    flat_out = out.reshape(-1).contiguous()
    flat_ref = ref.reshape(-1).contiguous()
    n = flat_out.numel()
    if n == 0:
        return [0, 0, 0], [0.0, 0.0], None
    programs = triton.cdiv(n, BLOCK)
    bits, counts, errs, first = _bits_and_partials(flat_out, programs)
    _classify[(programs,)](flat_out, bits, flat_ref, n, atol, rtol, counts, errs, first, BLOCK=BLOCK)
    totals = counts.sum(dim=0, dtype=torch.int64).tolist()
    largest = errs.max(dim=0).values.tolist()
    first_bad = int(first.min())
    return totals, largest, (first_bad if first_bad < n else None)


def compile_fused(dtype: torch.dtype) -> None:
    """Compile ``compare_fused``'s kernel for outputs of ``dtype`` (or load it from Triton's cache) without
    launching it: its arguments are meta tensors, so nothing is allocated or run on the GPU."""
    out = torch.empty(BLOCK, dtype=dtype, device="meta")
    ref = torch.empty(BLOCK, dtype=torch.float32, device="meta")
    bits, counts, errs, first = _bits_and_partials(out, 1)
    _classify.warmup(out, bits, ref, BLOCK, 0.0, 0.0, counts, errs, first, BLOCK=BLOCK, grid=(1,))


def _bits_and_partials(flat_out: torch.Tensor, programs: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``_classify``'s other tensors for a flat output: its bits (poisoned elements read -1 there), and
    each program's counts, largest errors and first bad index, on the output's device."""
    bits = flat_out.view(torch.int16 if flat_out.element_size() == 2 else torch.int32)
    counts = torch.empty(programs, 3, dtype=torch.int32, device=flat_out.device)
    errs = torch.empty(programs, 2, dtype=torch.float32, device=flat_out.device)
    first = torch.empty(programs, dtype=torch.int64, device=flat_out.device)
    return bits, counts, errs, first

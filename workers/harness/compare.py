"""Comparing a kernel's output with the reference, element by element, in bounded memory."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from beamsearch.records.schema import Tolerance
from workers.harness.torch_guard import unwritten_mask

CHUNK_ELEMENTS = 1 << 26  # temporaries stay near 2 GB even for multi-GB outputs; few syncs


@dataclass
class Comparison:
    n: int
    n_unwritten: int = 0
    n_unexpected_nonfinite: int = 0  # NaN/Inf where the reference is finite
    n_mismatched: int = 0  # finite, but outside atol + rtol * |ref|
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    first_bad_index: int | None = None

    @property
    def passed(self) -> bool:
        return not (self.n_unwritten or self.n_unexpected_nonfinite or self.n_mismatched)


def compare(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> Comparison:
    """Counts unwritten, non-finite and out-of-tolerance elements; max errors over finite ones.

    ``out`` and ``ref`` must have the same shape (checked by the caller). Relative error is taken over
    elements with |ref| > atol, so near-zero references do not dominate it. On a GPU, one Triton pass
    (``compare_kernel``) applies the same rule where it can.
    """
    if out.is_cuda:
        from workers.harness.compare_kernel import compare_fused, fused_applies

        if fused_applies(out, ref):
            (unwritten, nonfinite, mismatched), (abs_err, rel_err), first = compare_fused(out, ref, tol.atol, tol.rtol)
            return Comparison(n=out.numel(), n_unwritten=unwritten, n_unexpected_nonfinite=nonfinite,
                              n_mismatched=mismatched, max_abs_err=abs_err, max_rel_err=rel_err, first_bad_index=first)  # fmt: skip
    flat_out = out.reshape(-1)
    flat_ref = ref.reshape(-1)
    result = Comparison(n=flat_out.numel())
    for start in range(0, result.n, CHUNK_ELEMENTS):
        o = flat_out[start : start + CHUNK_ELEMENTS]
        r = flat_ref[start : start + CHUNK_ELEMENTS].to(torch.float64 if ref.dtype == torch.float64 else torch.float32)
        unwritten = unwritten_mask(o) if o.is_floating_point() else torch.zeros_like(o, dtype=torch.bool)
        of = o.to(r.dtype)
        ref_finite = torch.isfinite(r)
        nonfinite = ~torch.isfinite(of) & ref_finite & ~unwritten
        err = (of - r).abs()
        finite_pair = torch.isfinite(of) & ref_finite
        bad = finite_pair & (err > tol.atol + tol.rtol * r.abs())
        # Where both are non-finite they must agree (NaN with NaN, +Inf with +Inf).
        both_nonfinite = ~torch.isfinite(of) & ~ref_finite
        bad |= both_nonfinite & ~((torch.isnan(of) & torch.isnan(r)) | (of == r))
        bad |= torch.isfinite(of) & ~ref_finite  # a finite number where the reference is NaN or Inf
        result.n_unwritten += int(unwritten.sum())
        result.n_unexpected_nonfinite += int(nonfinite.sum())
        result.n_mismatched += int(bad.sum())
        finite_err = torch.where(finite_pair, err, torch.zeros_like(err))
        if finite_err.numel():
            result.max_abs_err = max(result.max_abs_err, float(finite_err.max()))
            significant = finite_pair & (r.abs() > tol.atol)
            if bool(significant.any()):
                rel = finite_err[significant] / r[significant].abs()
                result.max_rel_err = max(result.max_rel_err, float(rel.max()))
        if result.first_bad_index is None:
            any_bad = unwritten | nonfinite | bad
            if bool(any_bad.any()):
                result.first_bad_index = start + int(any_bad.nonzero()[0, 0])
    return result


def warm_up_on_gpu() -> None:
    """In a judge waiting for its job, its CUDA started: the GPU comparison's kernel compiled (or loaded from
    Triton's cache) for bf16 outputs, so the job's first comparison does not pay for Triton's start. Runs
    nothing on the GPU: another job may be timing."""
    from workers.harness.compare_kernel import compile_fused

    compile_fused(torch.bfloat16)

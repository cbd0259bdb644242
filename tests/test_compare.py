"""Output comparison and the poison pattern."""

from __future__ import annotations

import torch

from beamsearch.schema import Tolerance
from workers.compare import compare
from workers.torch_guard import TorchComputeGuard, poison_, unwritten_mask

TOL = Tolerance(atol=1e-2, rtol=1e-2)


def test_exact_match_passes() -> None:
    ref = torch.rand(100)
    cmp = compare(ref.to(torch.bfloat16), ref, TOL)
    assert cmp.passed and cmp.max_abs_err < 4e-3


def test_counts_mismatches_nan_and_unwritten_separately() -> None:
    ref = torch.rand(10) + 1
    out = ref.clone().to(torch.bfloat16)
    out[1] = ref[1] * 1.5
    out[2] = float("nan")
    out[5:].view(torch.int16).fill_(-1)  # the poison pattern, as if never written
    cmp = compare(out, ref, TOL)
    assert (cmp.n_mismatched, cmp.n_unexpected_nonfinite, cmp.n_unwritten) == (1, 1, 5)
    assert cmp.first_bad_index == 1 and not cmp.passed


def test_finite_output_where_the_reference_is_not_is_a_mismatch() -> None:
    ref = torch.tensor([float("inf"), float("nan"), 1.0])
    cmp = compare(torch.tensor([0.0, 0.0, 1.0]), ref, TOL)
    assert cmp.n_mismatched == 2 and not cmp.passed


def test_nan_in_both_is_not_an_error() -> None:
    ref = torch.tensor([float("nan"), 1.0])
    assert compare(ref.clone(), ref, TOL).passed


def test_poison_is_not_what_arithmetic_makes() -> None:
    t = torch.empty(4, dtype=torch.float32)
    poison_(t)
    assert unwritten_mask(t).all() and torch.isnan(t).all()
    computed_nan = torch.zeros(4) / torch.zeros(4)
    assert not unwritten_mask(computed_nan).any()


def test_guard_poisons_empty_and_flags_compute() -> None:
    guard = TorchComputeGuard()
    x = torch.rand(8)
    with guard:
        out = torch.empty_like(x)
        zeros = torch.zeros(8)
        view = x.view(2, 4).contiguous().to(torch.bfloat16)
    assert unwritten_mask(out).all() and not guard.forbidden
    assert zeros.eq(0).all() and view.shape == (2, 4)
    with guard:
        _ = x * 2
        _ = x.sum()
    assert set(guard.forbidden) == {"aten::mul", "aten::sum"}

"""Output comparison and the poison pattern."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from beamsearch.records.schema import Tolerance
from workers.harness.child_process import EARLY_CUDA_INIT
from workers.harness.compare import compare
from workers.harness.torch_guard import ObservedCall, TorchComputeGuard, poison_, unwritten_mask

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


def test_the_profiler_sees_compute_the_guard_was_kept_from() -> None:
    from torch.utils._python_dispatch import _disable_current_modes

    x = torch.rand(8)
    with ObservedCall() as seen:
        with _disable_current_modes():
            _ = x * 2
        with torch._C._DisableTorchDispatch():
            _ = x + 1
    assert {"aten::mul", "aten::add"} <= set(seen.forbidden) and not seen.tampering


def test_popping_the_guard_or_stopping_the_profiler_is_tampering() -> None:
    from torch.utils._python_dispatch import _pop_mode

    with ObservedCall() as seen:
        _pop_mode()
    assert any("dispatch-mode stack" in t for t in seen.tampering)
    with ObservedCall() as seen:
        torch.autograd._disable_profiler()
    assert any("profiler" in t for t in seen.tampering)


def test_host_reads_and_thread_starts_are_counted() -> None:
    import threading

    x = torch.rand(8)
    with ObservedCall() as seen:
        _ = x.numpy().sum()
        _ = x.tolist()
        t = threading.Thread(target=lambda: None)
        t.start()
    t.join()
    assert set(seen.host_reads) == {"Tensor.numpy", "Tensor.tolist"} and seen.threads_started == 1
    with ObservedCall() as quiet:
        _ = x.view(2, 4).contiguous()
    assert not quiet.host_reads and not quiet.forbidden and not quiet.threads_started


def test_snapshot_names_replaced_functions_not_new_ones(monkeypatch) -> None:
    from workers.harness.integrity import BackgroundWork, Snapshot

    snap = Snapshot.take()
    assert snap.changed() == []
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.001)
    monkeypatch.setattr(torch, "brand_new_helper", lambda: None, raising=False)
    assert set(snap.changed()) == {"torch.allclose", "torch.cuda.streams.Event.elapsed_time"}
    work = BackgroundWork()
    import threading

    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="lingering")
    t.start()
    try:
        assert work.left_running() == ["thread lingering"]
    finally:
        stop.set()
        t.join()
    assert work.left_running() == []


# Outputs with every kind of element the rule tells apart: a few bad ones planted in random values,
# infinities and NaN on both sides, zeros near atol, a run of unwritten (poisoned) elements, a length
# that leaves the last program part empty.
FUSED_CASES = """
import torch
from beamsearch.records.schema import Tolerance
from workers.harness.compare import compare
from workers.harness.compare_kernel import BLOCK, compare_fused

def cases(device):
    for seed, n, dtype, atol in ((0, 10_001, torch.bfloat16, 1e-2), (1, 3 * BLOCK, torch.float32, 1e-4),
                                  (2, 77, torch.float16, 1e-3), (3, 9000, torch.bfloat16, 1e-2)):
        g = torch.Generator().manual_seed(seed)
        ref = torch.randn(n, generator=g) * 3
        ref[5], ref[6], ref[7], ref[10:20] = float("inf"), float("-inf"), float("nan"), 0.0
        out = ref.to(dtype).clone()  # a copy even when dtype is the reference's
        noise = torch.rand(n, generator=g)
        out[noise < 0.01] += 1.0  # mismatches
        out[(noise > 0.5) & (noise < 0.505)] = float("nan")
        out[5], out[6], out[7], out[8] = float("inf"), 1.0, float("nan"), float("-inf")
        out[n // 2 : n // 2 + 50].view(torch.int16 if out.element_size() == 2 else torch.int32).fill_(-1)
        yield out.to(device), ref.to(device), Tolerance(atol=atol, rtol=atol)

def check(device):
    for out, ref, tol in cases(device):
        want = compare(out.cpu(), ref.cpu(), tol)  # the torch rule
        (u, nf, mm), (ma, mr), first = compare_fused(out, ref, tol.atol, tol.rtol)
        assert (u, nf, mm, first) == (want.n_unwritten, want.n_unexpected_nonfinite, want.n_mismatched,
                                      want.first_bad_index), ((u, nf, mm, first), want)
        assert mm > 0 and u > 0 and nf > 0  # every kind was planted
        assert ma == want.max_abs_err and abs(mr - want.max_rel_err) <= 1e-6 * want.max_rel_err, (ma, mr, want)
        got = compare(out, ref, tol)  # on a GPU, the dispatch takes the fused pass
        assert (got.n_mismatched, got.n_unwritten, got.first_bad_index) == (mm, u, first)
"""


def test_the_fused_pass_applies_the_same_rule_as_torch_under_the_interpreter() -> None:
    import subprocess
    import sys
    from pathlib import Path

    code = FUSED_CASES + "\ncheck('cpu')\nprint('same')\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                          text=True, timeout=600, env={**__import__("os").environ, "TRITON_INTERPRET": "1"})  # fmt: skip
    assert done.returncode == 0 and "same" in done.stdout, done.stderr[-3000:]


def test_only_float_outputs_against_an_fp32_reference_take_the_fused_pass() -> None:
    from workers.harness.compare_kernel import fused_applies

    ref = torch.zeros(8)
    assert fused_applies(torch.zeros(8, dtype=torch.bfloat16), ref) and fused_applies(torch.zeros(8), ref)
    assert not fused_applies(torch.zeros(8, dtype=torch.int32), ref)
    assert not fused_applies(torch.zeros(8, dtype=torch.float64), ref.double())
    assert not fused_applies(torch.zeros(8), torch.zeros(9))


@pytest.mark.gpu
def test_the_fused_pass_applies_the_same_rule_as_torch_on_the_gpu() -> None:
    namespace: dict = {}
    exec(FUSED_CASES, namespace)  # noqa: S102 - the cases above, run here on the GPU
    namespace["check"]("cuda")


WARMED_JUDGE = """
import torch
from workers.harness.child_process import start_cuda_early
assert start_cuda_early()
from workers.harness.compare import warm_up_on_gpu
from workers.harness.compare_kernel import _classify
warm_up_on_gpu()
assert any(kernels for kernels, *_ in _classify.device_caches.values()), "compiled (or loaded) for the GPU"
assert torch.cuda.max_memory_reserved() == 0, "nothing allocated on the GPU"
"""


@pytest.mark.gpu
def test_a_judges_warm_up_compiles_the_comparison_kernel_and_allocates_nothing() -> None:
    """In a fresh process, as a waiting judge has it: the kernel is ready for the first comparison, and
    nothing ran on the GPU (another job may be timing)."""
    env = {**os.environ, EARLY_CUDA_INIT: "cuda"}
    done = subprocess.run([sys.executable, "-c", WARMED_JUDGE], env=env, capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).parent.parent)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]

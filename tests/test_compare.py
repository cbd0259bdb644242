"""Output comparison and the poison pattern."""

from __future__ import annotations

import torch

from beamsearch.schema import Tolerance
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


def test_the_check_cost_probe_times_each_step_on_the_cpu(capsys) -> None:
    """``scripts/check_cost.py`` (a GPU probe of what the checks cost at full size) runs its steps on the CPU."""
    from scripts.check_cost import main

    assert main(["--problem", "26_GELU_", "--device", "cpu", "--shapes", "small", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "26_GELU_ on cpu" in out
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["inputs", "reference", "snapshot", "inputs", "compare"]

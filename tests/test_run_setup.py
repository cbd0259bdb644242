"""What a run settles from its measurements: how many verifications share a GPU, and the bar it is measured against."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from beamsearch.config import SearchConfig
from beamsearch.driver import Driver, verifications_that_fit
from beamsearch.schema import DeviceFacts, Kernel, Verdict
from beamsearch.state import TaskResult, VerifyTry


@pytest.mark.parametrize(
    ("peak_gb", "workers", "expected"),
    [
        (20.0, 4, 3),  # 0.9 * 80 - 4 * 3 = 60 GB usable: three 20 GB verifications
        (1.0, 4, 4),  # small problems: one place per worker, no more
        (0.5, 8, 8),
        (100.0, 4, 1),  # larger than the GPU: one at a time, and it retries alone if it runs out
        (31.0, 2, 2),  # 66 GB usable with two workers
    ],
)
def test_verifications_fit_the_gpu_memory_beside_the_workers_spares(peak_gb, workers, expected) -> None:
    assert verifications_that_fit(peak_gb, 80.0, workers) == expected


def _start(peak_gb: float | None) -> TaskResult:
    verdict = Verdict(passed=True, status="ok", reason="all checks passed", kernel_path="k.py", gpu_peak_gb=peak_gb)
    kernel = Kernel(source="def kernel_function(x):\n    return x\n", origin="input")
    return TaskResult(task_id="input", parent_id="", round=0, direction=0, status="ok", reason="",
                      tries=[VerifyTry(kernel=kernel, verdict=verdict)])  # fmt: skip


def _driver(config: SearchConfig, gpu_share: float) -> SimpleNamespace:
    events: list[tuple[str, dict]] = []
    display = SimpleNamespace(event=lambda kind, **data: events.append((kind, data)), events=events)
    return SimpleNamespace(state=SimpleNamespace(config=config), pool=SimpleNamespace(gpu_share=gpu_share), display=display)


def test_the_run_sets_the_places_from_the_starting_kernels_peak_and_says_so() -> None:
    driver = _driver(SearchConfig(problem="p"), gpu_share=0.25)  # four workers on the GPU
    facts = DeviceFacts(floor=None, gpu_name="NVIDIA H100 80GB HBM3", memory_gb=80.0)
    config = Driver._with_verify_slots(driver, _start(20.0), facts)
    assert config.verify_per_gpu == 3
    assert driver.display.events == [("verify_slots", {"verify_per_gpu": 3, "verification_peak_gb": 20.0,
                                                       "gpu_memory_gb": 80.0})]  # fmt: skip


def test_a_users_setting_and_a_cpu_run_are_left_as_they_are() -> None:
    gpu = DeviceFacts(floor=None, gpu_name="NVIDIA H100 80GB HBM3", memory_gb=80.0)
    cpu = DeviceFacts(floor=None, gpu_name="cpu (Triton interpreter)")
    assert Driver._with_verify_slots(_driver(SearchConfig(problem="p", verify_per_gpu=1), 0.25), _start(20.0), gpu).verify_per_gpu == 1
    assert Driver._with_verify_slots(_driver(SearchConfig(problem="p"), 0.0), _start(None), cpu).verify_per_gpu is None


def test_the_bar_is_the_fastest_timed_baseline_and_only_on_a_gpu() -> None:
    from beamsearch.driver import best_baseline
    from beamsearch.state import Baseline

    runs = [Baseline(label="eager", target="eager", median_ms=8.4, status="ok"),
            Baseline(label="compile-max-autotune", target="compile-max-autotune", median_ms=1.3, status="ok"),
            Baseline(label="compile", target="compile", median_ms=None, status="failed", reason="no")]  # fmt: skip
    assert best_baseline(runs, "cuda").label == "compile-max-autotune"
    assert best_baseline(runs, "cpu") is None and best_baseline([], "cuda") is None

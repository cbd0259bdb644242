"""One task on a worker, with the verification and timing children replaced: what a timing's status means
for the candidate's rank."""

from __future__ import annotations

import pytest

from beamsearch.config import SearchConfig
from beamsearch.schema import Kernel, RunSpec, Timing, TimingResult, Verdict
from beamsearch.state import BeamEntry, Task
from tests.conftest import DATA
from workers import task as task_module
from workers.task import WorkerContext, run_task

START = DATA / "search" / "input_kernel.py"


def _timing(status: str, ms: float, screened_above_ms: float | None = None) -> TimingResult:
    t = Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, n=10, warmup_n=1, method="m", device_name="cpu",
               on_gpu=False, dtype="bf16", shapes="small", screened_above_ms=screened_above_ms)  # fmt: skip
    return TimingResult(target="k.py", status=status, reason="" if status == "ok" else "output_after_timing: wrong answer",
                        timing=t)  # fmt: skip


def _run(monkeypatch, timing: TimingResult):
    passed = Verdict(passed=True, status="ok", reason="all checks passed", kernel_path="k.py")
    monkeypatch.setattr(task_module, "verify_candidate", lambda *a, **k: passed)
    monkeypatch.setattr(task_module, "time_candidate", lambda *a, **k: timing)
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device="cpu")
    parent = BeamEntry(id="input", kernel=Kernel(source=START.read_text(), origin="input"), median_ms=5.0, round=0)
    task = Task(id="r1-t0", round=1, direction=0, parent=parent, spec=spec, config=SearchConfig(problem="p"))
    return run_task(task, WorkerContext("w0"))


@pytest.mark.parametrize("screened", [None, 0.5])
def test_a_timing_that_failed_its_checks_is_not_ranked_whatever_its_numbers(monkeypatch, screened) -> None:
    """The judge keeps a failed timing's numbers as evidence (here 1 ms, 5x the parent): the candidate is
    not_timed, with no time to rank by, whether or not the timing says it stopped early."""
    result = _run(monkeypatch, _timing("failed", 1.0, screened))
    assert result.kernel is not None, result.reason  # the tuner proposed, so the timing was reached
    assert result.status == "not_timed" and result.median_ms is None and not result.screened
    assert "output_after_timing" in result.reason and "stopped" not in result.reason


def test_a_screened_timing_that_passed_is_ranked_and_says_it_stopped_early(monkeypatch) -> None:
    result = _run(monkeypatch, _timing("ok", 9.0, screened_above_ms=6.0))
    assert result.status == "ok" and result.median_ms == 9.0 and result.screened
    assert "timing stopped after 10 repetitions" in result.reason

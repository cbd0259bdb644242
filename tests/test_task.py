"""One task on a worker, with the verification and timing children replaced: what a timing's status means
for the candidate's rank."""

from __future__ import annotations

import pytest

from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import CheckResult, Kernel, RunSpec, Timing, TimingResult, Verdict
from beamsearch.records.state import BeamEntry, Task
from tests.conftest import DATA
from workers.actor import task as task_module
from workers.actor.task import WorkerContext, run_task

START = DATA / "search" / "input_kernel.py"


def _timing(status: str, ms: float, screened_above_ms: float | None = None) -> TimingResult:
    t = Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, n=10, warmup_n=1, method="m", device_name="cpu",
               on_gpu=False, dtype="bf16", shapes="small", screened_above_ms=screened_above_ms)  # fmt: skip
    return TimingResult(target="k.py", status=status, reason="" if status == "ok" else "output_after_timing: wrong answer",
                        timing=t)  # fmt: skip


PLANNED = Kernel(source=START.read_text().replace("BLOCK_R = 4", "BLOCK_R = 8"), origin="tuner", note="BLOCK_R 4 -> 8")


def _run(monkeypatch, timing: TimingResult, kernel: Kernel | None = PLANNED):
    passed = Verdict(passed=True, status="ok", reason="all checks passed", kernel_path="k.py")
    verified: list[str] = []

    def verify(spec, path, *args, **kwargs):
        verified.append(open(path).read())
        return passed

    monkeypatch.setattr(task_module, "verify_candidate", verify)
    monkeypatch.setattr(task_module, "time_candidate", lambda *a, **k: timing)
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device="cpu")
    parent = BeamEntry(id="input", kernel=Kernel(source=START.read_text(), origin="input"), ranked_ms=5.0, round=0)
    task = Task(id="r1-t0", round=1, direction=0, parent=parent, spec=spec, config=SearchConfig(problem="p"),
                kernel=kernel)  # fmt: skip
    result = run_task(task, WorkerContext("w0"))
    assert verified == ([kernel.source] if kernel else [])
    return result


@pytest.mark.parametrize("screened", [None, 0.5])
def test_a_timing_that_failed_its_checks_is_not_ranked_whatever_its_numbers(monkeypatch, screened) -> None:
    """The judge keeps a failed timing's numbers as evidence (here 1 ms, 5x the parent): the candidate is
    not_timed, with no time to rank by, whether or not the timing says it stopped early."""
    result = _run(monkeypatch, _timing("failed", 1.0, screened))
    assert result.kernel == PLANNED, result.reason  # the driver's kernel was verified, so the timing was reached
    assert result.status == "not_timed" and result.ranked_ms is None and not result.screened
    assert "output_after_timing" in result.reason and "stopped" not in result.reason


def test_a_screened_timing_that_passed_is_ranked_and_says_it_stopped_early(monkeypatch) -> None:
    result = _run(monkeypatch, _timing("ok", 9.0, screened_above_ms=6.0))
    assert result.status == "ok" and result.ranked_ms == 9.0 and result.screened
    assert "timing stopped after 10 repetitions" in result.reason


def _contended(check: str) -> TimingResult:
    failed = _timing("failed", 0.5).model_copy(update={"reason": f"{check}: d"})
    return failed.model_copy(update={"checks": [CheckResult(name=check, passed=False, detail="d")]})


@pytest.mark.parametrize(("alone", "status"), [("current_stream", "inconclusive"), ("clocks_agree", "inconclusive"),
                                               ("output_after_timing", "not_timed")])  # fmt: skip
def test_a_timing_disturbed_twice_is_inconclusive_not_a_failure(monkeypatch, tmp_path, alone, status) -> None:
    """On a GPU, a timing failed only by a check other processes can fail is taken again alone; failed the
    same way alone (another user's job takes no lock), the candidate is inconclusive: not ranked, and not
    a failure of the kernel. A wrong answer alone is the kernel's own: not_timed."""
    monkeypatch.setenv("BEAMSEARCH_LOCK_DIR", str(tmp_path))  # gpu_memory's files; no CUDA is opened
    first = _contended("current_stream")
    passed = Verdict(passed=True, status="ok", reason="all checks passed", kernel_path="k.py", timing=first)
    monkeypatch.setattr(task_module, "verify_candidate", lambda *a, **k: passed)
    tried: list[bool] = []
    monkeypatch.setattr(task_module, "time_target", lambda spec, path, exclusive=False, **k: tried.append(exclusive)
                        or _contended(alone))  # fmt: skip
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device="cuda")
    parent = BeamEntry(id="input", kernel=Kernel(source=START.read_text(), origin="input"), ranked_ms=5.0, round=0)
    config = SearchConfig(problem="p", profile=False)
    task = Task(id="r1-t0", round=1, direction=0, parent=parent, spec=spec, config=config, kernel=PLANNED)
    result = run_task(task, WorkerContext("w0"))
    assert tried == [True] and result.status == status and result.ranked_ms is None
    assert result.timing.retried_alone_after == "failed: current_stream: d" and f"{alone}: d" in result.reason
    if status == "inconclusive":
        assert "not held against the kernel" in result.reason


def test_the_driver_planned_kernel_is_the_candidate_and_a_task_without_one_offline_has_none(monkeypatch) -> None:
    """The offline optimiser's task carries its kernel, which is what the worker verifies and times; a task
    with no kernel and neither a model nor a replay proposes nothing (the worker has no tuner of its own)."""
    ok = _run(monkeypatch, _timing("ok", 2.5))
    assert ok.status == "ok" and ok.kernel == PLANNED and ok.ranked_ms == 2.5
    none = _run(monkeypatch, _timing("ok", 2.5), kernel=None)
    assert none.status == "no_proposal" and none.kernel is None and "no kernel to try" in none.reason


def test_only_the_tuners_variants_have_a_compile_time_limit() -> None:
    """A model's kernel may autotune in its first call; a knob variant compiles in about a second."""
    source = "def kernel_function(x):\n    return x\n"
    tuner = Kernel(source=source, origin="tuner")
    assert task_module.compile_limit_s(tuner, "cuda") == task_module.TUNER_COMPILE_LIMIT_S
    assert task_module.compile_limit_s(tuner, "cpu") == task_module.TUNER_INTERPRETED_LIMIT_S  # no compile there
    for origin in ("llm", "replay", "input", "compiler"):
        assert task_module.compile_limit_s(Kernel(source=source, origin=origin), "cuda") is None


@pytest.mark.parametrize("timing_status", ["ok", "failed"])
def test_every_result_of_a_task_carries_the_task_and_its_parent(monkeypatch, timing_status) -> None:
    """Each way out of a task (timed, not timed, nothing proposed) names its task, parent, worker and the
    candidate it tried: the driver files and ranks results by these."""
    for result in (_run(monkeypatch, _timing(timing_status, 2.5)), _run(monkeypatch, _timing("ok", 2.5), kernel=None)):
        assert (result.task_id, result.parent_id, result.round, result.direction) == ("r1-t0", "input", 1, 0)
        assert result.parent_ms == 5.0 and result.worker.endswith("/w0") and result.finished_at > 0
        assert result.diagnosis is not None and result.handed_back == [] and result.from_task == ""
        tried = result.kernel is not None
        assert result.kernel == (PLANNED if tried else None) and len(result.tries) == int(tried)
        assert (result.timing is not None) == tried and ("verify" in result.stage_s) == tried


def test_only_the_optimisers_variants_share_a_verification_session() -> None:
    """A knob variant differs from a verified kernel only in its knobs; a model's, a replay's or the input
    kernel is arbitrary code, and gets processes of its own. A session is for one problem and device."""
    ctx = WorkerContext("w0")
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device="cpu")
    session = ctx.variant_session(spec, PLANNED)
    assert session is not None and ctx.variant_session(spec, PLANNED) is session
    for origin in ("llm", "replay", "input", "compiler"):
        assert ctx.variant_session(spec, PLANNED.model_copy(update={"origin": origin})) is None
    other = ctx.variant_session(spec.model_copy(update={"shapes": "full"}), PLANNED)
    assert other is not session and session.child.child is None
    ctx.close_session()


def test_a_variant_stopped_as_a_duplicate_is_one_with_its_code_and_no_timing(monkeypatch) -> None:
    """The task hands its known codes to the verification; a ``duplicate`` verdict (code the run timed) is the
    candidate's status, with the compiled hash the optimiser tells that time by, and nothing is timed."""
    known = {"c0de": "r0-t3"}
    duplicate = Verdict(passed=False, status="duplicate", reason="same compiled code as r0-t3, already timed",
                        kernel_path="k.py", compiled_hash="c0de")  # fmt: skip
    given: list[dict] = []
    monkeypatch.setattr(task_module, "verify_candidate", lambda *a, **k: given.append(k["known_compiled"]) or duplicate)
    monkeypatch.setattr(task_module, "time_candidate", lambda *a, **k: pytest.fail("a duplicate is not timed"))
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device="cpu")
    parent = BeamEntry(id="input", kernel=Kernel(source=START.read_text(), origin="input"), ranked_ms=5.0, round=0)
    task = Task(id="r1-t0", round=1, direction=0, parent=parent, spec=spec, config=SearchConfig(problem="p"),
                kernel=PLANNED, known_compiled=known)  # fmt: skip
    result = run_task(task, WorkerContext("w0"))
    assert given == [known] and result.status == "duplicate" and "r0-t3" in result.reason
    assert result.compiled_hash == "c0de" and result.ranked_ms is None and result.kernel == PLANNED

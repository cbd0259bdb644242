"""The final re-timing crowns only a kernel whose re-timings passed: one that failed a check is timed again
alone, and keeps no time unless that passes. The timing child is replaced by a script of results (the
real child's checks are tested in test_timing.py and, on a GPU, test_verify_gpu.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beamsearch.display import Display
from beamsearch.driver import Driver
from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import CheckResult, Kernel, RunSpec, Timing, TimingResult
from beamsearch.records.state import BeamEntry, BeamState, FinalTiming, Summary
from beamsearch.report import best_round_text, load_run
from beamsearch.trace import TraceWriter
from workers.actor import task
from workers.actor.task import WorkerContext, final_timing


def _ok(ms: float) -> TimingResult:
    t = Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, n=10, warmup_n=1, method="m", device_name="g",
               on_gpu=True, dtype="bf16", shapes="full")  # fmt: skip
    return TimingResult(target="k.py", status="ok", timing=t)


def _failed(check: str, ms: float = 0.1) -> TimingResult:
    """A failed timing keeps its numbers (here a fast one) as evidence, never as a time."""
    failed = _ok(ms).model_copy(update={"status": "failed", "reason": f"{check}: d"})
    return failed.model_copy(update={"checks": [CheckResult(name="harness_intact", passed=True),
                                                CheckResult(name=check, passed=False, detail="d")]})  # fmt: skip


class ScriptedTimings:
    """``time_target`` replaced: each kernel's interleaved results, then its result alone, in order."""

    def __init__(self, script: dict[str, tuple[list[TimingResult], TimingResult | None]]) -> None:
        self.interleaved = {k: list(v[0]) for k, v in script.items()}
        self.alone = {k: v[1] for k, v in script.items()}
        self.calls: list[tuple[str, bool]] = []

    def __call__(self, spec: RunSpec, path: str, exclusive: bool = False, **knobs: object) -> TimingResult:
        cand = Path(path).parent.name.removeprefix("retime-")
        self.calls.append((cand, exclusive))
        if exclusive:
            alone = self.alone[cand]
            assert alone is not None, f"{cand} was timed alone, but none of its re-timings failed"
            return alone
        return self.interleaved[cand].pop(0)


SCRIPT = {
    # the case: fastest by its passing re-timings, but another one failed, and so does the one alone
    "r4-t2": ([_ok(1.0), _failed("current_stream"), _ok(1.05)], _failed("current_stream")),
    "r3-t1": ([_ok(2.0), _ok(2.2), _ok(2.1)], None),
    "r2-t0": ([_failed("output_after_timing"), _ok(1.5), _ok(1.7)], _ok(1.6)),  # passes alone: ranked, the retry said
    "r1-t3": ([_ok(0.5), _ok(0.6), _ok(0.55)], None),  # replaced below in the driver's test
    "input": ([_ok(3.0), _ok(3.1), _ok(3.2)], None),
}


@pytest.fixture
def cuda_spec(tmp_path, monkeypatch) -> RunSpec:
    monkeypatch.setenv(
        "BEAMSEARCH_LOCK_DIR", str(tmp_path / "locks")
    )  # gpu_memory's files; no CUDA is opened
    return RunSpec(problem_path="/p/problem.py", shapes="full", device="cuda")


def _entry(cand_id: str) -> BeamEntry:
    return BeamEntry(id=cand_id, kernel=Kernel(source=f"def kernel_function(x):  # {cand_id}\n    return x\n",
                                               origin="tuner"), ranked_ms=1.0, round=int(cand_id[1]) if cand_id[1:2].isdigit() else 0)  # fmt: skip


def test_a_failed_re_timing_is_retried_alone_and_only_a_pass_keeps_a_time(monkeypatch, cuda_spec) -> None:
    script = {k: v for k, v in SCRIPT.items() if k != "r1-t3"}
    script["r1-t3"] = ([_ok(0.5), _failed("output_after_timing"), _ok(0.5)], _failed("output_after_timing"))
    timings = ScriptedTimings(script)
    monkeypatch.setattr(task, "time_target", timings)
    retimed = {t.id: t for t in task.retime(cuda_spec, [_entry(k) for k in script], WorkerContext("w0"))}

    stream = retimed["r4-t2"]  # failed alone only a check other processes on the GPU can fail
    assert stream.median_ms is None and stream.crowned_ms is None
    assert (
        stream.status == "inconclusive"
        and stream.reason.startswith("current_stream")
        and stream.retried_alone_after == "current_stream: d"
    )
    assert stream.medians_ms == [1.0, 1.05] and "not crowned" in stream.note
    wrong = retimed["r1-t3"]  # the kernel's own failure, alone too
    assert (
        wrong.status == "failed"
        and wrong.reason.startswith("output_after_timing")
        and wrong.crowned_ms is None
    )
    passed_alone = retimed["r2-t0"]
    assert (
        passed_alone.status == "ok"
        and passed_alone.medians_ms == [1.5, 1.7, 1.6]
        and passed_alone.crowned_ms == 1.6
    )
    assert "timed again alone, it passed" in passed_alone.note
    assert retimed["r3-t1"].crowned_ms == 2.1 and retimed["r3-t1"].note == ""
    assert sorted(c for c, alone in timings.calls if alone) == ["r1-t3", "r2-t0", "r4-t2"]


def test_on_the_cpu_a_failure_alone_is_a_failure_not_inconclusive(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(task, "time_target", ScriptedTimings({"k": ([], _failed("clocks_agree"))}))
    cpu = RunSpec(problem_path="/p/problem.py", shapes="small", device="cpu")
    path = WorkerContext("w0").kernel_file("retime-k", _entry("r1-t0").kernel)
    judged = final_timing(cpu, "k", path, [_ok(1.0), _failed("clocks_agree")])
    assert (
        judged.status == "failed" and judged.reason.startswith("clocks_agree") and judged.crowned_ms is None
    )


class RetimePool:
    """The pool, answering only the final re-timing, by the worker's own ``retime``."""

    def call(self, method: str, spec: RunSpec, entries: list[BeamEntry]) -> list[FinalTiming]:
        assert method == "retime"
        return task.retime(spec, entries, WorkerContext("w0"))


def test_the_search_crowns_no_kernel_whose_re_timing_failed_and_says_so(
    monkeypatch, cuda_spec, tmp_path
) -> None:
    """r4-t2 passed one re-timing at 1.0 ms (the fastest) and failed the other; alone, it failed again. The
    crown goes to r2-t0, whose failure was retried alone and passed; summary, events and report say so."""
    script = {k: v for k, v in SCRIPT.items() if k != "r1-t3"}
    monkeypatch.setattr(task, "time_target", ScriptedTimings(script))
    beam = [_entry(k) for k in ("r4-t2", "r2-t0", "r3-t1")]
    state = BeamState(config=SearchConfig(problem="p"), problem="p", spec=cuda_spec, beam=beam,
                      input=_entry("input"))  # fmt: skip
    events: list[dict] = []
    out = tmp_path / "run"
    summary = Driver(state, RetimePool(), TraceWriter(out), Display(True, events.append), "p", {}).finish()

    assert summary.best_id == "r2-t0" and summary.best_ms == 1.6 and summary.input_ms == 3.1
    saved = Summary.model_validate_json((out / "summary.json").read_text())
    assert saved.best_id == "r2-t0" and len(saved.retime_notes) == 2
    assert any(n.startswith("r4-t2: a re-timing failed (current_stream: d)") and "not crowned" in n
               for n in saved.retime_notes)  # fmt: skip
    printed = [e["note"] for e in events if e["event"] == "retime_note"]
    assert printed == saved.retime_notes
    text = best_round_text(load_run(out))
    assert "inconclusive: current_stream" in text and "- r4-t2: a re-timing failed" in text


def test_a_round_counts_its_inconclusive_candidates_apart_from_failures(tmp_path) -> None:
    from beamsearch.records.state import TaskResult
    from beamsearch.report import rounds_table
    from tests.test_beam_profiles import ANSWERS, ScriptedPool, _driver

    disturbed = TaskResult(task_id="r1-t4", parent_id="input", round=1, direction=0, status="inconclusive",
                           reason="timing inconclusive: ...", kernel=Kernel(source="# t4\n", origin="tuner"))  # fmt: skip
    answers = {**ANSWERS, "r1-t4": disturbed}
    driver = _driver(tmp_path / "run", ScriptedPool(answers))
    driver.run_rounds()
    record = driver.state.rounds[0]
    assert record.inconclusive == 1 and record.failed == 0 and "r1-t4" not in record.beam
    run = load_run(tmp_path / "run")
    assert "| 0; 1 inconclusive |" in rounds_table(run) and "not counted as failed" in rounds_table(run)


# A search's summary from a GPU session (docs/gpu-runs/2026-11-25-h100-screening, run b/full-2), kept as written then.
COMMITTED_SUMMARY = Path(__file__).parent / "data" / "summaries" / "old_status_with_reason.json"


def test_a_committed_summary_loads_and_an_old_status_with_its_reason_is_split() -> None:
    """Summaries written before the reason had its own field said ``failed: <reason>`` in the status."""
    text = COMMITTED_SUMMARY.read_text()
    summary = Summary.model_validate_json(text)
    assert summary.final_retime and all(t.status == "ok" and t.reason == "" for t in summary.final_retime)
    assert all(b.status == "ok" for b in summary.baselines)

    old = json.loads(text)
    old["final_retime"][0].update(
        median_ms=None, status="inconclusive: current_stream: d", retried_alone_after="x"
    )
    first = Summary.model_validate(old).final_retime[0]
    assert (first.status, first.reason, first.crowned_ms) == ("inconclusive", "current_stream: d", None)
    assert first.note.endswith("timed again alone, inconclusive: current_stream: d; not crowned")
    assert FinalTiming.model_validate_json(first.model_dump_json()) == first
    with pytest.raises(ValueError, match="status"):
        FinalTiming(id="k", median_ms=None, status="gone")


def test_one_slow_pass_does_not_set_the_inputs_time_and_the_disagreement_is_shown(monkeypatch, cuda_spec) -> None:
    """Issue 48: the input's two re-timings were 115.6 and 169.7 ms, and the upper one set the headline (1.54x
    where the rounds said 1.06x). Three passes, their median: one slow pass does not count, and is shown."""
    from beamsearch.display import retime_line

    script = {"r3-t1": ([_ok(75.0), _ok(74.8), _ok(75.3)], None), "input": ([_ok(115.6), _ok(169.7), _ok(118.0)], None)}
    monkeypatch.setattr(task, "time_target", ScriptedTimings(script))
    retimed = {t.id: t for t in task.retime(cuda_spec, [_entry(k) for k in script], WorkerContext("w0"))}
    assert retimed["input"].crowned_ms == 118.0 and retimed["r3-t1"].crowned_ms == 75.0
    assert retimed["input"].disagree and not retimed["r3-t1"].disagree
    line = retime_line([t.model_dump() for t in retimed.values()])
    assert line == ("re-timed side by side (median of 3 interleaved passes): r3-t1 75.00 ms, "
                    "input 118.0 ms (115.6 / 169.7 / 118.0 ms: passes disagree by 47 %)")  # fmt: skip


def test_an_even_count_of_passing_re_timings_takes_the_middle_twos_mean(cuda_spec) -> None:
    """Two passes left (a third failed, and passed alone was not reached): neither one alone is the time."""
    judged = final_timing(cuda_spec, "k", "k.py", [_ok(1.0), _ok(1.2)])
    assert judged.crowned_ms == pytest.approx(1.1) and judged.medians_ms == [1.0, 1.2]

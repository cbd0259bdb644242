"""The report of scripts/two_searches.py, on a trace written with the search's own records (the searches
themselves run on a GPU: see the script)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import Kernel, RunSpec, Timing, TimingResult
from beamsearch.records.state import BeamState, FinalTiming, RoundRecord, TaskResult

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "two_searches.py"
spec_ = importlib.util.spec_from_file_location("two_searches", SCRIPT)
two_searches = importlib.util.module_from_spec(spec_)
spec_.loader.exec_module(two_searches)


def _result(cand: str, status: str, timing_status: str | None, first: str = "", locked: float = 1.0,
            finished_at: float = 0.0) -> TaskResult:  # fmt: skip
    timing = None
    if timing_status is not None:
        t = Timing(median_ms=1.0, mean_ms=1.0, std_ms=0.0, min_ms=1.0, n=10, warmup_n=1, method="m", device_name="g",
                   on_gpu=True, dtype="bf16", shapes="full")  # fmt: skip
        timing = TimingResult(target="k", status=timing_status, timing=t, lock_wait_s=0.5, retried_alone_after=first,
                              steps_s={"locked": locked, "measured": locked + 2.0})  # fmt: skip
    return TaskResult(task_id=cand, parent_id="input", round=1, direction=0, status=status, reason=f"{status} why",
                      kernel=Kernel(source=f"# {cand}\n", origin="tuner"), timing=timing, finished_at=finished_at)  # fmt: skip


def _write_run(folder: Path, started_at: float, results: list[TaskResult], final: list[FinalTiming]) -> None:
    spec = RunSpec(problem_path="/p/problem.py", shapes="full", device="cuda")
    rounds = [RoundRecord(round=1, tasks=len(results), ok=1, failed=0, wall_s=60.0)]
    state = BeamState(
        config=SearchConfig(problem="p"), problem="p", spec=spec, rounds=rounds, started_at=started_at
    )
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(state.model_dump_json())
    for r in results:
        path = folder / "optimization_trace" / "round_1" / "candidates" / r.task_id / "result.json"
        path.parent.mkdir(parents=True)
        path.write_text(r.model_dump_json())
    if final:  # only the fields the report reads of a summary
        summary = {"rounds": [r.model_dump() for r in rounds], "final_retime": [t.model_dump() for t in final],
                   "best_id": final[0].id, "best_ms": final[0].median_ms}  # fmt: skip
        (folder / "summary.json").write_text(json.dumps(summary))


def test_the_report_counts_honest_kernels_failed_and_the_locks_share(tmp_path, capsys) -> None:
    a, b = tmp_path / "search-a", tmp_path / "search-b"
    _write_run(a, 1000.0, [
        _result("r1-t0", "ok", "ok", finished_at=1030.0),
        _result("r1-t1", "ok", "ok", first="failed: current_stream: 3 of 10", finished_at=1040.0),  # passed alone
        _result("r1-t2", "inconclusive", "failed", first="failed: clocks_agree: x", finished_at=1050.0),
        _result("r1-t3", "rejected", None),
    ], [FinalTiming(id="r1-t0", median_ms=1.0, status="ok"),
        FinalTiming(id="r1-t1", median_ms=None, status="failed", reason="output_after_timing: x",
                    retried_alone_after="y")])  # fmt: skip
    _write_run(b, 1010.0, [_result("r1-t0", "not_timed", "failed", finished_at=1100.0)], [])
    rows = two_searches.report([a, b])
    ra, rb = rows
    assert (ra["candidates"], ra["timed"], ra["first try failed"], ra["first try failed, passed alone"]) == (
        4,
        2,
        2,
        1,
    )
    assert (ra["not ranked"], ra["inconclusive"], rb["not ranked"]) == (1, 1, 1)
    assert ra["lock hold s"] == 6.0 and ra["lock wait s"] == 1.5 and rb["lock hold s"] == 2.0
    assert ra["final re-timing"][1] == "r1-t1: failed: output_after_timing: x (first: y)"
    out = capsys.readouterr().out
    # 8 s held of the 100 s from the first run's start to the last candidate
    assert "2 honest kernels failed" in out and "2 not ranked" in out and "lock's share 8.0 %" in out

"""scripts/search_stats.py counts only the candidates of finished rounds: a round cut short (a run stopped
by its time limit) has candidates but no wall time, and counting them would inflate the rate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import Kernel, RunSpec, TimingResult
from beamsearch.records.state import BeamState, RoundRecord, TaskResult
from scripts import search_stats

ROOT = Path(__file__).resolve().parents[1]


def _candidate(run, round_: int, k: int) -> None:
    result = TaskResult(task_id=f"r{round_}-t{k}", parent_id="input", round=round_, direction=k, status="ok", reason="",
                        kernel=Kernel(source=f"x = {k}", origin="tuner"), stage_s={"verify": 2.0, "time": 3.0},
                        timing=TimingResult(target="k.py", status="ok", duration_s=9.0, lock_wait_s=0.5 + k,
                                            steps_s={"hashed": 0.1, "locked": 1.5, "measured": 3.0}))  # fmt: skip
    folder = run / "optimization_trace" / f"round_{round_}" / "candidates" / result.task_id
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(result.model_dump_json())


def test_a_round_cut_short_is_not_counted(tmp_path) -> None:
    spec = RunSpec(problem_path="/p/problem.py", shapes="full", device="cuda")
    state = BeamState(config=SearchConfig(problem="p"), problem="p", spec=spec,
                      rounds=[RoundRecord(round=1, tasks=2, ok=2, failed=0, wall_s=30.0, profile_wall_s=6.0, profile_s=6.0)])  # fmt: skip
    (tmp_path / "state.json").write_text(state.model_dump_json())
    for k in range(2):
        _candidate(tmp_path, 1, k)
    for k in range(5):
        _candidate(tmp_path, 2, k)  # round 2 was running when the run stopped
    rounds = search_stats.finished_rounds(tmp_path)
    results = search_stats.task_results(tmp_path, rounds)
    assert sorted(r.task_id for r in results) == ["r1-t0", "r1-t1"]
    row = search_stats.stats(tmp_path, 1, rounds, results)
    assert row["candidates"] == 2 and row["candidates per min"] == 4.0
    assert row["profile s/cand"] == 3.0 and row["profile wall s per round"] == 6.0
    # Only the seconds holding the lock count as timing, not the child's start, compile or wait.
    assert row["timing share %"] == 100 * 2 * 1.5 / 30.0 and row["profiling share %"] == 100 * 6.0 / 30.0
    assert row["lock wait s/timing"] == 1.0  # the mean of 0.5 and 1.5


def test_a_run_stopped_in_round_0_has_a_row_and_a_stray_file_is_refused(tmp_path) -> None:
    spec = RunSpec(problem_path="/p/problem.py", shapes="full", device="cuda")
    run = tmp_path / "run"
    run.mkdir()
    (run / "state.json").write_text(BeamState(config=SearchConfig(problem="p"), problem="p", spec=spec).model_dump_json())
    _candidate(run, 1, 0)  # round 1 was running when the run stopped
    row = search_stats.stats(run, 1, [], search_stats.task_results(run, []))
    assert row["rounds"] == 0 and row["candidates"] == 0 and "candidates per min" not in row
    stray = tmp_path / "run.log"
    stray.write_text("a log beside the run folder")
    done = subprocess.run([sys.executable, "scripts/search_stats.py", str(run), str(stray)], capture_output=True,
                          text=True, cwd=ROOT)  # fmt: skip
    assert done.returncode == 2 and f"{stray} is not a run folder" in done.stderr
    done = subprocess.run([sys.executable, "scripts/search_stats.py", str(run)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr

"""Only the beam's kernels are profiled: a round's new ones at the start of the next round, while the
tasks of parents that have a profile already run (a parent's tasks wait for its profile); the last
round's after its selection. The others are marked not profiled. The pool here is a stand-in that
records its jobs (the GPU searches in docs/gpu-runs run the real one)."""

from __future__ import annotations

import json
import time
from collections import deque

from beamsearch.beam_profiles import NOT_PROFILED
from beamsearch.config import SearchConfig
from beamsearch.display import Display
from beamsearch.driver import Driver
from beamsearch.schema import Kernel, Profile, RunSpec, Timing, TimingResult
from beamsearch.state import BeamEntry, BeamState, Task, TaskResult
from beamsearch.trace import TraceWriter
from workers.task import profile_beam_kernel


class RecordingPool:
    """Hands out tasks one at a time, as the real pool hands them to idle workers, including the ones the
    driver adds while it iterates. A profile job is answered the way a worker does when ncu is not there
    (an unavailable profile), except for ``fail``, a job whose worker died twice (the pool's own failed
    record); a candidate task with a kernel timed at 2 ms."""

    def __init__(self, fail: str = "") -> None:
        self.jobs: list[Task] = []
        self.fail = fail

    def run(self, tasks, timeout_s: float, method: str = "run", notify=None):
        assert method == "run"
        queue = tasks if isinstance(tasks, deque) else deque(tasks)
        while queue:
            task = queue.popleft()
            self.jobs.append(task)
            if task.kind == "candidate":
                yield _result(task.id, 2.0 + len(self.jobs) / 100, round_=task.round, parent=task.parent.id)
            elif task.parent.id == self.fail:
                yield TaskResult(task_id=task.id, parent_id=task.parent.id, round=task.round, direction=0,
                                 status="failed", reason="the worker died twice running this task")  # fmt: skip
            else:
                profile = Profile(available=False, reason=f"no ncu for {task.parent.id}", duration_s=1.0)
                yield TaskResult(task_id=task.id, parent_id=task.parent.id, round=task.round, direction=0, status="ok",
                                 reason="", profile=profile, stage_s={"profile": 2.0}, gpu_measure_s=1.0)  # fmt: skip


def _result(id_: str, ms: float, status: str = "ok", round_: int = 1, parent: str = "input") -> TaskResult:
    timing = Timing(median_ms=ms, mean_ms=ms, std_ms=0, min_ms=ms, n=5, warmup_n=1, method="m", device_name="g",
                    on_gpu=True, dtype="bf16", shapes="full")  # fmt: skip
    return TaskResult(task_id=id_, parent_id=parent, round=round_, direction=0, status=status, reason="",
                      kernel=Kernel(source=f"def kernel_function(x):\n    return x + {ms}\n", origin="tuner"),
                      timing=TimingResult(target="k", status="ok", timing=timing))  # fmt: skip


def _driver(tmp_path, pool: RecordingPool, device: str = "cuda", rounds: int = 1, beam: list[BeamEntry] = ()) -> Driver:
    spec = RunSpec(problem_path="/p/problem.py", shapes="full", device=device)
    profiled_input = Profile(available=True, duration_s=1.0)
    entry = BeamEntry(id="input", kernel=Kernel(source="def kernel_function(x):\n    return x\n", origin="input"),
                      median_ms=5.0, round=0, profile=profiled_input)  # fmt: skip
    state = BeamState(config=SearchConfig(problem="p", beam_width=3, directions=2, rounds=rounds), problem="p",
                      spec=spec, beam=[*beam, entry], input=entry)  # fmt: skip
    events: list[dict] = []
    return Driver(state, pool, TraceWriter(tmp_path), Display(True, events.append), "p", {})


def test_the_last_rounds_new_beam_kernels_are_profiled_after_selection_and_only_they(tmp_path, capsys) -> None:
    pool = RecordingPool(fail="r1-t1")
    driver = _driver(tmp_path, pool)  # one round: round 1 is the last
    results = [_result("r1-t0", 1.0), _result("r1-t1", 2.0), _result("r1-t2", 9.0), _result("r1-t3", 0.5, "rejected")]
    driver._finish_round(1, results, {}, {}, start=time.time(), profiled=[])

    # Beam: r1-t0, r1-t1 and the input (already profiled in round 0); r1-t2 is too slow to stay.
    assert [job.parent.id for job in pool.jobs] == ["r1-t0", "r1-t1"]
    beam = {e.id: e for e in driver.state.beam}
    assert list(beam) == ["r1-t0", "r1-t1", "input"]
    assert beam["r1-t0"].profile.reason == "no ncu for r1-t0"
    assert "died twice" in beam["r1-t1"].profile.reason  # recorded, so no task profiles it again
    assert beam["input"].profile.available

    record = driver.state.rounds[0]
    assert record.profile_s == 2.0 and record.gpu_measure_s == 1.0  # the failed job measured nothing and 0.0 < record.profile_wall_s <= record.wall_s
    candidates = tmp_path / "optimization_trace" / "round_1" / "candidates"
    ncu = {c: json.loads((candidates / c / "optimized_ncu_metrics.json").read_text()) for c in ("r1-t0", "r1-t2")}
    assert ncu["r1-t0"]["reason"] == "no ncu for r1-t0"
    assert ncu["r1-t2"]["reason"] == NOT_PROFILED
    saved = TaskResult.model_validate_json((candidates / "r1-t2" / "result.json").read_text())
    assert saved.profile.skipped
    assert not (candidates / "r1-t3" / "optimized_ncu_metrics.json").exists()  # rejected: nothing to profile
    assert json.loads((tmp_path / "optimization_trace" / "round_1" / "optimized_ncu_metrics.json").read_text()) == ncu["r1-t0"]


def test_a_parents_tasks_wait_for_its_profile_while_the_others_run(tmp_path) -> None:
    from beamsearch.state import RoundRecord

    pool = RecordingPool()
    new = [BeamEntry(id=f"r1-t{k}", kernel=Kernel(source=f"def kernel_function(x):\n    return x * {k}\n", origin="tuner"),
                     median_ms=1.0 + k, round=1) for k in (0, 1)]  # fmt: skip
    driver = _driver(tmp_path, pool, rounds=3, beam=new)
    for entry in new:  # round 1's records, as the trace holds them (r1-t0 was its best)
        driver.trace.write_candidate(_result(entry.id, entry.median_ms).model_copy(update={"kernel": entry.kernel}), "p")
    record = RoundRecord(round=1, tasks=2, ok=2, failed=0, best_id="r1-t0", best_ms=1.0)
    driver.state = driver.state.model_copy(update={"round": 1, "rounds": [record]})
    driver.run_round(2)

    handed = [(job.kind, job.parent.id) for job in pool.jobs]
    # The first profile job and the input's tasks at once; each parent's tasks right after its profile.
    assert handed == [("profile", "r1-t0"), ("candidate", "input"), ("candidate", "input"),
                      ("profile", "r1-t1"), ("candidate", "r1-t0"), ("candidate", "r1-t0"),
                      ("candidate", "r1-t1"), ("candidate", "r1-t1")]  # fmt: skip
    assert all(job.parent.profile is not None for job in pool.jobs if job.kind == "candidate")
    assert driver.state.rounds[1].tasks == 6 and driver.state.rounds[1].profile_s == 4.0
    assert driver.state.rounds[1].profile_wall_s == 0.0  # round 2 is not the last: nothing after its selection
    trace = tmp_path / "optimization_trace"
    for folder in (trace / "round_1" / "candidates" / "r1-t0", trace / "round_1"):
        assert json.loads((folder / "optimized_ncu_metrics.json").read_text())["reason"] == "no ncu for r1-t0"
    assert "no ncu for r1-t1" in (trace / "round_1" / "candidates" / "r1-t1" / "optimized_ncu_metrics.json").read_text()
    parents = {e.id: e for e in BeamState.model_validate_json((tmp_path / "state.json").read_text()).beam}
    assert parents["r1-t0"].profile.reason == "no ncu for r1-t0" and parents["r1-t1"].profile is not None
    assert parents["r2-t4"].profile is None  # new in the beam: profiled when round 3 starts


def test_cpu_runs_profile_nothing(tmp_path) -> None:
    pool = RecordingPool()
    driver = _driver(tmp_path, pool, device="cpu")
    driver._finish_round(1, [_result("r1-t0", 1.0)], {}, {}, start=time.time(), profiled=[])
    assert pool.jobs == [] and driver.state.beam[0].profile is None and driver.state.rounds[0].profile_wall_s == 0.0


def test_a_workers_profile_job_measures_the_kernel_once(tmp_path, monkeypatch) -> None:
    from workers import task as task_fns

    calls: list[str] = []

    def fake_profile(spec, path, seed):
        calls.append(path)
        return Profile(available=True, duration_s=0.7, combined={})

    monkeypatch.setattr(task_fns, "profile_candidate", fake_profile)
    ctx = task_fns.WorkerContext("w0")
    spec = RunSpec(problem_path="/p/problem.py", shapes="full", device="cuda")
    entry = BeamEntry(id="r1-t0", kernel=Kernel(source="def kernel_function(x):\n    return x\n", origin="tuner"),
                      median_ms=1.0, round=1)  # fmt: skip
    job = Task(id="r1-profile-r1-t0", round=1, direction=0, parent=entry, spec=spec, config=SearchConfig(problem="p"))
    first, again = profile_beam_kernel(job, ctx), profile_beam_kernel(job, ctx)
    assert len(calls) == 1 and first.status == "ok" and first.parent_id == "r1-t0" and first.gpu_measure_s == 0.7
    assert again.profile == first.profile and "profile" in first.stage_s

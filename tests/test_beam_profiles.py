"""After a GPU round's selection the driver profiles the beam's new kernels, and only those: one ncu job
each, run through the pool; the others are marked not profiled. The pool here is a stand-in that
records its jobs (the GPU searches in docs/gpu-runs run the real one)."""

from __future__ import annotations

import json
import time

from beamsearch.config import SearchConfig
from beamsearch.display import Display
from beamsearch.driver import NOT_PROFILED, Driver
from beamsearch.schema import Kernel, Profile, RunSpec, Timing, TimingResult
from beamsearch.state import BeamEntry, BeamState, Task, TaskResult
from beamsearch.trace import TraceWriter
from workers.task import profile_beam_kernel


class RecordingPool:
    """Answers every profile job the way a worker does when ncu is not there (an unavailable profile),
    except for ``fail``, a job whose worker died twice (the pool's own failed record)."""

    def __init__(self, fail: str = "") -> None:
        self.jobs: list[Task] = []
        self.fail = fail

    def run(self, tasks: list[Task], timeout_s: float, method: str = "run", notify=None):
        assert method == "profile"
        for task in tasks:
            self.jobs.append(task)
            if task.parent.id == self.fail:
                yield TaskResult(task_id=task.id, parent_id=task.parent.id, round=task.round, direction=0,
                                 status="failed", reason="the worker died twice running this task")  # fmt: skip
            else:
                profile = Profile(available=False, reason=f"no ncu for {task.parent.id}", duration_s=1.0)
                yield TaskResult(task_id=task.id, parent_id=task.parent.id, round=task.round, direction=0, status="ok",
                                 reason="", profile=profile, stage_s={"profile": 2.0}, gpu_measure_s=1.0)  # fmt: skip


def _result(id_: str, ms: float, status: str = "ok") -> TaskResult:
    timing = Timing(median_ms=ms, mean_ms=ms, std_ms=0, min_ms=ms, n=5, warmup_n=1, method="m", device_name="g",
                    on_gpu=True, dtype="bf16", shapes="full")  # fmt: skip
    return TaskResult(task_id=id_, parent_id="input", round=1, direction=0, status=status, reason="",
                      kernel=Kernel(source=f"def kernel_function(x):\n    return x + {ms}\n", origin="tuner"),
                      timing=TimingResult(target="k", status="ok", timing=timing))  # fmt: skip


def _driver(tmp_path, pool: RecordingPool, device: str = "cuda") -> Driver:
    spec = RunSpec(problem_path="/p/problem.py", shapes="full", device=device)
    profiled_input = Profile(available=True, duration_s=1.0)
    entry = BeamEntry(id="input", kernel=Kernel(source="def kernel_function(x):\n    return x\n", origin="input"),
                      median_ms=5.0, round=0, profile=profiled_input)  # fmt: skip
    state = BeamState(config=SearchConfig(problem="p", beam_width=3, directions=1, rounds=1), problem="p", spec=spec,
                      beam=[entry], input=entry)  # fmt: skip
    events: list[dict] = []
    return Driver(state, pool, TraceWriter(tmp_path), Display(True, events.append), "p", {})


def test_only_the_beams_new_kernels_are_profiled_and_the_trace_says_so(tmp_path) -> None:
    pool = RecordingPool(fail="r1-t1")
    driver = _driver(tmp_path, pool)
    results = [_result("r1-t0", 1.0), _result("r1-t1", 2.0), _result("r1-t2", 9.0), _result("r1-t3", 0.5, "rejected")]
    driver._finish_round(1, results, {}, {}, start=time.time())

    # Beam: r1-t0, r1-t1 and the input (already profiled in round 0); r1-t2 is too slow to stay.
    assert [job.parent.id for job in pool.jobs] == ["r1-t0", "r1-t1"]
    beam = {e.id: e for e in driver.state.beam}
    assert list(beam) == ["r1-t0", "r1-t1", "input"]
    assert beam["r1-t0"].profile.reason == "no ncu for r1-t0"
    assert "died twice" in beam["r1-t1"].profile.reason  # recorded, so no task profiles it again
    assert beam["input"].profile.available

    record = driver.state.rounds[0]
    assert record.profile_s == 2.0 and record.gpu_measure_s == 1.0  # the failed job measured nothing
    assert 0.0 < record.profile_wall_s <= record.wall_s
    candidates = tmp_path / "optimization_trace" / "round_1" / "candidates"
    ncu = {c: json.loads((candidates / c / "optimized_ncu_metrics.json").read_text()) for c in ("r1-t0", "r1-t2")}
    assert ncu["r1-t0"]["reason"] == "no ncu for r1-t0"
    assert ncu["r1-t2"]["reason"] == NOT_PROFILED
    saved = TaskResult.model_validate_json((candidates / "r1-t2" / "result.json").read_text())
    assert saved.profile.skipped
    assert not (candidates / "r1-t3" / "optimized_ncu_metrics.json").exists()  # rejected: nothing to profile
    assert json.loads((tmp_path / "optimization_trace" / "round_1" / "optimized_ncu_metrics.json").read_text()) == ncu["r1-t0"]


def test_cpu_runs_profile_nothing(tmp_path) -> None:
    pool = RecordingPool()
    driver = _driver(tmp_path, pool, device="cpu")
    driver._finish_round(1, [_result("r1-t0", 1.0)], {}, {}, start=time.time())
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
    assert again.profile == first.profile and again.gpu_measure_s == 0.0  # nothing measured the second time
    assert "profile" in first.stage_s

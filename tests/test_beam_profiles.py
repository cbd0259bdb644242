"""The beam's new kernels are profiled, and only those, while the round's last tasks run: once every task
is out, the pool asks for spare work, and the driver hands out a profile job for each kernel the beam
would keep if the round ended then. A kernel pushed out later was profiled for nothing and is counted
so; the others are marked not profiled. The pool here is a stand-in that answers from a script (the GPU
searches in docs/gpu-runs run the real one; tests/test_pool.py runs the real pool's spare work)."""

from __future__ import annotations

import json
import time

from beamsearch.beam_profiles import NOT_PROFILED
from beamsearch.display import Display
from beamsearch.driver import Driver
from beamsearch.pool import failed
from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import Kernel, Profile, RunSpec, Timing, TimingResult
from beamsearch.records.state import BeamEntry, BeamState, ProfileJob, ProfileResult, Task, TaskResult
from beamsearch.trace import TraceWriter
from workers.actor.task import profile_beam_kernel


class ScriptedPool:
    """Stands in for the pool: ``workers`` workers, each asking the driver for a job when idle (the real
    pool's spare work; the driver hands out every job so). A task is answered from ``answers`` (by task id),
    those out first in ``answers``' order; a profile job is answered before any task, the way a worker does
    when ncu is not there, except for ``fail``, a job whose worker died twice (the pool's own failed
    record). One worker takes the round's tasks one by one and profiles after the last; six take every
    task at once and profile as each comes back."""

    def __init__(self, answers: dict[str, TaskResult], workers: int = 1, fail: str = "", task_s: float = 0.0) -> None:
        self.answers, self.fail, self.task_s = answers, fail, task_s
        self.jobs: list[ProfileJob] = []
        self.handed: list[Task] = []
        self.workers = [f"w{i}" for i in range(workers)]

    def run(self, tasks: list[Task], timeout_s: float, method: str = "run", notify=None, spare_work=None,
            hand_out=lambda task: task):  # fmt: skip
        queue, out = list(tasks), []
        order = list(self.answers)
        while True:
            while len(out) < len(self.workers):
                job = hand_out(queue.pop(0)) if queue else spare_work() if spare_work else None
                if job is None:
                    break
                out.append(job)
                if isinstance(job, Task):
                    assert job.id in self.answers, job.id
                    self.handed.append(job)
            if not out:
                return
            profiles = [j for j in out if isinstance(j, ProfileJob)]
            job = profiles[0] if profiles else min(out, key=lambda t: order.index(t.id))
            out.remove(job)
            yield self._profile(job) if isinstance(job, ProfileJob) else self._answer(job)

    def _answer(self, task: Task) -> TaskResult:
        time.sleep(self.task_s)
        return self.answers[task.id]

    def _profile(self, job: ProfileJob):
        self.jobs.append(job)
        if job.entry.id == self.fail:
            return failed(job, "the worker died twice running this task")
        profile = Profile(available=False, reason=f"no ncu for {job.entry.id}", duration_s=1.0)
        return ProfileResult(job_id=job.id, kernel_id=job.entry.id, profile=profile, stage_s={"profile": 2.0},
                             gpu_measure_s=1.0)  # fmt: skip


def _result(id_: str, ms: float | None, status: str = "ok") -> TaskResult:
    if ms is None:
        return TaskResult(task_id=id_, parent_id="input", round=1, direction=0, status="no_proposal", reason="")
    timing = Timing(median_ms=ms, mean_ms=ms, std_ms=0, min_ms=ms, n=5, warmup_n=1, method="m", device_name="g",
                    on_gpu=True, dtype="bf16", shapes="full")  # fmt: skip
    return TaskResult(task_id=id_, parent_id="input", round=1, direction=0, status=status, reason="",
                      kernel=Kernel(source=f"def kernel_function(x):\n    return x + {ms}\n", origin="tuner"),
                      timing=TimingResult(target="k", status="ok", timing=timing))  # fmt: skip


# Round 1 of a beam of 3 with 2 directions: 6 tasks from the input (5 ms). The beam keeps r1-t0, r1-t1
# and the input (profiled in round 0); r1-t2 is too slow to stay once the others are in.
ANSWERS = {"r1-t2": _result("r1-t2", 9.0), "r1-t0": _result("r1-t0", 1.0), "r1-t1": _result("r1-t1", 2.0),
           "r1-t3": _result("r1-t3", 0.5, "rejected"), "r1-t4": _result("r1-t4", None), "r1-t5": _result("r1-t5", None)}  # fmt: skip


def _driver(tmp_path, pool: ScriptedPool, device: str = "cuda") -> Driver:
    spec = RunSpec(problem_path="/p/problem.py", shapes="full", device=device)
    profiled_input = Profile(available=True, duration_s=1.0)
    entry = BeamEntry(id="input", kernel=Kernel(source="def kernel_function(x):\n    return x\n", origin="input"),
                      ranked_ms=5.0, round=0, profile=profiled_input)  # fmt: skip
    # A replay's round: beam width x directions tasks, planned without the offline optimiser's knob spaces
    # (the scripted pool answers them; nothing reads the recorded run).
    config = SearchConfig(problem="p", beam_width=3, directions=2, rounds=1, replay="/recorded/run")
    state = BeamState(config=config, problem="p", spec=spec, beam=[entry], input=entry)
    events: list[dict] = []
    return Driver(state, pool, TraceWriter(tmp_path), Display(True, events.append), "p", {})


def test_only_the_beams_new_kernels_are_profiled_and_the_trace_says_so(tmp_path) -> None:
    pool = ScriptedPool(ANSWERS, fail="r1-t1", task_s=0.2)  # one worker: profiles after the last task
    driver = _driver(tmp_path, pool)
    driver.run_rounds()

    assert [job.entry.id for job in pool.jobs] == ["r1-t0", "r1-t1"]
    beam = {e.id: e for e in driver.state.beam}
    assert list(beam) == ["r1-t0", "r1-t1", "input"]
    assert beam["r1-t0"].profile.reason == "no ncu for r1-t0"
    assert "died twice" in beam["r1-t1"].profile.reason  # recorded, so no task profiles it again
    assert beam["input"].profile.available

    record = driver.state.rounds[0]
    assert record.profile_s == 2.0 and record.gpu_measure_s == 1.0  # the failed job measured nothing
    assert record.profiles == 2 and record.profiles_unused == 0
    assert 0.0 < record.profile_wall_s < 0.2 < 1.2 <= record.wall_s  # only the profiles ran after the last candidate
    candidates = tmp_path / "optimization_trace" / "round_1" / "candidates"
    ncu = {c: json.loads((candidates / c / "optimized_ncu_metrics.json").read_text()) for c in ("r1-t0", "r1-t2")}
    assert ncu["r1-t0"]["reason"] == "no ncu for r1-t0"
    assert ncu["r1-t2"]["reason"] == NOT_PROFILED
    saved = TaskResult.model_validate_json((candidates / "r1-t2" / "result.json").read_text())
    assert saved.profile.skipped
    assert not (candidates / "r1-t3" / "optimized_ncu_metrics.json").exists()  # rejected: nothing to profile
    assert json.loads((tmp_path / "optimization_trace" / "round_1" / "optimized_ncu_metrics.json").read_text()) == ncu["r1-t0"]


def test_profiles_start_while_tasks_run_and_one_pushed_out_is_counted_unused(tmp_path) -> None:
    pool = ScriptedPool(ANSWERS, workers=6)  # every task out at once: profiles from the first result on
    driver = _driver(tmp_path, pool)
    driver.run_rounds()

    # r1-t2 came first, and the beam as it stood then (the input and r1-t2) had room for it.
    assert [job.entry.id for job in pool.jobs] == ["r1-t2", "r1-t0", "r1-t1"]
    assert [e.id for e in driver.state.beam] == ["r1-t0", "r1-t1", "input"]
    assert all(e.profile is not None for e in driver.state.beam)
    record = driver.state.rounds[0]
    assert record.profiles == 3 and record.profiles_unused == 1 and record.profile_s == 6.0
    candidates = tmp_path / "optimization_trace" / "round_1" / "candidates"
    saved = TaskResult.model_validate_json((candidates / "r1-t2" / "result.json").read_text())
    assert saved.profile.reason == "no ncu for r1-t2" and not saved.profile.skipped  # its profile is kept


def test_a_kernel_with_a_profile_job_running_gets_no_second_one(tmp_path) -> None:
    from beamsearch.beam_profiles import BeamProfiles

    driver = _driver(tmp_path, ScriptedPool(ANSWERS, workers=6))
    results = [ANSWERS["r1-t0"], ANSWERS["r1-t1"]]
    profiles = BeamProfiles(driver.state, 1, results)
    first, second = profiles.next_job(), profiles.next_job()  # neither job is back yet
    assert [first.entry.id, second.entry.id] == ["r1-t0", "r1-t1"] and profiles.next_job() is None
    assert first.id == "r1-profile-r1-t0"
    results.append(ANSWERS["r1-t3"])  # rejected: never in the beam
    assert profiles.next_job() is None


def test_each_task_is_handed_out_with_the_time_it_must_beat_to_enter_the_beam(tmp_path) -> None:
    answers = {**ANSWERS, "r1-t0": _result("r1-t0", 9.0), "r1-t1": _result("r1-t1", 1.0), "r1-t2": _result("r1-t2", 2.0)}
    pool = ScriptedPool(answers)  # one worker: each task is handed out after the one before is back
    driver = _driver(tmp_path, pool)
    driver.run_rounds()
    # The input is 5 ms; a beam of 3 is full once two results are in (r1-t0 at 9 ms, r1-t1 at 1 ms), and
    # r1-t2's 2 ms pushes r1-t0 out. The default ratio is 1.2.
    screens = [(t.id, t.screen_above_ms and round(t.screen_above_ms, 6)) for t in pool.handed]
    assert screens == [("r1-t0", None), ("r1-t1", None), ("r1-t2", 10.8), ("r1-t3", 6.0), ("r1-t4", 6.0), ("r1-t5", 6.0)]
    off = ScriptedPool(ANSWERS)
    driver = _driver(tmp_path / "off", off)
    driver.state = driver.state.model_copy(update={"config": driver.state.config.model_copy(update={"screen_ratio": None})})
    driver.run_rounds()
    assert all(t.screen_above_ms is None for t in off.handed)


def test_cpu_runs_profile_nothing(tmp_path) -> None:
    pool = ScriptedPool(ANSWERS, workers=6)
    driver = _driver(tmp_path, pool, device="cpu")
    driver.run_rounds()
    assert pool.jobs == [] and driver.state.beam[0].profile is None
    record = driver.state.rounds[0]
    assert record.profile_wall_s == 0.0 and record.profiles == 0


def test_a_workers_profile_job_measures_the_kernel_once(tmp_path, monkeypatch) -> None:
    from workers.actor import task as task_fns

    calls: list[str] = []

    def fake_profile(spec, path, seed):
        calls.append(path)
        return Profile(available=True, duration_s=0.7, combined={})

    monkeypatch.setattr(task_fns, "profile_candidate", fake_profile)
    ctx = task_fns.WorkerContext("w0")
    spec = RunSpec(problem_path="/p/problem.py", shapes="full", device="cuda")
    entry = BeamEntry(id="r1-t0", kernel=Kernel(source="def kernel_function(x):\n    return x\n", origin="tuner"),
                      ranked_ms=1.0, round=1)  # fmt: skip
    job = ProfileJob(id="r1-profile-r1-t0", round=1, entry=entry, spec=spec)
    first, again = profile_beam_kernel(job, ctx), profile_beam_kernel(job, ctx)
    assert len(calls) == 1 and first.kernel_id == "r1-t0" and first.job_id == job.id and first.gpu_measure_s == 0.7
    assert again.profile == first.profile and again.gpu_measure_s == 0.0  # nothing measured the second time
    assert "profile" in first.stage_s


def test_offline_only_a_knob_searchs_root_is_profiled_and_the_crowned_variant_at_the_end(tmp_path) -> None:
    """Offline, no proposer reads a knob variant's profile: a round profiles the kernels that start a
    search (a compiler seed here), marks the kept variants not profiled and why, and the run's crowned
    variant is profiled once at the end, into its candidate folder."""
    from beamsearch.beam import entry_of, select_beam
    from beamsearch.beam_profiles import NOT_READ, BeamProfiles

    driver = _driver(tmp_path, ScriptedPool(ANSWERS, workers=6))
    offline = driver.state.config.model_copy(update={"replay": None})
    driver.state = driver.state.model_copy(update={"config": offline})
    seed = _result("r1-t9", 3.0).model_copy(update={"kernel": Kernel(source="def kernel_function(x):\n    return x * 1\n",
                                                                     origin="compiler")})  # fmt: skip
    results = [ANSWERS["r1-t0"], ANSWERS["r1-t1"], seed]
    profiles = BeamProfiles(driver.state, 1, results)
    job = profiles.next_job()
    assert job.entry.id == "r1-t9" and profiles.next_job() is None  # the variants r1-t0, r1-t1: no job
    _, marked = profiles.apply(select_beam(driver.state.beam, results, 3), results)
    assert [r.profile.reason for r in marked[:2]] == [NOT_READ, NOT_READ]

    class OneJobPool:
        jobs: list[ProfileJob] = []

        def run(self, jobs, timeout_s, notify=None):
            for j in jobs:
                self.jobs.append(j)
                yield ProfileResult(job_id=j.id, kernel_id=j.entry.id, profile=Profile(available=False,
                                    reason=f"measured at the end: {j.entry.id}"))  # fmt: skip

    driver.pool = OneJobPool()
    driver.trace.write_candidate(marked[0], "p")
    best = entry_of(marked[0])
    assert best.profile is None
    driver._profile_unprofiled(best)
    ncu = tmp_path / "optimization_trace" / "round_1" / "candidates" / "r1-t0" / "optimized_ncu_metrics.json"
    assert json.loads(ncu.read_text())["reason"] == "measured at the end: r1-t0"
    assert [j.id for j in driver.pool.jobs] == ["final-profile-r1-t0"]
    driver._profile_unprofiled(best)  # its folder has a profile now: no second job
    assert len(driver.pool.jobs) == 1

"""The worker pool against a real local Ray: a worker that is restarting (after a timed-out task) is
waited for, not taken for dead; one gone for good is replaced; a set-up call made meanwhile still gets
its answer."""

from __future__ import annotations

import logging
import tempfile

import pytest
import ray

from beamsearch.pool import WorkerPool

pytestmark = pytest.mark.slow  # Ray worker pools: CI runs these (pytest -m slow)


@pytest.fixture
def local_ray(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    with tempfile.TemporaryDirectory(prefix="bsray-", dir="/tmp") as tmp:
        # The workers these tests kill leave their temporary folders: in this one, not /tmp (Ray's processes
        # take the environment the cluster starts with).
        monkeypatch.setenv("TMPDIR", tmp)
        ray.init(_temp_dir=tmp, _node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=1,
                 logging_level=logging.WARNING, log_to_driver=False)  # fmt: skip
        try:
            yield
        finally:
            ray.shutdown()


def test_a_call_made_while_the_worker_restarts_is_answered(local_ray) -> None:
    pool = WorkerPool.start(1, 0)
    try:
        worker = pool.workers[0]
        before = worker.where
        ray.kill(worker.handle, no_restart=False)  # what a task timeout does
        assert "torch" in pool.call("versions", "cpu")
        pool._wait_until_back(worker)
        assert worker.where != before  # a new process (its pid is in the name), same actor
        assert pool.workers[0].handle is worker.handle
    finally:
        pool.shutdown()


def test_a_call_on_a_worker_gone_for_good_goes_to_its_replacement(local_ray) -> None:
    pool = WorkerPool.start(1, 0)
    try:
        gone = pool.workers[0].handle
        ray.kill(gone, no_restart=True)
        assert "torch" in pool.call("versions", "cpu")
        assert pool.workers[0].handle is not gone
    finally:
        pool.shutdown()


def test_workers_are_ordered_to_take_each_gpu_in_turn() -> None:
    from beamsearch.pool import Worker, spread_over_gpus

    wheres = ["h node aa pid 11 GPU 0", "h node aa pid 12 GPU 0", "h node aa pid 13 GPU 1", "h node aa pid 14 GPU 1",
              "h node aa pid 15 GPU 0", "h node bb pid 16 GPU 0"]  # fmt: skip
    workers = [Worker(f"w{i}", handle=None, where=where) for i, where in enumerate(wheres)]
    order = [w.name for w in spread_over_gpus(workers)]
    assert order == ["w0", "w2", "w5", "w1", "w3", "w4"]  # GPU 0 and 1 of node aa, GPU 0 of node bb, again


@ray.remote(num_cpus=0, max_restarts=1)
class _StandIn:
    """A stand-in worker: each job sleeps a little and answers with the method that ran it. With
    ``die_in`` set, the first job of that method kills the worker (Ray restarts it once)."""

    def __init__(self, name: str, die_in: str = "", marker: str = "") -> None:
        self.name, self.die_in, self.marker = name, die_in, marker

    def where(self) -> str:
        return self.name

    def close(self) -> None:  # the pool's shutdown asks; a stand-in has no children
        pass

    def _start(self, method: str) -> None:
        import os
        import time
        from pathlib import Path

        if method == self.die_in and not Path(self.marker).exists():
            Path(self.marker).touch()
            os._exit(1)
        time.sleep(0.2)

    def run(self, task):
        from beamsearch.records.state import TaskResult

        self._start("run")
        return TaskResult(task_id=task.id, parent_id=task.parent.id, round=1, direction=0, status="ok",
                          reason="run", worker=self.name, lesson=str(task.screen_above_ms))  # fmt: skip

    def profile(self, job):
        from beamsearch.records.schema import Profile
        from beamsearch.records.state import ProfileResult

        self._start("profile")
        return ProfileResult(job_id=job.id, kernel_id=job.entry.id, profile=Profile(available=False, reason="profile"),
                             worker=self.name)  # fmt: skip


class _Recorded:
    """A worker's handle that logs each job handed to it, in order, before passing it on."""

    def __init__(self, handle, log: list[tuple[str, str]]) -> None:
        self.handle, self.log = handle, log

    def __getattr__(self, method: str):
        remote = getattr(self.handle, method).remote
        log = self.log

        class _Method:
            @staticmethod
            def remote(*args):
                if args:
                    log.append((method, args[0].id))
                return remote(*args)

        return _Method


def _task(id_: str):
    from beamsearch.records.config import SearchConfig
    from beamsearch.records.schema import Kernel, RunSpec
    from beamsearch.records.state import BeamEntry, Task

    entry = BeamEntry(id="input", kernel=Kernel(source="x = 1", origin="input"), ranked_ms=1.0, round=0)
    spec = RunSpec(problem_path="/p/problem.py", shapes="full", device="cpu")
    return Task(id=id_, round=1, direction=0, parent=entry, spec=spec, config=SearchConfig(problem="p"))


def _profile_job(id_: str):
    from beamsearch.records.state import ProfileJob

    task = _task(id_)
    return ProfileJob(id=id_, round=1, entry=task.parent.model_copy(update={"id": f"k-{id_}"}), spec=task.spec)


def _done(results) -> list[tuple[str, str]]:
    """Each result's job id and how it ended: a task's reason, a profile job's profile's reason."""
    from beamsearch.records.state import ProfileResult

    return sorted((r.job_id, r.profile.reason) if isinstance(r, ProfileResult) else (r.task_id, r.reason)
                  for r in results)  # fmt: skip


def test_spare_work_is_handed_out_only_once_every_task_is_out(local_ray) -> None:
    from beamsearch.pool import Worker

    handed: list[tuple[str, str]] = []
    workers = [Worker(f"w{i}", _Recorded(_StandIn.remote(f"w{i}"), handed)) for i in range(2)]
    pool = WorkerPool(workers=workers, gpu_share=0.0, on_gpu=False, make=lambda name: None)
    spare, asked = [_profile_job("p0"), _profile_job("p1")], []

    def spare_work():
        asked.append(len(handed))
        return spare.pop(0) if spare else None

    results = list(pool.run([_task("t0"), _task("t1"), _task("t2")], 60, spare_work=spare_work))
    assert _done(results) == [("p0", "profile"), ("p1", "profile"), ("t0", "run"), ("t1", "run"), ("t2", "run")]
    assert [m for m, _ in handed] == ["run"] * 3 + ["profile"] * 2
    assert min(asked) == 3  # first asked once the three tasks were out
    assert asked[-1] == 5  # and asked again after the last job, to learn there is no more


def test_each_task_is_made_as_it_is_handed_out_from_the_results_so_far(local_ray) -> None:
    from beamsearch.pool import Worker

    pool = WorkerPool(workers=[Worker("w0", _StandIn.remote("w0"))], gpu_share=0.0, on_gpu=False, make=lambda name: None)
    results, made = [], []

    def hand_out(task):
        made.append((task.id, len(results)))
        return task.model_copy(update={"screen_above_ms": float(len(results))})

    for result in pool.run([_task("t0"), _task("t1"), _task("t2")], 60, hand_out=hand_out):
        results.append(result)
    assert made == [("t0", 0), ("t1", 1), ("t2", 2)]
    assert [(r.task_id, r.lesson) for r in results] == [("t0", "0.0"), ("t1", "1.0"), ("t2", "2.0")]
    pool.shutdown()


def test_a_spare_job_whose_worker_dies_is_retried_as_the_same_kind_of_job(local_ray, tmp_path) -> None:
    from beamsearch.pool import Worker

    handle = _StandIn.remote("w0", die_in="profile", marker=str(tmp_path / "died"))
    pool = WorkerPool(workers=[Worker("w0", handle)], gpu_share=0.0, on_gpu=False, make=lambda name: None)
    spare = [_profile_job("p0")]
    results = list(pool.run([], 60, spare_work=lambda: spare.pop(0) if spare else None))
    assert _done(results) == [("p0", "profile")] and results[0].kernel_id == "k-p0"
    assert (tmp_path / "died").exists()
    pool.shutdown()


def test_a_set_up_call_beside_goes_to_another_gpu_or_waits_for_its_answer(local_ray) -> None:
    """``call_beside``: on one GPU (or the CPU) the call is made when its answer is asked for, on the first
    worker, since a compile's autotuning beside a timing would disturb both; with the last worker on another
    GPU it is made at once, there."""
    pool = WorkerPool.start(2, 0)
    try:
        first, last = pool.workers[0].where, pool.workers[1].where
        assert pool.call_beside("where")() == first
        pool.workers[1].where = last.replace(" node ", " node-on-another-gpu ")  # as a worker of GPU 1 says
        assert pool.call_beside("where")() == last
    finally:
        pool.shutdown()


def test_call_each_starts_no_call_after_its_time_and_says_which(local_ray) -> None:
    from beamsearch.pool import NotStarted

    pool = WorkerPool.start(1, 0)
    try:
        answers = pool.call_each("versions", [("cpu",)] * 3, timeout_s=120, start_by_s=0.0)
        assert "torch" in answers[0]  # the first always starts
        assert [type(a) for a in answers[1:]] == [NotStarted, NotStarted]
        assert all("torch" in a for a in pool.call_each("versions", [("cpu",)] * 3, timeout_s=120))
    finally:
        pool.shutdown()

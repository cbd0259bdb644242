"""The worker pool against a real local Ray: a worker that is restarting (after a timed-out task) is
waited for, not taken for dead; one gone for good is replaced; a set-up call made meanwhile still gets
its answer."""

from __future__ import annotations

import logging
import tempfile

import pytest
import ray

from beamsearch.pool import WorkerPool


@pytest.fixture
def local_ray(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    with tempfile.TemporaryDirectory(prefix="bsray-", dir="/tmp") as tmp:
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


@ray.remote(num_cpus=0)
class _TimedWorker:
    """A stand-in worker: each job sleeps a little and says when it started, on which worker."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _answer(self, task, kind: str):
        import time

        from beamsearch.state import TaskResult

        started = time.monotonic()
        time.sleep(0.3)
        return TaskResult(task_id=task.id, parent_id=task.parent.id, round=1, direction=0, status="ok",
                          reason=f"{kind} {started}", worker=self.name)  # fmt: skip

    def run(self, task):
        return self._answer(task, "run")

    def profile(self, task):
        return self._answer(task, "profile")


def test_spare_work_goes_to_idle_workers_once_every_task_is_out(local_ray) -> None:
    from beamsearch.config import SearchConfig
    from beamsearch.pool import Worker
    from beamsearch.schema import Kernel, RunSpec
    from beamsearch.state import BeamEntry, Task

    entry = BeamEntry(id="input", kernel=Kernel(source="x = 1", origin="input"), median_ms=1.0, round=0)
    spec, config = RunSpec(problem_path="/p/problem.py", shapes="full", device="cpu"), SearchConfig(problem="p")

    def task(id_: str) -> Task:
        return Task(id=id_, round=1, direction=0, parent=entry, spec=spec, config=config)

    workers = [Worker(f"w{i}", _TimedWorker.remote(f"w{i}")) for i in range(2)]
    pool = WorkerPool(workers=workers, gpu_share=0.0, on_gpu=False, make=lambda name: None)
    spare = [task("p0"), task("p1")]
    results = list(pool.run([task("t0"), task("t1"), task("t2")], 60, spare_work=lambda: (spare.pop(0), "profile") if spare else None))
    started = {r.task_id: (r.reason.split()[0], float(r.reason.split()[1]), r.worker) for r in results}
    assert sorted(started) == ["p0", "p1", "t0", "t1", "t2"]
    assert {kind for kind, _, _ in started.values()} == {"run", "profile"} and started["p0"][0] == "profile"
    assert min(started[p][1] for p in ("p0", "p1")) >= max(started[t][1] for t in ("t0", "t1", "t2"))
    pool.shutdown()


def test_spare_work_prefers_an_idle_worker_that_ran_that_kind_of_job() -> None:
    from collections import deque

    from beamsearch.pool import Worker

    pool = WorkerPool(workers=[], gpu_share=0.0, on_gpu=False, make=lambda name: None, ran={"profile": {"w2"}})
    idle = deque(Worker(f"w{i}", handle=None) for i in range(4))
    assert pool._take_idle(idle, "profile").name == "w2"  # its ncu process is started
    assert pool._take_idle(idle, "run").name == "w0"  # none ran a task yet: the first idle one
    assert [w.name for w in idle] == ["w1", "w3"] and pool.ran == {"profile": {"w2"}, "run": {"w0"}}

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

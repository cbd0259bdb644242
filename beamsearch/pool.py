"""A pool of search workers on Ray: tasks go to idle workers and come back as they finish.

No round-wide barrier: the driver collects each result as soon as it is ready, and a task not back
within its timeout is recorded as failed and its worker restarted, so one hung kernel cannot stall a
round. A worker that dies mid-task (a crashed process, a lost node) is restarted by Ray and the task is
retried once on some worker; a second death records the task as failed.
"""

from __future__ import annotations

import itertools
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError, RayTaskError

from beamsearch.records.schema import Profile
from beamsearch.records.state import ProfileJob, ProfileResult, Task, TaskResult
from workers.actor.ray_worker import RemoteSearchWorker

log = logging.getLogger(__name__)

MAX_RESTARTS = 4
PROFILE_METHOD = "profile"  # the worker's method for a ProfileJob

Job = Task | ProfileJob
JobResult = TaskResult | ProfileResult


class NotStarted(Exception):
    """A call of ``call_each`` that never started: its batch's time to start calls had passed. It has no
    message of its own: the caller, who knows what the call was for, says what was left and what to do."""


@dataclass
class Worker:
    name: str
    handle: ray.actor.ActorHandle
    where: str = ""


@dataclass
class InFlight:
    job: Job
    worker: Worker
    started: float
    attempt: int
    method: str = "run"


@dataclass
class WorkerPool:
    workers: list[Worker]
    gpu_share: float
    on_gpu: bool
    make: Callable[[str], ray.actor.ActorHandle] = field(repr=False)

    @classmethod
    def start(cls, count: int, gpus: int) -> WorkerPool:
        """``count`` actors; on GPUs each gets ``gpus / count`` of one (a whole GPU when count <= gpus)."""
        on_gpu = gpus > 0
        share = min(1.0, gpus / count) if on_gpu else 0.0
        if on_gpu and share < 1.0:
            # Fractions must tile a GPU exactly, or Ray leaves one worker unplaced.
            per_gpu = -(-count // gpus)
            share = 1.0 / per_gpu

        def make(name: str) -> ray.actor.ActorHandle:
            # num_cpus=0: a worker mostly waits on children and the network; Ray would otherwise reserve a
            # CPU per actor and leave workers unplaced on small machines. SPREAD places them across nodes.
            options = dict(num_cpus=0, max_restarts=MAX_RESTARTS, max_task_retries=0, scheduling_strategy="SPREAD",
                           name=None)  # fmt: skip
            if on_gpu:
                options["num_gpus"] = share
            return RemoteSearchWorker.options(**options).remote(name, on_gpu)

        workers = [Worker(f"w{i}", make(f"w{i}")) for i in range(count)]
        for w in workers:
            w.where = ray.get(w.handle.where.remote(), timeout=600)
        return cls(workers=spread_over_gpus(workers), gpu_share=share, on_gpu=on_gpu, make=make)

    def start_profiling(self) -> None:
        """Every worker starts ncu's process ahead: a profile job may go to any idle worker, and one
        started cold waits for ncu, Python and torch to start (docs/scaling.md)."""
        ray.get([w.handle.start_profiling.remote() for w in self.workers], timeout=600)

    def call(self, method: str, *args: object, timeout_s: float = 3600.0) -> object:
        """One call on the first worker, for the run's set-up steps (baselines, floor, final re-timing).
        A worker that is restarting, or gone, is waited for or replaced, and the call made once more."""
        worker = self.workers[0]
        return self._answer(worker, getattr(worker.handle, method).remote(*args), method, args, timeout_s)

    def call_beside(self, method: str, *args: object, timeout_s: float = 3600.0) -> Callable[[], object]:
        """Start one call on a worker on another GPU than the first worker's (the last: ``spread_over_gpus``)
        and return what waits for its answer: set-up work that runs beside the first worker's (the
        baselines beside the starting kernel's measurement). With one GPU (or none) the call is made when
        its answer is asked for: a compile's autotuning beside a timing would disturb both. A worker lost
        meanwhile is waited for or replaced, and the call made once more."""
        worker = self.workers[-1]
        if _place(worker) == _place(self.workers[0]):
            return lambda: self.call(method, *args, timeout_s=timeout_s)
        ref = getattr(worker.handle, method).remote(*args)
        return lambda: self._answer(worker, ref, method, args, timeout_s)

    def _answer(self, worker: Worker, ref: ray.ObjectRef, method: str, args: tuple[object, ...],
                timeout_s: float) -> object:  # fmt: skip
        """``ref``'s answer; a worker restarting, or gone, is waited for or replaced, and the call made once more."""
        try:
            return ray.get(ref, timeout=timeout_s)
        except RayActorError:  # ActorUnavailableError (restarting) included
            self._wait_until_back(worker)
            return ray.get(getattr(worker.handle, method).remote(*args), timeout=timeout_s)

    def call_each(self, method: str, calls: list[tuple[object, ...]], timeout_s: float,
                  start_by_s: float | None = None) -> list[object]:  # fmt: skip
        """``method`` once per argument tuple of ``calls``, spread over the workers (one call in flight on
        each, in the order that takes each GPU in turn), results in the order of ``calls``. Each call has
        ``timeout_s``; one that errs, or is not back by then, gives its exception instead of a result (a
        late one is left to finish on its worker: the methods this serves bound their own children).
        With ``start_by_s``, no call starts later than that after the first did: each one left gives a
        ``NotStarted``, so a slow batch costs at most about ``start_by_s`` plus one call."""
        results: list[object] = [TimeoutError(f"{method} not back within {timeout_s:.0f} s")] * len(calls)
        waiting = deque(enumerate(calls))
        idle = deque(self.workers)
        running: dict[ray.ObjectRef, tuple[int, Worker, float]] = {}
        first_started: float | None = None  # the first call always starts

        def may_start() -> bool:
            return start_by_s is None or first_started is None or time.monotonic() - first_started <= start_by_s

        while running or (waiting and idle and may_start()):
            while idle and waiting and may_start():
                index, args = waiting.popleft()
                worker = idle.popleft()
                running[getattr(worker.handle, method).remote(*args)] = (index, worker, time.monotonic())
                first_started = first_started or time.monotonic()
            ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in ready:
                index, worker, _ = running.pop(ref)
                try:
                    results[index] = ray.get(ref, timeout=60)
                except (RayActorError, RayTaskError, GetTimeoutError) as e:
                    results[index] = RuntimeError(f"{method} on {worker.name}: {_first_line(e)}")
                idle.append(worker)
            now = time.monotonic()
            for ref, (index, worker, started) in list(running.items()):
                if now - started > timeout_s:  # its worker stays busy: no new call goes to it
                    running.pop(ref)
                    log.warning("%s call %d not back after %.0f s on %s", method, index, timeout_s, worker.name)
        for index, _ in waiting:
            if may_start():  # every worker is held by a call that timed out
                results[index] = TimeoutError(f"{method}: no worker came free within {timeout_s:.0f} s")
            else:
                results[index] = NotStarted()
        return results

    def run(self, tasks: list[Task], timeout_s: float, method: str = "run",
            notify: Callable[..., None] = lambda kind, **data: None,
            spare_work: Callable[[], Job | None] | None = None,
            hand_out: Callable[[Task], Task] = lambda task: task) -> Iterator[JobResult]:  # fmt: skip
        """Yield a result for every job, as each finishes (failed ones included), in no fixed order: a
        ``TaskResult`` for a ``Task`` (run by the worker's ``method``), a ``ProfileResult`` for a ``ProfileJob``.

        ``hand_out(task)`` is the task as a worker gets it, made when it is handed out (a retry included),
        so it can carry what the results so far tell (the beam's cut-off).
        ``notify(kind, **data)`` hears of lost workers and timed-out tasks as they happen.
        ``spare_work()``: asked for a job whenever a worker is idle and every task has been handed out;
        None when it has none. Its jobs' results are yielded too. It is asked again as results come in, so
        it can hand out work those results make useful."""
        queue: deque[tuple[Job, int]] = deque((t, 0) for t in tasks)
        idle = deque(self.workers)
        running: dict[ray.ObjectRef, InFlight] = {}

        def next_job() -> tuple[Job, int] | None:
            if queue:
                job, attempt = queue.popleft()
                return (hand_out(job) if isinstance(job, Task) else job), attempt
            spare = spare_work() if spare_work else None
            return (spare, 0) if spare is not None else None

        while True:
            while idle and (next_ := next_job()) is not None:
                job, attempt = next_
                job_method = PROFILE_METHOD if isinstance(job, ProfileJob) else method
                worker = idle.popleft()
                ref = getattr(worker.handle, job_method).remote(job)
                running[ref] = InFlight(job, worker, time.monotonic(), attempt, job_method)
            if not running:  # every worker idle: nothing queued and no spare work left
                return
            ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in ready:
                flight = running.pop(ref)
                try:
                    result = ray.get(ref, timeout=60)
                except RayActorError as e:
                    log.warning("worker %s died during %s: %s", flight.worker.name, flight.job.id, e)
                    notify("worker_lost", worker=flight.worker.name, task=flight.job.id, retried=flight.attempt == 0,
                           error=_first_line(e))  # fmt: skip
                    self._wait_until_back(flight.worker)
                    if flight.attempt == 0:
                        queue.appendleft((flight.job, 1))
                    else:
                        yield failed(flight.job, f"the worker died twice running this task: {_first_line(e)}")
                    idle.append(flight.worker)
                    continue
                except (RayTaskError, GetTimeoutError) as e:  # an error in our own code, not the kernel's
                    yield failed(flight.job, f"task error on {flight.worker.name}: {_first_line(e)}")
                    idle.append(flight.worker)
                    continue
                idle.append(flight.worker)
                yield result
            now = time.monotonic()
            for ref, flight in list(running.items()):
                if now - flight.started > timeout_s:
                    running.pop(ref)
                    log.warning("task %s not back after %.0f s: restarting %s", flight.job.id, timeout_s, flight.worker.name)
                    notify("task_timeout", worker=flight.worker.name, task=flight.job.id, timeout_s=timeout_s)
                    self._stop_children(flight.worker)
                    ray.kill(flight.worker.handle, no_restart=False)
                    self._wait_until_back(flight.worker)
                    idle.append(flight.worker)
                    yield failed(flight.job, f"task timed out after {timeout_s:.0f} s; its worker was restarted")

    def _stop_children(self, worker: Worker) -> None:
        try:
            ray.get(worker.handle.stop_children.remote(), timeout=30)
        except (RayActorError, RayTaskError, GetTimeoutError) as e:
            log.warning("could not stop %s's child processes: %s", worker.name, _first_line(e))

    def _wait_until_back(self, worker: Worker, timeout_s: float = 300.0) -> None:
        """Wait for Ray to restart ``worker``; one that is gone for good is replaced by a new actor."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                worker.where = ray.get(worker.handle.where.remote(), timeout=max(1.0, deadline - time.monotonic()))
                return
            except ActorUnavailableError:  # restarting: not yet back
                if time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            except (RayActorError, GetTimeoutError):
                break
        log.warning("worker %s is gone for good: starting a new one", worker.name)
        ray.kill(worker.handle, no_restart=True)
        worker.handle = self.make(worker.name)

    def shutdown(self, close_timeout_s: float = 30.0) -> None:
        """Each worker ends its children and removes its folders, then is killed (one that does not
        answer in time is killed anyway)."""
        closing = [w.handle.close.remote() for w in self.workers]
        ray.wait(closing, num_returns=len(closing), timeout=close_timeout_s)
        for w in self.workers:
            ray.kill(w.handle, no_restart=True)


def spread_over_gpus(workers: list[Worker]) -> list[Worker]:
    """The workers in an order that takes each GPU (or CPU node) in turn: a batch of fewer tasks than
    workers, handed out in this order, is spread over the GPUs instead of piling onto the first."""
    by_place: dict[str, list[Worker]] = {}
    for w in workers:
        by_place.setdefault(_place(w), []).append(w)
    return [w for turn in itertools.zip_longest(*by_place.values()) for w in turn if w is not None]


def _place(worker: Worker) -> str:
    """The GPU (or CPU node) a worker runs on: where it said it is, less its process id."""
    return re.sub(r" pid \d+", "", worker.where)


def failed(job: Job, reason: str) -> JobResult:
    """The record of a job that came to nothing: a failed task, or a profile job's unavailable profile."""
    if isinstance(job, ProfileJob):
        return ProfileResult(job_id=job.id, kernel_id=job.entry.id, profile=Profile(available=False, reason=reason),
                             finished_at=time.time())  # fmt: skip
    return TaskResult(task_id=job.id, parent_id=job.parent.id, round=job.round, direction=job.direction,
                      status="failed", reason=reason, parent_ms=job.parent.ranked_ms, finished_at=time.time())  # fmt: skip


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]

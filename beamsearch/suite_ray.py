"""A suite over a Ray cluster: each search a Ray task holding ``1/per_gpu`` of a GPU, anywhere Ray places it.

The task runs the same search process as a local place (``beamsearch.suite_search.run_search``) on its
node, with the ``CUDA_VISIBLE_DEVICES`` Ray gives the task and without ``RAY_ADDRESS``, so the search starts
a private Ray of its own on that node instead of joining the cluster. Ray queues the tasks and starts one
as soon as a GPU share frees: no barrier. The run folders should be on a file system every node sees; the
task also hands its summary back, and the driver writes it where the node's copy is not visible, so the
table is whole either way (a search's trace then stays on its node). The driver needs no GPU.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from beamsearch.suite_schedule import JOIN_S, OnEnded, Place
from beamsearch.suite_search import GRACE_S, Ended, SearchJob, run_search
from beamsearch.suite_table import SUMMARY_FILE


@dataclass(frozen=True)
class TaskEnded:
    """What a search task hands back: how its process ended, where it ran, its summary.json's text."""

    ended: Ended
    place: str
    summary: str | None


def search_task(argv: Sequence[str], out: str, log_stem: str, timeout_s: float | None,
                grace_s: float = GRACE_S) -> TaskEnded:  # fmt: skip
    """Body of the Ray task: the search process on this node, under Ray's GPU assignment."""
    import ray

    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # its own private Ray, not the cluster
    ended = run_search(argv, env, Path(log_stem), timeout_s, grace_s=grace_s)
    try:
        summary = (Path(out) / SUMMARY_FILE).read_text()
    except OSError:
        summary = None
    gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return TaskEnded(
        ended=ended, place=f"{ray.util.get_node_ip_address()} gpu {gpus or 'none'}", summary=summary
    )


def run_on_ray(jobs: Sequence[SearchJob], argv_of: Callable[[SearchJob], list[str]],
               log_stem_of: Callable[[SearchJob], Path], per_gpu: int, timeout_s: float | None,
               on_ended: OnEnded, stop: threading.Event | None = None, grace_s: float = GRACE_S,
               num_gpus: float | None = None) -> list[SearchJob]:  # fmt: skip
    """Submit every job as a task to the Ray this process has joined; ``on_ended`` as each comes back.

    ``num_gpus`` (default ``1 / per_gpu``) is each task's GPU share. Ctrl-C (or ``stop``) cancels the
    tasks: a running search is stopped as a timeout stops it, a queued one never starts. Returns the
    jobs that did not end. Ray is not started or shut down here.
    """
    import ray

    stop = stop or threading.Event()
    share = num_gpus if num_gpus is not None else 1.0 / max(1, per_gpu)
    task = ray.remote(num_gpus=share, num_cpus=0, max_retries=0)(search_task)
    refs = {
        task.remote(argv_of(job), str(job.out), str(log_stem_of(job)), timeout_s, grace_s): job
        for job in jobs
    }
    pending = list(refs)
    try:
        while pending and not stop.is_set():
            done, pending = ray.wait(pending, num_returns=1, timeout=JOIN_S)
            for ref in done:
                job = refs[ref]
                back = _result(ref)
                _keep_summary(job, back.summary)
                on_ended(job, Place(label=back.place), back.ended)
    except KeyboardInterrupt:
        stop.set()
        raise
    finally:
        if stop.is_set():
            for ref in pending:
                ray.cancel(ref)  # a KeyboardInterrupt in the task: run_search stops its search
            if pending:
                ray.wait(pending, num_returns=len(pending), timeout=grace_s + 10)
    return [refs[ref] for ref in pending]


def _result(ref: object) -> TaskEnded:
    """The task's result; a task Ray lost (its node died, its worker crashed) as a failed search."""
    import time

    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayError as e:
        now = time.time()
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return TaskEnded(ended=Ended(exit_code=None, started=now, ended=now, last_error=f"the Ray task failed: {first}"),
                         place="ray", summary=None)  # fmt: skip


def _keep_summary(job: SearchJob, text: str | None) -> None:
    """Write the summary the task handed back where the driver cannot see the node's own (no shared folder)."""
    path = job.out / SUMMARY_FILE
    if text is None or path.is_file():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)

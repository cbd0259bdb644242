"""The Ray actor: a thin shell that runs workers.task functions on the GPU (or GPU share) Ray gave it.

Ray sets CUDA_VISIBLE_DEVICES for an actor with ``num_gpus``; the children it starts inherit it, so
"cuda" in a child is this actor's GPU. The actor itself never initialises CUDA.
"""

from __future__ import annotations

import os
import socket

import ray

from beamsearch.schema import RunSpec
from beamsearch.state import Baseline, BeamEntry, FinalTiming, Task, TaskResult
from workers import task as task_fns


class SearchWorker:
    def __init__(self, name: str) -> None:
        self.ctx = task_fns.WorkerContext(name)

    def where(self) -> str:
        gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        return f"{socket.gethostname()} pid {os.getpid()}" + (f" GPU {gpus}" if gpus else "")

    def run(self, task: Task) -> TaskResult:
        return task_fns.run_task(task, self.ctx)

    def measure_input(self, task: Task) -> TaskResult:
        return task_fns.measure_input(task, self.ctx)

    def baselines(self, spec: RunSpec, targets: list[str]) -> list[Baseline]:
        return task_fns.time_baselines(spec, targets)

    def floor(self, spec: RunSpec) -> tuple:
        return task_fns.problem_floor_or_none(spec)

    def versions(self) -> dict[str, str]:
        return task_fns.versions()

    def retime(self, spec: RunSpec, entries: list[BeamEntry]) -> list[FinalTiming]:
        return task_fns.retime(spec, entries, self.ctx)

    def crash(self) -> None:
        """For fault-injection tests: die as a segfaulting process would."""
        os._exit(1)


RemoteSearchWorker = ray.remote(SearchWorker)

"""The Ray actor: a thin shell that runs workers.actor.task functions on the GPU (or GPU share) Ray gave it.

Ray sets CUDA_VISIBLE_DEVICES for an actor with ``num_gpus``; the children it starts inherit it, so
"cuda" in a child is this actor's GPU. The actor itself never initialises CUDA.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket

import ray

from beamsearch.records.schema import DeviceFacts, RunSpec
from beamsearch.records.state import (
    Baseline,
    BeamEntry,
    FinalTiming,
    ProfileJob,
    ProfileResult,
    Task,
    TaskResult,
)
from profiling.ncu import start_ncu_spare
from workers.actor import task as task_fns
from workers.harness.child_process import descendants, start_spares, stop_all
from workers.harness.inductor_portfolio import PortfolioVariant
from workers.proposers.compile_seed import SeedResult


class SearchWorker:
    def __init__(self, name: str, on_gpu: bool = False) -> None:
        self.ctx = task_fns.WorkerContext(name)
        start_spares(["workers.harness.verify_child", "workers.harness.timing_child"], "cuda" if on_gpu else "cpu")

    def where(self) -> str:
        gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        node = ray.get_runtime_context().get_node_id()[:8]
        return f"{socket.gethostname()} node {node} pid {os.getpid()}" + (f" GPU {gpus}" if gpus else "")

    def run(self, task: Task) -> TaskResult:
        return task_fns.run_task(task, self.ctx)

    def profile(self, job: ProfileJob) -> ProfileResult:
        return task_fns.profile_beam_kernel(job, self.ctx)

    def start_profiling(self) -> None:
        """Start ncu's process now, so this worker's first profile job finds it ready."""
        start_ncu_spare("cuda")

    def measure_input(self, task: Task) -> TaskResult:
        return task_fns.measure_input(task, self.ctx)

    def baselines(self, spec: RunSpec, targets: list[str]) -> list[Baseline]:
        return task_fns.time_baselines(spec, targets)

    def device_facts(self, spec: RunSpec) -> DeviceFacts:
        return task_fns.device_facts(spec)

    def compiler_seed(self, spec: RunSpec, recording: str | None, variant: PortfolioVariant | None = None) -> SeedResult:
        return task_fns.compiler_seed(spec, recording, variant)

    def versions(self, device: str) -> dict[str, str]:
        return task_fns.versions(device)

    def retime(self, spec: RunSpec, entries: list[BeamEntry]) -> list[FinalTiming]:
        return task_fns.retime(spec, entries, self.ctx)

    def stop_children(self) -> int:
        """Kill every process this worker started (a hung verification, say); returns how many groups.

        Runs beside a blocked ``run`` (the actor has two threads); the pool calls it before restarting a
        worker whose task timed out, so no child outlives the task."""
        groups = {os.getpgid(pid) for pid in descendants(os.getpid())} - {os.getpgid(0)}
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        self.close()  # the worker is restarted next: its folders go with it
        return len(groups)

    def close(self) -> None:
        """End every child and remove every folder this worker made; the pool calls it before killing
        the worker, since Ray ends an actor's children with SIGKILL and nothing removes their folders then."""
        self.ctx.close()
        stop_all()


# Two threads: ``run`` may block on a hung child while ``stop_children`` ends it.
RemoteSearchWorker = ray.remote(max_concurrency=2)(SearchWorker)

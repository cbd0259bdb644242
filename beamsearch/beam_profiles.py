"""ncu profiles of the beam's kernels: only they are profiled, since only they become parents.

A round's new beam kernels are profiled at the start of the next round, while the tasks of the
parents that already have a profile run; a parent's tasks are handed out once its profile is back.
The jobs go one at a time: on 4 x H200, three ncu profiles at once on three GPUs took 10.9 s each,
while on one GPU the three, one after another, were all done in 7.4 s; and a job waiting on another's
ncu would only hold a worker (docs/gpu-runs/2026-11-22-h200x4-scaling-4). The last round's new beam kernels are profiled
after its selection, the same way, so the trace ends complete.
"""

from __future__ import annotations

from beamsearch.schema import Profile
from beamsearch.state import BeamEntry, BeamState, Task, TaskResult

NOT_PROFILED = "not profiled: only the kernels the beam keeps are profiled, since they are the next round's parents"


def profiling_on(state: BeamState) -> bool:
    return state.config.profile and state.spec.device.startswith("cuda")


class ProfileQueue:
    """One round's profile jobs, in beam order, and the tasks waiting on each."""

    def __init__(self, state: BeamState, round_: int, entries: list[BeamEntry], tasks: list[Task]) -> None:
        needed = [e for e in entries if e.profile is None] if profiling_on(state) else []
        self.todo = [Task(id=f"r{round_}-profile-{e.id}", kind="profile", round=round_, direction=0, parent=e,
                          spec=state.spec, config=state.config) for e in needed]  # fmt: skip
        self.jobs = {job.id: job for job in self.todo}
        self.waiting = {e.id: [t for t in tasks if t.parent.id == e.id] for e in needed}
        self.results: list[TaskResult] = []

    def start(self, tasks: list[Task]) -> list[Task]:
        """What to hand out now: the first profile job, then the tasks whose parent has a profile."""
        return self._next_job() + [t for t in tasks if t.parent.id not in self.waiting]

    def is_job(self, result: TaskResult) -> bool:
        return result.task_id in self.jobs

    def finish(self, result: TaskResult) -> tuple[BeamEntry, list[Task]]:
        """A profile job came back (failed ones too: the reason is kept, and no task profiles the kernel
        again): its kernel with the profile, and what to hand out next: the next job, then its tasks."""
        self.results.append(result)
        job = self.jobs[result.task_id]
        profiled = job.parent.model_copy(update=measured(result))
        tasks = [t.model_copy(update={"parent": profiled}) for t in self.waiting.pop(job.parent.id)]
        return profiled, self._next_job() + tasks

    def _next_job(self) -> list[Task]:
        return [self.todo.pop(0)] if self.todo else []


def measured(result: TaskResult) -> dict:
    """A profile job's result as the fields of a beam entry or a candidate."""
    return {"profile": result.profile or Profile(available=False, reason=result.reason), "roofline": result.roofline}

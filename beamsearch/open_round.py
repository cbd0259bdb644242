"""A round in flight: the jobs it still has to hand out, the ones out on workers, its results so far.

Rounds overlap (``Driver.run_rounds``): once a round has handed out every task, idle workers take the
next round's, so none waits for a round's slowest candidate. A round is done, and can be closed (its
beam selected, its record written, the resume point saved), when nothing of it is left to hand out
and nothing is out: its tasks, the kernels its replies handed back, and the profiles of the kernels
its beam keeps. Rounds close in order. Pure bookkeeping: no Ray, no files.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from beamsearch.beam_profiles import BeamProfiles
from beamsearch.handback import Handback
from beamsearch.records.state import ProfileJob, ProfileResult, Task, TaskResult


@dataclass
class OpenRound:
    number: int
    tasks: dict[str, Task]  # as planned, by id
    todo: deque[Task]  # planned tasks not handed out yet (a resumed round: those not finished before)
    handback: Handback
    profiles: BeamProfiles
    results: list[TaskResult]  # the list BeamProfiles reads: appended to, never replaced
    out: set[str] = field(default_factory=set)  # ids of its jobs on workers now
    last_candidate_at: float = field(default_factory=time.time)

    def next_job(self, hand_out: Callable[[Task], Task]) -> Task | ProfileJob | None:
        """Its planned tasks first, then handed-back kernels, then the profiles of its beam's kernels."""
        task = self.todo.popleft() if self.todo else self.handback.next_task()
        job: Task | ProfileJob | None = hand_out(task) if task is not None else self.profiles.next_job()
        if job is not None:
            self.out.add(job.id)
        return job

    def handed_out(self) -> bool:
        """Every task of the round is out or back (profiles may be left): the next round may start."""
        return not self.todo and not self.handback.queue

    def done(self) -> bool:
        return self.handed_out() and not self.out and not self.profiles.wanted()

    def owns(self, result: TaskResult | ProfileResult) -> bool:
        return _job_id(result) in self.out

    def back(self, result: TaskResult | ProfileResult) -> None:
        self.out.discard(_job_id(result))


def _job_id(result: TaskResult | ProfileResult) -> str:
    return result.job_id if isinstance(result, ProfileResult) else result.task_id

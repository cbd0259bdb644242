"""Kernels a model's reply held besides its task's own: each becomes a candidate of its own.

One task is one candidate: a task whose reply held several new kernels tries the first and hands the
others back (``TaskResult.handed_back``). Each becomes a task carrying its kernel, as the offline
optimiser's do, with the parent and direction of the task whose reply held it and the id
``<that task>-k<n>``, so its trace says which reply it came from. A round takes handed-back kernels
while it has places: as many again as it planned (its size, cut to the candidate budget), so a round
at most doubles. They run on workers the round's planned tasks leave idle, before the beam's profile
jobs. Those without a place wait in the BeamState (``pending``) and open the next round, ahead of the
model's new tasks: they are paid for already. A kernel whose code the run has seen, or another
handed-back kernel has, is not tried, and the task's ``reply_notes`` say so, as they say where each
other kernel went.

A task cut off by its timeout hands nothing back, but the run's LLM service kept its exchanges
(``Driver._with_model_log``): the kernels of its rewrite's reply besides the one it was trying (which may
be what hung) are handed back from there (``recover``).

Resume: a round's finished candidates are on disk, each with the kernels it handed back, so a resumed
round derives the same tasks and reuses those that finished; kernels waiting for the next round are in
state.json. Pure: no Ray, no files.
"""

from __future__ import annotations

from collections import deque

from beamsearch.beam import HISTORY_IN_TASK, code_hash
from beamsearch.records.schema import Kernel
from beamsearch.records.state import BeamState, PendingKernel, Task, TaskResult
from prompts.parsers import ReplyParseError, extract_kernels
from workers.proposers.llm import MAX_KERNELS_PER_REPLY


def task_of(pending: PendingKernel, state: BeamState, round_: int) -> Task:
    """The task that tries a handed-back kernel in round ``round_``."""
    return Task(id=pending.id, round=round_, direction=pending.direction, parent=pending.parent, spec=state.spec,
                config=state.config, floor=state.floor, history=state.history[-HISTORY_IN_TASK:],
                kernel=pending.kernel, from_task=pending.from_task)  # fmt: skip


def proposed_kernel(result: TaskResult) -> Kernel | None:
    """The kernel a task started from: its first verification's, before any refinement."""
    return result.tries[0].kernel if result.tries else result.kernel


def _same_kernel(a: Kernel | None, b: Kernel) -> bool:
    return a is not None and a.hash == b.hash


class Handback:
    """One round's handed-back kernels: ``take`` each task's, ``next_task`` to run one, ``pending`` for the
    next round."""

    def __init__(self, state: BeamState, round_: int, tasks: dict[str, Task], places: int,
                 waiting: list[PendingKernel], finished: dict[str, TaskResult]) -> None:  # fmt: skip
        """``tasks``: the round's planned tasks by id (their parents are the handed-back kernels'); ``places``:
        how many handed-back kernels the round may still try; ``waiting``: the run's kernels that had no place
        yet, a list this round appends to and later rounds take from (rounds overlap); ``finished``: the
        round's candidates on disk (a resumed round), by id."""
        self.state, self.round, self.tasks, self.finished = state, round_, tasks, finished
        self.places = places
        self.queue: deque[Task] = deque()
        self.pending: list[PendingKernel] = waiting
        self.codes: dict[str, str] = {code_hash(p.kernel.source): p.id for p in waiting}
        self.taken = 0  # handed-back kernels this round tries (queued, or finished before a resume)

    def take(self, result: TaskResult, seen: dict[str, str]) -> tuple[list[str], list[TaskResult]]:
        """Queue or set aside ``result``'s handed-back kernels, after ``result`` itself is marked in ``seen``
        (normalised-code hash -> candidate id). Returns a note on each (where it went, or why it is not
        tried) and the results of those a resumed round finished before."""
        notes: list[str] = []
        reused: list[TaskResult] = []
        origin = self.tasks.get(result.task_id)
        waiting = {code_hash(p.kernel.source): p.id for p in self.pending}  # other rounds' too
        for n, kernel in enumerate(result.handed_back if origin else [], 1):
            pending = PendingKernel(id=f"{result.task_id}-k{n}", kernel=kernel, parent=origin.parent,
                                    direction=origin.direction, from_task=result.task_id)  # fmt: skip
            code = code_hash(kernel.source)
            before = self.finished.get(pending.id)
            if any(p.id == pending.id for p in self.pending):  # resumed: saved as waiting while this round ran
                notes.append(f"{pending.id}: no place left in round {self.round}; waits for the next round")
            elif before is not None and _same_kernel(proposed_kernel(before), kernel):
                self.codes[code], self.places, self.taken = pending.id, self.places - 1, self.taken + 1
                reused.append(before)
                notes.append(f"{pending.id}: tried in round {self.round}")
            elif code in seen:
                notes.append(f"{pending.id} not tried: same code as {seen[code]}")
            elif (same := self.codes.get(code) or waiting.get(code)) is not None:
                notes.append(f"{pending.id} not tried: same code as {same}, handed back too")
            elif self.places > 0:
                self.codes[code], self.places, self.taken = pending.id, self.places - 1, self.taken + 1
                self.queue.append(task_of(pending, self.state, self.round))
                notes.append(f"{pending.id}: tried in round {self.round}")
            else:
                self.codes[code] = pending.id
                self.pending.append(pending)
                notes.append(f"{pending.id}: no place left in round {self.round}; waits for the next round")
        return notes, reused

    def recover(self, result: TaskResult, seen: dict[str, str]) -> TaskResult:
        """A task that failed (cut off by its timeout) with a rewrite's reply among its exchanges: the reply's
        kernels besides the first the run has not seen (the one the task was trying) as handed back, up to
        ``MAX_KERNELS_PER_REPLY`` with it, and a note saying so. Any other result as it is."""
        origin = self.tasks.get(result.task_id)
        used = [e for e in result.exchanges if e.purpose == "optimize" and e.call.status == "ok" and not e.parse_error]
        if result.status != "failed" or result.handed_back or origin is None or not used:
            return result
        try:
            found = extract_kernels(used[-1].call.text).kernels
        except ReplyParseError:
            return result
        codes = set(seen)
        fresh = []
        for block in found:
            if (code := code_hash(block.source)) not in codes:
                codes.add(code)
                fresh.append(block)
        rest = fresh[1:MAX_KERNELS_PER_REPLY]
        if not rest:
            return result
        kernels = [Kernel(source=b.source, origin="llm", parent_hash=origin.parent.kernel.hash,
                          note=f"a kernel of {result.task_id}'s reply (block at line {b.line}), handed back after it failed")
                   for b in rest]  # fmt: skip
        why = (f"the task failed while trying the reply's first new kernel (block at line {fresh[0].line}); its "
               f"{len(rest)} other new kernel(s) are handed back")  # fmt: skip
        return result.model_copy(update={"handed_back": kernels, "reply_notes": result.reply_notes + [why]})

    def next_task(self) -> Task | None:
        return self.queue.popleft() if self.queue else None

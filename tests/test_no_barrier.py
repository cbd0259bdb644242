"""Rounds overlap: no worker waits for a round's slowest candidate, and a run killed while two rounds are
out resumes without trying anything twice or losing anything finished (issue 47 §1).

The driver, its offline optimiser, the searchers and the trace are the real ones; the pool is a stand-in
that runs its workers in virtual time: each asks the driver for a job whenever it is idle (the real
pool's spare work), a job takes the time a script gives it, and the first job to finish is the next
result. tests/test_pool.py runs the real pool's spare work on Ray.
"""

from __future__ import annotations

import hashlib

import pytest

from beamsearch.beam import code_hash
from beamsearch.display import Display
from beamsearch.driver import Driver
from beamsearch.records.config import SearchConfig
from beamsearch.records.schema import Kernel, RunSpec
from beamsearch.records.state import BeamEntry, BeamState, ProfileJob, Task, TaskResult
from beamsearch.trace import TraceWriter
from tests.conftest import DATA
from tests.test_task import _timing

SOURCE = (DATA / "search" / "input_kernel.py").read_text()
SLOW_S, FAST_S = 6.0, 1.0


def _ms(task: Task) -> float:
    """A time for the task's kernel, the same in every session."""
    digest = hashlib.sha256(task.kernel.source.encode()).digest()
    return 1.0 + digest[0] / 64


class VirtualPool:
    """``workers`` workers in virtual time. The first task handed out in each round takes ``SLOW_S``, the
    others ``FAST_S``. ``idle_s``: worker-seconds no job was running on a worker while the driver had one
    to hand out (asked, it gave none, and later gave one). ``stop_after``: raise KeyboardInterrupt before
    that many results, as Ctrl-C would."""

    def __init__(self, workers: int, stop_after: int | None = None) -> None:
        self.workers = [f"w{i}" for i in range(workers)]
        self.stop_after = stop_after
        self.now, self.idle_s = 0.0, 0.0
        self.handed: list[Task] = []
        self.results = 0
        self.slow_rounds: set[int] = set()

    def run(self, tasks, timeout_s, method="run", notify=None, spare_work=None, hand_out=lambda task: task):
        assert tasks == [] and spare_work is not None  # the driver hands out every job as spare work
        running: list[tuple[float, int, object]] = []
        idle_since: dict[int, float] = {}
        free = list(range(len(self.workers)))
        while True:
            while free:
                job = spare_work()
                if job is None:
                    break
                worker = free.pop(0)
                self.idle_s += self.now - idle_since.pop(worker, self.now)
                running.append((self.now + self._duration(job), worker, job))
            for worker in free:
                idle_since.setdefault(worker, self.now)
            if not running:
                return
            if self.stop_after is not None and self.results >= self.stop_after:
                raise KeyboardInterrupt
            running.sort(key=lambda r: r[0])
            finished, worker, job = running.pop(0)
            self.now = finished
            free.append(worker)
            self.results += 1
            yield self._answer(job)

    def _duration(self, job) -> float:
        if isinstance(job, ProfileJob):
            return FAST_S
        self.handed.append(job)
        if job.round not in self.slow_rounds:
            self.slow_rounds.add(job.round)
            return SLOW_S
        return FAST_S

    def _answer(self, job) -> TaskResult:
        ms = _ms(job)
        return TaskResult(task_id=job.id, parent_id=job.parent.id, round=job.round, direction=job.direction,
                          status="ok", reason="", kernel=job.kernel, timing=_timing("ok", ms), finished_at=self.now)  # fmt: skip


def _state(rounds: int, per_round: int) -> BeamState:
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device="cpu")
    entry = BeamEntry(id="input", kernel=Kernel(source=SOURCE, origin="input"), ranked_ms=5.0, round=0)
    config = SearchConfig(problem="p", rounds=rounds, candidates_per_round=per_round, budget_minutes=None)
    return BeamState(config=config, problem="p", spec=spec, beam=[entry], input=entry,
                     seen={code_hash(SOURCE): "input"}, setup_s=0.0)  # fmt: skip


def _driver(out, pool: VirtualPool, state: BeamState) -> Driver:
    return Driver(state, pool, TraceWriter(out), Display(True, lambda event: None), "p", {})


def test_no_worker_waits_for_a_rounds_slowest_candidate(tmp_path) -> None:
    """Four workers, rounds of eight candidates, one of each round six times slower than the rest: with a
    barrier each round would last the slow one's 6 s while three workers idle (24 s for four rounds)."""
    pool = VirtualPool(workers=4)
    driver = _driver(tmp_path, pool, _state(rounds=4, per_round=8))
    driver.run_rounds()

    assert [r.round for r in driver.state.rounds] == [1, 2, 3, 4]
    assert all(r.tasks == 8 for r in driver.state.rounds)
    work = 4 * (SLOW_S + 7 * FAST_S)
    assert pool.idle_s == 0.0  # no worker idled while the driver had a candidate for it
    assert pool.now < work / 4 + SLOW_S  # the work spread over the workers, and at most one slow tail
    # the second round's first tasks went out while the first round's slow candidate still ran
    first_slow = pool.handed[0]
    assert first_slow.round == 1 and any(t.round == 2 for t in pool.handed[: 4 + 8])
    # what a round records is its share of the run's time: the rounds' walls add up to the search's
    assert sum(r.wall_s for r in driver.state.rounds) == pytest.approx(driver._search_s(), abs=1.0)


def test_a_run_killed_with_two_rounds_out_resumes_trying_nothing_twice(tmp_path) -> None:
    """Killed after 11 results (round 1 waits on its slow candidate; round 2's tasks are back or out), the
    run resumes from state.json: the finished candidates are reused, the plans written before are run as
    written, and every kernel is tried once."""
    first = VirtualPool(workers=4, stop_after=11)
    start = _state(rounds=3, per_round=8)
    TraceWriter(tmp_path).save_state(start)  # round 0's resume point, as measure_start leaves it
    driver = _driver(tmp_path, first, start)
    with pytest.raises(KeyboardInterrupt):
        driver.run_rounds()
    trace = TraceWriter(tmp_path)
    finished = {r.task_id: r for n in (1, 2, 3) for r in trace.finished_candidates(n)}
    assert trace.read_plan(2) is not None and any(
        t.startswith("r2-") for t in finished
    )  # two rounds were out
    saved = trace.load_state()
    assert saved.round == 0  # round 1 never closed: its slow candidate was still out

    second = VirtualPool(workers=4)
    resumed = _driver(tmp_path, second, saved)
    resumed.run_rounds()

    again = [t.id for t in second.handed if t.id in finished]
    assert again == []  # nothing finished is tried again
    cut_off = {
        t.id: t.kernel.hash for t in first.handed if t.id not in finished
    }  # out when the run was killed
    assert cut_off and all(
        any(t.id == i and t.kernel.hash == h for t in second.handed) for i, h in cut_off.items()
    )
    tried = [t.kernel.hash for t in second.handed] + [r.kernel.hash for r in finished.values()]
    assert len(tried) == len(set(tried)) == 24  # no kernel twice, across the two sessions
    assert [r.tasks for r in resumed.state.rounds] == [8, 8, 8]
    kept = {r.task_id for n in (1, 2, 3) for r in trace.finished_candidates(n)}
    assert set(finished) <= kept and len(kept) == 24  # every finished candidate is in the trace, once
    assert len(set(resumed.state.optimiser.observed)) == len(resumed.state.optimiser.observed) == 24

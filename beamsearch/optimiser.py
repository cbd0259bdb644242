"""The offline optimiser in the round loop: the driver's searchers over the beam's knob spaces.

Like a Ray Tune searcher beside its trial runner: when a round is planned, the optimiser asks each
searcher for points, renders each point into a candidate kernel, and gives every result back to the
searcher whose point it was (a time, or the failure's text: a compile failure or a kernel out of
resources is a limit the searcher learns). There is one searcher per knob space: a beam kernel the
optimiser made is a point of its root kernel's space, so it is searched through that root's searcher,
not a second one over the same points. The first points are the root's own, its ``@triton.autotune``
configs where it has them, tensor-core tiles where it calls ``tl.dot``, then the roofline class's moves;
none of them rules a region out.

One optimiser serves a session's rounds, which overlap: the next round is planned while the last
candidates of the one before still run. A round's plan is written down (``RoundPlan``) and a resumed
round runs it (``adopt``), since the searchers it came from had learned from results in the order they
came. A point whose kernel the run has already measured is told that kernel's outcome instead of
running again, and one whose kernel a planned candidate is still measuring waits for that candidate's
result, so no kernel is ever a candidate twice; a result already learned is not learned again.

Pure: no Ray, no GPU, no files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from typing import Protocol

from beamsearch.beam import code_hash
from beamsearch.records.schema import Kernel
from beamsearch.records.state import (
    BeamEntry,
    BeamState,
    OptimiserState,
    Outcome,
    PlannedPoint,
    RoundPlan,
    SpaceSearch,
    Task,
    TaskResult,
    TimedCode,
)
from workers.proposers.knob_space import autotune_points, describe, render, space_of, tensor_core_tiles
from workers.proposers.searcher import Searcher, SearcherState, first_points

# Candidates a round hands each worker by default: no worker waits long for the round's last one.
PER_WORKER = 4
Point = dict[str, int]


class SearcherLike(Protocol):
    def suggest(self, n: int) -> list[Point]: ...
    def observe(self, point: Point, time_ms: float | None, failure: str | None = None) -> None: ...
    def same_code(self, a: Point, b: Point) -> None: ...
    def state(self) -> SearcherState: ...


MakeSearcher = Callable[..., SearcherLike]  # (space, seed, state=, first=, budget=), as Searcher


class Optimiser:
    """The searchers of one round: ``plan`` its tasks, ``observe`` each result, ``state`` to save."""

    def __init__(self, saved: OptimiserState, sizes: dict[str, int] | None, seed: int, budget: int | None,
                 make: MakeSearcher = Searcher, operand_bytes: int = 2, shared_bytes: int | None = None) -> None:  # fmt: skip
        """``sizes``: the problem's dimensions, which bound the block sizes (``space_of``); ``budget``: the
        candidates the run means to spend, given to a new searcher (exhaustive when its space fits);
        ``make``: the searcher class (with its exhaustive strategy for a sweep); ``operand_bytes`` (of the
        run's dtype) and ``shared_bytes`` (the GPU's shared memory a program may take, None on the CPU): what
        a dot kernel's tiles may use (``knob_space.over_limits``)."""
        self.sizes, self.seed, self.budget, self.make = sizes, seed, budget, make
        self.operand_bytes, self.shared_bytes = operand_bytes, shared_bytes
        self.searches: dict[str, SpaceSearch] = dict(saved.searches)
        self.outcomes: dict[str, Outcome] = dict(saved.outcomes)
        self.live: dict[str, SearcherLike] = {}
        # task id -> the (search, point) pairs its candidate answers
        self.points: dict[str, list[tuple[str, Point]]] = {}
        self.compiled: dict[str, dict[str, TimedCode]] = {k: dict(v) for k, v in saved.compiled.items()}
        self.observed: list[str] = list(saved.observed)
        self._observed = set(self.observed)
        # code hash -> the planned task measuring that kernel, until its result is learned
        self.in_flight: dict[str, str] = {}
        self.began: dict[str, SpaceSearch] = {}  # searches begun in this session, as they began

    # ------------------------------------------------------------------------------------------- planning
    def plan(self, state: BeamState, round_: int, count: int, roots: Collection[str] | None = None,
             prefix: str = "t") -> list[Task]:  # fmt: skip
        """Up to ``count`` tasks, each a new kernel at a searcher's next point, the round's share going to the
        beam's spaces in the order of their fastest kernel; a searcher with fewer points left gives its
        share to the others. Fewer than ``count`` (none) only when every space is exhausted.
        ``roots``: only the spaces of kernels of these origins (a model's kernels in a portfolio round);
        ``prefix``: the task ids' letter after the round (``r2-u0``), apart from a model's tasks."""
        for entry in [*state.beam, *([state.input] if state.input else [])]:
            self.outcomes.setdefault(code_hash(entry.kernel.source), Outcome(time_ms=entry.ranked_ms))
        parents: dict[str, BeamEntry] = {}  # search key -> the fastest beam kernel in its space
        for entry in state.beam[: state.config.beam_width]:
            if roots is not None and self._root_origin(entry) not in roots:
                continue
            key = self._search_of(entry)
            if key is not None:
                parents.setdefault(key, entry)
                self._know_root(key, entry)
        tasks: list[Task] = []
        active = list(parents)
        while len(tasks) < count and active:
            left = count - len(tasks)
            for i, key in enumerate(list(active)):
                share = left // len(active) + (i < left % len(active))
                if share and self._take(key, share, parents[key], state, round_, tasks, prefix) < share:
                    active.remove(key)
        return tasks

    def plan_of(self, round_: int, tasks: list[Task], places: int) -> RoundPlan:
        """The round's plan as written down: its tasks, the knob points each answers, and the searches of
        those points that began this session (as they began)."""
        points = {t.id: [PlannedPoint(search=k, point=p) for k, p in self.points[t.id]] for t in tasks
                  if t.id in self.points}  # fmt: skip
        keys = {p.search for answers in points.values() for p in answers}
        searches = {k: s for k, s in self.began.items() if k in keys}
        return RoundPlan(round=round_, tasks=tasks, points=points, places=places, searches=searches)

    def adopt(self, plan: RoundPlan) -> None:
        """A round planned in an earlier session, resumed: its tasks' results teach the searchers their
        points, and its kernels are not planned again while they run. A search the resume point lacks
        begins again as it began; its first points are those planned, so they join their tasks."""
        for key, search in plan.searches.items():
            if key not in self.searches:
                self.searches[key] = self.began[key] = search
        for task in plan.tasks:
            if task.id in plan.points:
                self.points[task.id] = [(p.search, p.point) for p in plan.points[task.id]]
                if task.kernel is not None and task.id not in self._observed:
                    self.in_flight.setdefault(code_hash(task.kernel.source), task.id)

    def _root_origin(self, entry: BeamEntry) -> str:
        """Who made the kernel at the root of ``entry``'s space: a tuner's kernel is its root's."""
        kernel = entry.kernel
        if kernel.origin == "tuner" and kernel.parent_hash in self.searches:
            return self.searches[kernel.parent_hash].root.origin
        return kernel.origin

    def _search_of(self, entry: BeamEntry) -> str | None:
        """The key of the search whose space ``entry`` is a point of; a new search rooted at ``entry`` if
        none is; None for a kernel with no knobs."""
        kernel = entry.kernel
        if kernel.origin == "tuner" and kernel.parent_hash in self.searches:
            return kernel.parent_hash
        if kernel.hash in self.searches:
            return kernel.hash
        space = space_of(kernel.source, self.sizes, self.operand_bytes, self.shared_bytes)
        if not space.dims:
            return None
        bottleneck = entry.roofline.bottleneck if entry.roofline is not None else "unknown"
        # A dot kernel's tiles come before the roofline's moves whatever its class: a first draft's small
        # tiles make a matmul look underutilised or memory-bound, and the tiles are what cure both.
        roofline = first_points(space, bottleneck)
        tiles = tensor_core_tiles(space)
        # the kernel's own point first, then its author's autotune configs
        first = roofline[:1] + autotune_points(space) + tiles + roofline[1:]
        searcher = self.make(space, self._seed(kernel.hash), state=None, first=first, budget=self.budget)
        self.live[kernel.hash] = searcher
        self.searches[kernel.hash] = SpaceSearch(root_id=entry.id, root=kernel, space=space, budget=self.budget,
                                                 searcher=searcher.state())  # fmt: skip
        self.began[kernel.hash] = self.searches[kernel.hash]
        return kernel.hash

    def _take(self, key: str, n: int, parent: BeamEntry, state: BeamState, round_: int, tasks: list[Task],
              prefix: str) -> int:  # fmt: skip
        """Append up to ``n`` new tasks from search ``key``'s next points; returns how many."""
        searcher = self._searcher(key)  # first: it may start the search again over a new space
        search = self.searches[key]
        made = 0
        while made < n and (points := searcher.suggest(n - made)):
            for point in points:
                source = render(search.root.source, search.space, point)
                code = code_hash(source)
                if code in self.in_flight:  # two points, one kernel: both learn from its one candidate
                    self.points[self.in_flight[code]].append((key, point))
                    continue
                known = self.outcomes.get(code)
                if known is None and code in state.seen:
                    known = Outcome(
                        failure=f"duplicate: the run already tried this kernel as {state.seen[code]}"
                    )
                if known is not None:
                    searcher.observe(point, known.time_ms, known.failure)
                    continue
                kernel = Kernel(source=source, origin="tuner", parent_hash=key,
                                note=f"{describe(search.space, point)} (knob space of {search.root_id})")  # fmt: skip
                task = Task(id=f"r{round_}-{prefix}{len(tasks)}", round=round_, direction=made, parent=parent, spec=state.spec,
                            config=state.config, floor=state.floor, kernel=kernel)  # fmt: skip
                tasks.append(task)
                self.in_flight[code] = task.id
                self.points[task.id] = [(key, point)]
                made += 1
        return made

    # ------------------------------------------------------------------------------------------- learning
    def observe(self, result: TaskResult) -> None:
        """Teach the searchers whose points ``result``'s candidate answers; other results are ignored."""
        answers = self.points.get(result.task_id)
        if not answers or result.task_id in self._observed:
            return
        self._observed.add(result.task_id)
        self.observed.append(result.task_id)
        outcome = self._outcome(result, [key for key, _ in answers])
        kernel = result.kernel
        if len(result.tries) > 1:  # a model refined the variant: the point's own kernel is the first try's
            first = result.tries[0]
            outcome, kernel = _failed("rejected", f"{first.verdict.status}: {first.verdict.reason}"), first.kernel
        if kernel is not None:
            self.outcomes[code_hash(kernel.source)] = outcome
        self.in_flight = {code: task for code, task in self.in_flight.items() if task != result.task_id}
        for key, point in answers:
            searcher = self._searcher(key)
            searcher.observe(point, outcome.time_ms, outcome.failure)
            if result.compiled_hash is None or outcome.time_ms is None:
                continue
            known = self.compiled.setdefault(key, {})
            first = known.get(result.compiled_hash)
            if first is None and result.ranked_ms is not None:  # timed itself, not told another's time
                known[result.compiled_hash] = TimedCode(point=point, task_id=result.task_id, time_ms=result.ranked_ms)
            elif first is not None and first.point != point:
                searcher.same_code(first.point, point)

    def _know_root(self, key: str, entry: BeamEntry) -> None:
        """The code of a search's root, timed at the root's own point; not for a root with ``@triton.autotune``
        configs, whose code is the config its autotuner picked, not the one written into its start."""
        if entry.kernel.hash != key or entry.compiled_hash is None:
            return
        self._searcher(key)  # first: it may start the search again over today's space, dropping its codes
        search = self.searches[key]
        if not search.space.configs:
            root = TimedCode(point=search.space.start(), task_id=entry.id, time_ms=entry.ranked_ms)
            self.compiled.setdefault(key, {}).setdefault(entry.compiled_hash, root)

    def _outcome(self, result: TaskResult, keys: list[str]) -> Outcome:
        """``outcome_of``; for a duplicate stopped before its timing (``Task.known_compiled``), the time of the
        kernel whose compiled code it runs."""
        outcome = outcome_of(result)
        if outcome.time_ms is None and result.status == "duplicate" and result.compiled_hash is not None:
            for key in keys:
                if (first := self.compiled.get(key, {}).get(result.compiled_hash)) is not None:
                    return Outcome(time_ms=first.time_ms)
        return outcome

    def known_compiled(self, task_id: str) -> dict[str, str]:
        """Compiled code timed in the spaces task ``task_id``'s point belongs to: hash -> the task timed on it.
        Only variants of one root share their host code, so a hash says the whole candidate is the same."""
        return {h: t.task_id for key, _ in self.points.get(task_id, []) for h, t in self.compiled.get(key, {}).items()}

    def state(self) -> OptimiserState:
        searches = {k: s.model_copy(update={"searcher": self.live[k].state()}) if k in self.live else s
                    for k, s in self.searches.items()}  # fmt: skip
        return OptimiserState(searches=searches, outcomes=self.outcomes, compiled=self.compiled,
                              observed=self.observed)  # fmt: skip

    def _searcher(self, key: str) -> SearcherLike:
        if key not in self.live:
            search = self.searches[key]
            space = space_of(search.root.source, self.sizes, self.operand_bytes, self.shared_bytes)
            if space != search.space:
                # Saved by code that read the root's knobs otherwise: its points would not render. The search
                # starts again over today's space; kernels the run measured are told, never run again (_take).
                search = search.model_copy(update={"space": space, "searcher": SearcherState(space=space)})
                self.searches[key] = search
                self.compiled.pop(key, None)  # its points are the old space's
            self.live[key] = self.make(search.space, self._seed(key), state=search.searcher, first=(),
                                       budget=search.budget)  # fmt: skip
        return self.live[key]

    def _seed(self, key: str) -> int:
        return int(hashlib.sha256(f"{self.seed}:{key}".encode()).hexdigest()[:8], 16)


def outcome_of(result: TaskResult) -> Outcome:
    """A time for a candidate timed and ranked (or a duplicate of a kernel's compiled code, timed too);
    otherwise the failure's status and reason (``rejected: compile_failed: ...``)."""
    if result.status in ("ok", "duplicate") and result.ranked_ms is not None:
        return Outcome(time_ms=result.ranked_ms)
    return _failed(result.status, result.reason)


def _failed(status: str, reason: str) -> Outcome:
    """A failure as the searchers read it: ``rejected: compile_failed: ...``."""
    return Outcome(failure=f"{status}: {reason}"[:1000])

"""The optimiser: a searcher over a kernel's joint knob space (STYLE.md 14).

``suggest(n)`` gives the next points to try, never one suggested before; ``observe`` learns from each
timed (or failed) candidate; ``state()`` is plain data for the resume point, and a Searcher built from
it suggests exactly what the original would have next. No Ray, no GPU.

Strategy: the ``first`` points (the optimiser's: the start, tensor-core tiles, the roofline's moves) come
first either way. When the whole space fits the budget, exhaustive: then the untried point nearest the
best so far. Otherwise ``hybrid``: in turn, a point from Optuna's TPE sampler (ask/tell, seeded, its study
rebuilt from the observations), an untried neighbour of the best point, and a uniform random point.
docs/optimiser.md has the measurement behind the choice (``python -m tests.searcher_models``).

Limits known before any run: a point whose tiles cannot fit a thread's registers (a ``tl.dot`` launch's
accumulator, another launch's block) or whose operand pipeline overflows the GPU's shared memory
(``knob_space.over_limits``) is never suggested. Learned limits: a point that failed for lack of resources (shared memory, registers, spills:
any failure text ``is_resource_failure`` recognises) is never suggested again, and neither is any point
that dominates it (the same warps, grid and register cap, every block, the stages and the unroll factor
at least as large, whatever the loads hint: ``Searcher._dominates``). A point
that swaps a grid and whose launch CUDA refused (``is_grid_failure``: a grid axis past its limit, e.g. a
swap that puts a million programs on axis 1, where 65,535 is the most) is never suggested again, and
neither is any point with the same grid swaps and every block at most as large (as many programs or
more on each axis, whatever the warps and stages). A knob value whose kernel left outputs
unwritten (``is_wrong_output``, at a first call) is never suggested again once it failed so at the start
moved by that knob alone and at one more point one knob from a correct point, and no correct point holds
it: a value the kernel's code was not written for (a ``NUM_ROWS`` its body unrolls for four rows only)
is wrong whatever the other knobs. A value wrong only beside other moves (a block too large for fewer
warps) is right at the start, so it stays. The exhaustive strategy, which tries every point not known
to compile alike, and an autotuned root (its start never ran) learn none. Other failures rule out only
the point itself.
"""

from __future__ import annotations

import math
import random
import re
import warnings
from collections import deque
from collections.abc import Iterator, Sequence

from beamsearch.records.search import KnobSpace, Observation, SearcherState, Strategy
from workers.proposers.knob_space import over_limits
from workers.proposers.tuner import LAUNCH_KINDS, MOVES

DEFAULT_BUDGET = 100  # without a budget, spaces up to this many points are searched exhaustively
TPE_STARTUP = 8  # observations before TPE models (fewer than Optuna's 10: the first points are informed)
HYBRID_RADIUS = 1  # hybrid: how far from the best point its local stream looks
MAX_WALK = 200_000  # points a nearest-free-point walk visits at most (a huge, nearly spent space)
# Failures that grow with block sizes and stages: a point above a failed one fails too (a compile too
# slow for the search, ``workers.actor.task.TUNER_COMPILE_LIMIT_S``, among them).
RESOURCE_FAILURE = re.compile(
    r"out of resource|OutOfResources|too many resources|shared memory|register|spill|maximum tensor numel"
    r"|compile time limit",
    re.IGNORECASE,
)

# CUDA's answer to a launch it refuses outright; with Triton's own resource checks passed, that is a grid
# axis past its limit (programs grow as blocks shrink).
GRID_FAILURE = re.compile(r"Triton Error \[CUDA\]: invalid argument")

# A verdict that a seed's first call (``(seed N)`` or ``(seed N; ``) left outputs unwritten: a grid that
# does not cover the outputs for a knob's value. The cache checks' calls, which name their variant after
# the seed, catch cheats rather than a knob's doing; values off may be a tolerance a whole point misses.
WRONG_OUTPUT = re.compile(r"\bincorrect: all_written: [^()]*\(seed \d+[;)]")
STRIKES = 2  # wrong points blaming one value before it is ruled out

Index = tuple[int, ...]  # a point as one value index per dimension


def is_resource_failure(failure: str) -> bool:
    """Whether a failure's text says the kernel ran out of a resource that grows with tiles and stages."""
    return RESOURCE_FAILURE.search(failure) is not None


def is_wrong_output(failure: str) -> bool:
    """Whether a failure's text says a first call left some of the kernel's outputs unwritten."""
    return WRONG_OUTPUT.search(failure) is not None


def is_grid_failure(failure: str) -> bool:
    """Whether a failure's text says CUDA refused the launch itself (a grid too large)."""
    return GRID_FAILURE.search(failure) is not None


class Searcher:
    """Suggests points of ``space``; deterministic for ``seed`` and the observations it is given."""

    def __init__(self, space: KnobSpace, seed: int, state: SearcherState | None = None,
                 first: Sequence[dict[str, int]] = (), budget: int | None = None,
                 strategy: Strategy | None = None) -> None:  # fmt: skip
        """``first``: points to try first, in order (the caller's preference; missing names keep the
        start value); a restored searcher keeps its state's. ``budget``: the candidates the caller means
        to spend; a space of at most that many points (``DEFAULT_BUDGET`` without one) is searched
        exhaustively, a larger one by ``hybrid``. ``strategy`` overrides that choice (the benchmark's
        baselines). Raises ValueError on a ``state`` of another space or a ``first`` point with an
        unknown name or illegal value."""
        self.space = space
        self.seed = seed
        self._names = [d.name for d in space.dims]
        if state is None:
            chosen = "exhaustive" if space.size() <= (budget or DEFAULT_BUDGET) else "hybrid"
            state = SearcherState(space=space, strategy=strategy or chosen,
                                  first=[space.complete(p) for p in first])  # fmt: skip
        elif state.space != space:
            theirs = ", ".join(f"{d.name} {d.values}" for d in state.space.dims)
            raise ValueError(f"the saved searcher state is for another knob space ({theirs or 'no knobs'})")
        self._strategy: Strategy = strategy or state.strategy
        self._first = [self._index(p) for p in state.first]
        self._suggested: list[Index] = [self._index(p) for p in state.suggested]
        self._seen = set(self._suggested)
        self._observations = list(state.observations)
        self._limits = [self._index(p) for p in state.limits]
        self._grid_limits = [self._index(p) for p in state.grid_limits]
        self._upward = [d.kind in ("block", "stages", "unroll") for d in space.dims]
        self._kinds = [d.kind for d in space.dims]
        self._over: dict[Index, bool] = {}  # over_limits, by point: a walk asks again and again
        # Stage counts seen to compile to the same code, per stages dimension: value index -> the class's
        # smallest; a point whose stages map to a seen point's is not tried.
        self._same_stages: dict[int, dict[int, int]] = {}
        self._same_code: list[tuple[Index, Index]] = []
        for a, b in state.same_code:
            self.same_code(a, b)
        self._seen_canonical = {self._canonical(i) for i in self._seen}
        self._wrong_values: _WrongValues | None = None
        self._learn_wrong_values()

    def suggest(self, n: int) -> list[dict[str, int]]:
        """Up to ``n`` new points never suggested before and not ruled out; [] when none is left."""
        picked: list[Index] = []
        proposals = self._proposals()
        for _ in range(max(n, 0)):
            index = next((i for i in self._first if self._free(i)), None)
            if index is None:
                index = next(proposals, None)
            if index is None:
                break
            self._suggested.append(index)
            self._mark_seen(index)
            picked.append(index)
        return [self._point(i) for i in picked]

    def observe(self, point: dict[str, int], time_ms: float | None, failure: str | None = None) -> None:
        """Learn a point's result: its time, or a failure (``failure`` its text; a time given with a
        failure, of a kernel that ran but spilled, is not ranked). A point that was never suggested (the
        input kernel's own) is learned too and never suggested."""
        if time_ms is None and failure is None:
            failure = "failed (no reason given)"
        if time_ms is not None and not (math.isfinite(time_ms) and time_ms > 0):
            raise ValueError(f"time_ms must be a positive finite number of milliseconds, got {time_ms}")
        index = self._index(self.space.complete(point))
        if index not in self._seen:
            self._mark_seen(index)
            self._suggested.append(index)
        self._observations.append(Observation(point=self._point(index), time_ms=None if failure else time_ms,
                                              failure=failure))  # fmt: skip
        if failure and is_resource_failure(failure) and index not in self._limits:
            self._limits.append(index)
        elif failure and is_grid_failure(failure) and index not in self._grid_limits and self._swaps_a_grid(index):
            self._grid_limits.append(index)
        self._learn(index, self._observations[-1])

    def _learn_wrong_values(self) -> None:
        """Learn wrong values afresh from the observations, as a restored searcher does. Not where every
        point is tried (the exhaustive strategy, a sweep's), nor from an autotuned root's start (its
        autotuner's pick ran, not the start)."""
        self._wrong_values = None
        if self._strategy == "exhaustive":
            return
        start = self._index(self.space.start())
        if self.space.configs or any(self._index(o.point) == start and o.failure and is_wrong_output(o.failure)
                                     for o in self._observations):  # fmt: skip
            return
        self._wrong_values = _WrongValues(start)
        for o in self._observations:
            self._learn(self._index(o.point), o)

    def _learn(self, index: Index, o: Observation) -> None:
        if self._wrong_values is None:
            return
        if o.time_ms is not None:
            self._wrong_values.correct(index)
        elif o.failure and (is_wrong_output(o.failure) or self._move_failed(index, o.failure)):
            if index == self._wrong_values.start:  # the root's own point went wrong: trust no value
                self._learn_wrong_values()
            else:
                self._wrong_values.wrong(index)

    def _move_failed(self, index: Index, failure: str) -> bool:
        """Whether a point with a move beyond the launch knobs off its start (fast math, a loads hint, a loop's
        stages, unrolling, a register cap) failed other than for a resource or its grid: a library without
        the function, values past the tolerance, a hint this Triton refuses or a loop option its compiler
        crashes on fail every point that holds the value, so it is blamed as an unwritten output's is
        (``_WrongValues``: ruled out only where it failed on the start alone too and no correct point holds it)."""
        return not (is_resource_failure(failure) or is_grid_failure(failure)) and any(
            kind not in LAUNCH_KINDS and v != s for kind, v, s in zip(self._kinds, index, self._wrong_values.start, strict=True))

    def same_code(self, a: dict[str, int], b: dict[str, int]) -> None:
        """Learn that points ``a`` and ``b`` compiled to the same code. Where they differ only in one
        kernel's ``num_stages``, those stage counts are taken as the same everywhere in the space: a loop
        the compiler does not pipeline ignores them whatever the blocks (36 RMSNorm's sweep: 114 of 254
        candidates were such duplicates). Other pairs teach nothing: their time is told as usual."""
        ia, ib = self._index(self.space.complete(a)), self._index(self.space.complete(b))
        differ = [d for d in range(len(ia)) if ia[d] != ib[d]]
        if len(differ) != 1 or self._kinds[differ[0]] not in ("stages", "loop_stages") or (ia, ib) in self._same_code:
            return
        self._same_code.append((ia, ib))
        d = differ[0]
        classes = self._same_stages.setdefault(d, {})
        ra, rb = classes.get(ia[d], ia[d]), classes.get(ib[d], ib[d])
        low, high = min(ra, rb), max(ra, rb)
        for v in range(len(self.space.dims[d].values)):
            if classes.get(v, v) in (low, high):
                classes[v] = low
        self._seen_canonical = {self._canonical(i) for i in self._seen}

    def _canonical(self, index: Index) -> Index:
        if not self._same_stages:
            return index
        return tuple(self._same_stages.get(d, {}).get(v, v) for d, v in enumerate(index))

    def _mark_seen(self, index: Index) -> None:
        self._seen.add(index)
        self._seen_canonical.add(self._canonical(index))

    def state(self) -> SearcherState:
        return SearcherState(space=self.space, strategy=self._strategy,
                             first=[self._point(i) for i in self._first],
                             suggested=[self._point(i) for i in self._suggested],
                             observations=self._observations, limits=[self._point(i) for i in self._limits],
                             grid_limits=[self._point(i) for i in self._grid_limits],
                             same_code=[[self._point(a), self._point(b)] for a, b in self._same_code])  # fmt: skip

    def best(self) -> tuple[dict[str, int], float] | None:
        """The fastest observed point and its time; None before any success."""
        timed = [o for o in self._observations if o.time_ms is not None]
        if not timed:
            return None
        fastest = min(timed, key=lambda o: o.time_ms)
        return dict(fastest.point), fastest.time_ms

    # -- strategies: each yields free points, nearest to where it wants to go --

    def _proposals(self) -> Iterator[Index]:
        if self._strategy == "tpe":
            return self._tpe()
        if self._strategy == "hybrid":
            return _round_robin(*(self._hybrid_streams()))
        if self._strategy == "random":
            return self._random()
        if self._strategy == "coordinate":
            return self._coordinate()
        return self._nearest_to_best()

    def _hybrid_streams(self) -> list[Iterator[Index]]:
        """TPE's model, the best point's untried neighbours (a polish TPE is slow at) and uniform random
        points (which find a second basin TPE's model has written off), in turn."""
        return [self._tpe(), self._nearest_to_best(radius=HYBRID_RADIUS), self._random()]

    def _nearest_to_best(self, radius: int | None = None) -> Iterator[Index]:
        """Every free point (within ``radius`` value steps), nearest to the best point first: exhaustive,
        and good points early when the search stops before the end."""
        centre = self._centre()
        for index in self._walk(centre):
            if radius is not None and self._distance(index, centre) > radius:
                return
            if self._free(index):
                yield index

    def _coordinate(self) -> Iterator[Index]:
        """Coordinate descent: one knob moved at a time from the best point, nearest steps first; then
        the nearest free points."""
        centre = self._centre()
        moves = [centre[:d] + (v,) + centre[d + 1 :] for d in range(len(centre))
                 for v in range(len(self.space.dims[d].values)) if v != centre[d]]  # fmt: skip
        for index in sorted(moves, key=lambda i: self._distance(i, centre)):
            if self._free(index):
                yield index
        yield from self._nearest_to_best()

    def _random(self) -> Iterator[Index]:
        rng = random.Random(f"{self.seed}:random:{len(self._suggested)}")
        while True:
            index = self._nearest_free(tuple(rng.randrange(len(d.values)) for d in self.space.dims))
            if index is None:
                return
            yield index

    def _tpe(self) -> Iterator[Index]:
        """Optuna's TPE (ask/tell), its study rebuilt from the history on every call: what it asks
        depends only on the seed and the state, so a restored searcher asks the same. An asked point
        already tried or ruled out is replaced by the nearest free point."""
        import optuna
        from optuna.distributions import IntDistribution
        from optuna.trial import TrialState, create_trial

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        distributions = {d.name: IntDistribution(0, len(d.values) - 1) for d in self.space.dims}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # multivariate TPE is "experimental"
            sampler = optuna.samplers.TPESampler(seed=random.Random(f"{self.seed}:tpe:{len(self._suggested)}").getrandbits(31),
                                                 n_startup_trials=TPE_STARTUP, multivariate=True, constant_liar=True)  # fmt: skip
        study = optuna.create_study(direction="minimize", sampler=sampler)
        timed = [math.log(o.time_ms) for o in self._observations if o.time_ms is not None]
        failed_value = max(timed, default=0.0) + math.log(4)  # worse than any success: TPE only ranks
        observed = set()
        for o in self._observations:
            index = self._index(o.point)
            observed.add(index)
            value = math.log(o.time_ms) if o.time_ms is not None else failed_value
            study.add_trial(create_trial(params=dict(zip(self._names, index, strict=True)),
                                         distributions=distributions, value=value))  # fmt: skip
        for index in self._suggested:
            if index not in observed:  # pending: TPE's constant liar keeps the next asks away
                study.add_trial(self._running(index, distributions))
        while True:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trial = study.ask(distributions)
            asked = tuple(trial.params[name] for name in self._names)
            index = asked if self._free(asked) else self._nearest_free(asked)
            if index != asked:
                study.tell(trial, state=TrialState.FAIL)
                if index is not None:
                    study.add_trial(self._running(index, distributions))
            if index is None:
                return
            yield index

    # -- the space as index tuples --

    def _running(self, index: Index, distributions: dict) -> object:
        from optuna.trial import TrialState, create_trial

        return create_trial(params=dict(zip(self._names, index, strict=True)), distributions=distributions,
                            state=TrialState.RUNNING)  # fmt: skip

    def _free(self, index: Index) -> bool:
        return index not in self._seen and self._canonical(index) not in self._seen_canonical \
            and not self._over_limits(index) \
            and not (self._wrong_values is not None and self._wrong_values.holds_one(index)) \
            and not any(self._dominates(index, limit) for limit in self._limits) \
            and not any(self._more_programs(index, limit) for limit in self._grid_limits)  # fmt: skip

    def _over_limits(self, index: Index) -> bool:
        if not (self.space.tiles or self.space.blocks):
            return False
        if index not in self._over:
            self._over[index] = over_limits(self.space, self._point(index)) is not None
        return self._over[index]

    def _dominates(self, index: Index, limit: Index) -> bool:
        """Whether ``index`` needs at least ``limit``'s resources: the same warps, grid and register cap,
        every block, the stages and the unroll factor at least as large, a loop's own stages too where
        ``limit`` sets them (0 is the launch's); the loads hint and the math knob, which take no resource
        a precise function does not, whatever."""
        return all(a >= b if up else True if kind in ("loads", "math")
                   else a == b or a >= b > 0 if kind == "loop_stages" else a == b
                   for a, b, up, kind in zip(index, limit, self._upward, self._kinds, strict=True))  # fmt: skip

    def _swaps_a_grid(self, index: Index) -> bool:
        """Whether ``index`` swaps a grid its kernel launches unswapped: only then is CUDA's refusal taken
        for a grid axis past its limit (it refuses a bad TMA descriptor in the same words)."""
        start = self._index(self.space.start())
        return any(kind == "grid" and a != b for a, b, kind in zip(index, start, self._kinds, strict=True))

    def _more_programs(self, index: Index, limit: Index) -> bool:
        """Whether ``index`` launches at least ``limit``'s programs on every grid axis: the same grid swaps,
        every block at most as large (warps and stages leave the grid alone)."""
        return all(a <= b if kind == "block" else a == b if kind == "grid" else True
                   for a, b, kind in zip(index, limit, self._kinds, strict=True))  # fmt: skip

    def _centre(self) -> Index:
        best = self.best()
        return self._index(best[0]) if best else self._index(self.space.start())

    def _walk(self, centre: Index) -> Iterator[Index]:
        """Every point of the space in breadth-first order of value steps from ``centre``."""
        queue, visited = deque([centre]), {centre}
        while queue and len(visited) <= MAX_WALK:
            index = queue.popleft()
            yield index
            for d, dim in enumerate(self.space.dims):
                for step in (-1, 1):
                    v = index[d] + step
                    if 0 <= v < len(dim.values):
                        neighbour = index[:d] + (v,) + index[d + 1 :]
                        if neighbour not in visited:
                            visited.add(neighbour)
                            queue.append(neighbour)

    def _nearest_free(self, centre: Index) -> Index | None:
        return next((i for i in self._walk(centre) if self._free(i)), None)

    @staticmethod
    def _distance(a: Index, b: Index) -> int:
        return sum(abs(x - y) for x, y in zip(a, b, strict=True))

    def _index(self, point: dict[str, int]) -> Index:
        point = self.space.complete(point)
        return tuple(d.values.index(point[d.name]) for d in self.space.dims)

    def _point(self, index: Index) -> dict[str, int]:
        return {d.name: d.values[i] for d, i in zip(self.space.dims, index, strict=True)}


class _WrongValues:
    """Knob values blamed for unwritten outputs. A wrong point one knob away from a correct point blames
    its value of that knob. A value is ruled out once it has ``STRIKES`` blames, one of them the start
    moved by that knob alone (wrong at the setting its author wrote, not only beside other moves), and no
    correct point holds it. Points are indexed by line (a dimension and every other value), so each
    observation finds its one-knob neighbours in a few lookups: the driver tells thousands of points."""

    def __init__(self, start: Index) -> None:
        self.start = start
        self._correct_lines: set[tuple[int, Index]] = set()  # lines holding a correct point
        self._wrong: dict[tuple[int, Index], list[Index]] = {}  # line -> its wrong points
        self._held: set[tuple[int, int]] = set()  # (dimension, value index) of correct points
        self._blamed: dict[tuple[int, int], set[Index]] = {}  # value -> the wrong points that blame it
        self._ruled_out: dict[int, set[int]] = {d: set() for d in range(len(start))}
        self.correct(start)

    @staticmethod
    def _lines(index: Index) -> Iterator[tuple[int, tuple[int, Index]]]:
        for d in range(len(index)):
            yield d, (d, index[:d] + index[d + 1 :])

    def correct(self, index: Index) -> None:
        self._held.update(enumerate(index))
        for d, line in self._lines(index):
            self._correct_lines.add(line)
            for w in self._wrong.get(line, []):
                self._blame((d, w[d]), w)
            self._ruled_out[d].discard(index[d])

    def wrong(self, index: Index) -> None:
        for d, line in self._lines(index):
            self._wrong.setdefault(line, []).append(index)
            if line in self._correct_lines:
                self._blame((d, index[d]), index)

    def _blame(self, value: tuple[int, int], w: Index) -> None:
        blamers = self._blamed.setdefault(value, set())
        blamers.add(w)
        d, v = value
        at_start = self.start[:d] + (v,) + self.start[d + 1 :]
        if len(blamers) >= STRIKES and at_start in blamers and value not in self._held:
            self._ruled_out[d].add(v)

    def holds_one(self, index: Index) -> bool:
        return any(v in self._ruled_out[d] for d, v in enumerate(index))


def _round_robin(*streams: Iterator[Index]) -> Iterator[Index]:
    """One point from each stream in turn, dropping a stream once it runs out."""
    live = list(streams)
    while live:
        for stream in list(live):
            index = next(stream, None)
            if index is None:
                live.remove(stream)
            else:
                yield index


# The moves beyond the launch knobs (``knob_moves.find_moves``) a roofline class tries first, as values, and
# whether before the launch knobs' moves (``early``) or after them. Memory-bound: the loads hints first
# (a streamed tensor read once wants evict_first or .cg), then deeper loop pipelining. Compute-bound and
# underutilized (latency): a register cap (more programs resident) and a loop's own stages first, then
# unrolling. Fast transcendentals (``math``) come first where the SMs are the limit or the class is not
# known: a kernel whose precise logs fill its pipes reads as compute-bound. None forbids a value: the
# searcher goes on to every one.
MOVE_TARGETS: dict[str, dict[str, list[int]]] = {
    "memory": {"loads": [1, 3, 2], "loop_stages": [3, 4], "unroll": [2], "maxnreg": [128], "math": [1]},
    "underutilized": {"maxnreg": [128, 64], "loop_stages": [3, 4], "unroll": [2, 4], "loads": [1], "math": [1]},
    "compute": {"math": [1], "maxnreg": [128], "loop_stages": [2, 3], "unroll": [2], "loads": [1]},
    "unknown": {"math": [1], "loop_stages": [2], "loads": [1], "unroll": [2], "maxnreg": [128]},
}
EARLY = {"memory": ("loads",), "underutilized": ("maxnreg", "loop_stages"),
         "compute": ("math", "maxnreg", "loop_stages"), "unknown": ("math",)}  # fmt: skip


def first_points(space: KnobSpace, bottleneck: str) -> list[dict[str, int]]:
    """Points to try first for a roofline class (``memory``, ``compute``, ``underutilized``, other):
    the start, the class's early moves beyond the launch knobs (``MOVE_TARGETS``, ``EARLY``), then moves of
    one launch knob from it in the direction the class points, then all of those knobs' first moves at
    once, then the other moves beyond the launch knobs, one at a time. An order, never a limit: the
    searcher goes on to the whole space."""
    moves = MOVES.get(bottleneck, MOVES["unknown"])
    beyond = MOVE_TARGETS.get(bottleneck, MOVE_TARGETS["unknown"])
    early_kinds = EARLY.get(bottleneck, ())
    start = space.start()
    singles: list[dict[str, int]] = []
    early: list[dict[str, int]] = []
    late: list[dict[str, int]] = []
    together = dict(start)
    for dim in space.dims:
        if dim.kind in beyond:
            legal = [v for v in beyond[dim.kind] if v in dim.values and v != dim.start]
            (early if dim.kind in early_kinds else late).extend(start | {dim.name: v} for v in legal)
            continue
        steps = moves.get(dim.kind, [])  # type: ignore[call-overload]
        targets = [
            dim.start + int(s) if dim.kind in ("stages", "grid") else int(dim.start * s) for s in steps
        ]
        legal = [v for v in dict.fromkeys(targets) if v in dim.values and v != dim.start]
        singles += [start | {dim.name: v} for v in legal]
        if legal:
            together[dim.name] = legal[0]
    order = list(beyond)  # the class's order of kinds; each kind's dims in space order (a stable sort)
    kind_of = {d.name: d.kind for d in space.dims}

    def rank(p: dict[str, int]) -> int:
        return order.index(kind_of[next(n for n in p if p[n] != start[n])])

    points = [start, *sorted(early, key=rank), *singles, together, *sorted(late, key=rank)]
    return [p for i, p in enumerate(points) if p not in points[:i]]

"""The offline optimiser's side of the round loop (beamsearch/optimiser.py), without Ray or a GPU: how a
round's tasks are planned from the searchers, what each searcher is told, and that a plan rebuilt from the
saved state is the plan the first session made.

The knob space here is a small fake one over the test kernel's ``BLOCK_R`` and ``num_warps`` (so these
tests do not depend on how ``space_of`` reads kernels); the searcher is a seeded shuffle of the space
that records what it is told.
"""

from __future__ import annotations

import itertools
import random

import pytest

from beamsearch import optimiser as optimiser_module
from beamsearch.beam import code_hash
from beamsearch.optimiser import Optimiser, Outcome, outcome_of
from beamsearch.records.config import SearchConfig
from beamsearch.records.problems import problem_sizes
from beamsearch.records.schema import Kernel, Roofline, RunSpec
from beamsearch.records.state import BeamEntry, BeamState, OptimiserState, TaskResult
from tests.conftest import DATA
from workers.proposers.knob_space import KnobDim, KnobSpace
from workers.proposers.searcher import Observation, SearcherState

SOURCE = (DATA / "search" / "input_kernel.py").read_text()
SPACE = KnobSpace(dims=[KnobDim(name="scale_kernel:BLOCK_R", kind="block", values=[1, 2, 4, 8, 16], start=4),
                        KnobDim(name="scale_kernel:num_warps", kind="warps", values=[1, 2, 4, 8], start=4)])  # fmt: skip


def fake_render(source: str, space: KnobSpace, point: dict[str, int]) -> str:
    block = point.get("scale_kernel:BLOCK_R", 4)
    warps = point.get("scale_kernel:num_warps", 4)
    # BLOCK_R 1 and 2 launch the same code here, so two points can render one kernel
    return source.replace("BLOCK_R = 4", f"BLOCK_R = {max(block, 2)}").replace(
        "num_warps=4", f"num_warps={warps}"
    )


class ShuffleSearcher:
    """Every point once, ``first`` ones first, then a seeded shuffle; records what it is told."""

    told: list[Observation]

    def __init__(self, space, seed, state=None, first=(), budget=None) -> None:
        names = [d.name for d in space.dims]
        points = [
            dict(zip(names, v, strict=True)) for v in itertools.product(*(d.values for d in space.dims))
        ]
        random.Random(seed).shuffle(points)
        first = [p for p in first if p in points]
        self.order = first + [p for p in points if p not in first]
        self._state = state or SearcherState(space=space, strategy="random")
        self.told = list(self._state.observations)
        self.same = []
        self.suggested = list(self._state.suggested)
        self.order = [p for p in self.order if p not in self.suggested]

    def suggest(self, n):
        out, self.order = self.order[:n], self.order[n:]
        self.suggested += out
        return out

    def observe(self, point, time_ms, failure=None):
        self.told.append(Observation(point=point, time_ms=time_ms, failure=failure))

    def same_code(self, a, b):
        self.same.append((a, b))

    def state(self):
        return self._state.model_copy(update={"suggested": self.suggested, "observations": self.told})


@pytest.fixture(autouse=True)
def fake_space(monkeypatch):
    monkeypatch.setattr(optimiser_module, "space_of", lambda source, sizes=None, *hardware: SPACE if "scale_kernel" in source
                        else KnobSpace(dims=[]))  # fmt: skip
    monkeypatch.setattr(optimiser_module, "render", fake_render)
    monkeypatch.setattr(optimiser_module, "describe", lambda space, point: str(sorted(point.items())))
    start = {"scale_kernel:BLOCK_R": 4, "scale_kernel:num_warps": 4}
    monkeypatch.setattr(optimiser_module, "first_points", lambda space, bottleneck: [start, {**start, "scale_kernel:num_warps": 8}]
                        if bottleneck == "memory" else [start])  # fmt: skip


def beam_state(beam_width: int = 2, roofline: str = "memory") -> BeamState:
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device="cpu")
    roof = Roofline(
        compute_sol_pct=10.0,
        memory_sol_pct=80.0,
        bottleneck=roofline,
        at_roofline=False,
        underutilized_below_pct=20.0,
        at_roofline_pct=90.0,
    )
    entry = BeamEntry(
        id="input", kernel=Kernel(source=SOURCE, origin="input"), ranked_ms=5.0, round=0, roofline=roof
    )
    return BeamState(config=SearchConfig(problem="p", beam_width=beam_width), problem="p", spec=spec, beam=[entry],
                     input=entry, seen={code_hash(SOURCE): "input"})  # fmt: skip


def result_of(task, ms: float | None, status: str = "ok", reason: str = "") -> TaskResult:
    timing = None
    if ms is not None:
        from tests.test_task import _timing

        timing = _timing("ok", ms)
    return TaskResult(task_id=task.id, parent_id=task.parent.id, round=task.round, direction=task.direction,
                      status=status, reason=reason, kernel=task.kernel, timing=timing)  # fmt: skip


def run_round(opt: Optimiser, state: BeamState, round_: int, count: int, times) -> tuple[list, BeamState]:
    """Plan, 'run' every task with ``times(task)``, observe, and save as the driver does."""
    tasks = opt.plan(state, round_, count)
    seen = dict(state.seen)
    for t in tasks:
        ms = times(t)
        opt.observe(
            result_of(t, ms)
            if ms is not None
            else result_of(t, None, "rejected", "compile_failed: out of resource")
        )
        seen[code_hash(t.kernel.source)] = t.id
    return tasks, state.model_copy(update={"optimiser": opt.state(), "seen": seen, "round": round_})


def block_of(task) -> int:
    return int(task.kernel.source.split("BLOCK_R = ")[1].split()[0])


def test_a_round_plans_the_count_asked_from_the_searcher_and_never_repeats_a_kernel() -> None:
    state = beam_state()
    sources: list[str] = []
    for round_ in (1, 2, 3):
        opt = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher)
        tasks, state = run_round(opt, state, round_, 5, lambda t: 10.0 - block_of(t))
        assert len(tasks) == 5 and [t.id for t in tasks] == [f"r{round_}-t{i}" for i in range(5)]
        assert all(t.kernel.origin == "tuner" and t.kernel.parent_hash == Kernel(source=SOURCE, origin="input").hash
                   and t.parent.id == "input" for t in tasks)  # fmt: skip
        sources += [t.kernel.source for t in tasks]
    assert SOURCE not in sources and len({code_hash(s) for s in sources}) == len(sources) == 15
    search = state.optimiser.searches[Kernel(source=SOURCE, origin="input").hash]
    told = search.searcher.observations
    # The start point renders the input: told the input's time, not run; the memory-bound class's next point
    # (more warps) was the first candidate of round 1.
    assert told[0] == Observation(point={"scale_kernel:BLOCK_R": 4, "scale_kernel:num_warps": 4}, time_ms=5.0)
    assert "num_warps=8" in sources[0] and "BLOCK_R = 4" in sources[0]
    assert search.root_id == "input" and len(search.searcher.suggested) == len(told)


def test_points_with_one_kernel_share_its_candidate_and_all_learn_its_time() -> None:
    state = beam_state()
    opt = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher)
    tasks, state = run_round(opt, state, 1, 20, lambda t: 1.0 + block_of(t))
    assert (
        len(tasks) == 20 - 1 - 4
    )  # 20 points: the input's, and 4 whose BLOCK_R 1 renders BLOCK_R 2's kernel
    told = state.optimiser.searches[Kernel(source=SOURCE, origin="input").hash].searcher.observations
    assert len(told) == 20
    ones = [o for o in told if o.point["scale_kernel:BLOCK_R"] == 1]
    assert len(ones) == 4 and all(o.time_ms == 3.0 for o in ones)
    again = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher)
    assert again.plan(state, 2, 5) == [], "an exhausted space plans nothing"


def test_two_points_that_compile_to_one_code_are_told_as_the_same() -> None:
    state = beam_state()
    opt = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher)
    tasks = opt.plan(state, round_=1, count=3)
    for i, (task, hash_) in enumerate(zip(tasks, ["aaa", "bbb", "aaa"], strict=True)):
        r = result_of(task, 1.0 + i)
        opt.observe(r.model_copy(update={"timing": r.timing.model_copy(update={"compiled_hash": hash_})}))
    (searcher,) = opt.live.values()
    assert searcher.same == [(opt.points[tasks[0].id][0][1], opt.points[tasks[2].id][0][1])]


def test_code_timed_in_a_space_is_named_to_its_later_tasks_and_their_early_duplicates_learn_its_time() -> None:
    """A variant is handed the compiled codes already timed in its space (the root's too): a worker stops one
    that runs such code before checking or timing it, and its point is told the time of the kernel it repeats."""
    from beamsearch.records.schema import Verdict
    from beamsearch.records.state import VerifyTry

    state = beam_state()
    state = state.model_copy(update={"beam": [state.beam[0].model_copy(update={"compiled_hash": "root"})]})
    opt = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher)
    first, second = opt.plan(state, round_=1, count=2)
    assert opt.known_compiled(first.id) == {"root": "input"}
    r = result_of(first, 2.5)
    opt.observe(r.model_copy(update={"timing": r.timing.model_copy(update={"compiled_hash": "aaa"})}))
    assert opt.known_compiled(second.id) == {"root": "input", "aaa": first.id}
    assert opt.known_compiled("r9-t9") == {}, "a task that is no point of a space is named nothing"
    verdict = Verdict(passed=False, status="duplicate", reason=f"same compiled code as {first.id}",
                      kernel_path="k.py", compiled_hash="aaa")  # fmt: skip
    early = result_of(second, None, status="duplicate", reason=verdict.reason)
    opt.observe(early.model_copy(update={"tries": [VerifyTry(kernel=second.kernel, verdict=verdict)]}))
    (searcher,) = opt.live.values()
    assert searcher.told[-1].time_ms == 2.5 and searcher.told[-1].failure is None
    assert searcher.same == [(opt.points[first.id][0][1], opt.points[second.id][0][1])]
    # a duplicate whose code the optimiser never saw timed stays a failure, as before, and is no timed code
    stray = result_of(second, None, status="duplicate", reason="same compiled code as r0-x")
    assert opt._outcome(stray, [k for k, _ in opt.points[second.id]]).time_ms is None
    untimed = verdict.model_copy(update={"compiled_hash": "bbb"})
    opt.observe(stray.model_copy(update={"tries": [VerifyTry(kernel=second.kernel, verdict=untimed)]}))
    assert "bbb" not in opt.known_compiled(second.id)
    # the driver builds an optimiser each round from the saved state: the codes timed go with it
    state = state.model_copy(update={"optimiser": opt.state()})
    again = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher)
    (later,) = again.plan(state, round_=2, count=1)
    assert again.known_compiled(later.id) == {"root": "input", "aaa": first.id}


def test_failures_are_told_with_their_status_and_reason() -> None:
    state = beam_state()
    opt = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher)
    tasks, state = run_round(opt, state, 1, 4, lambda t: None if block_of(t) >= 8 else 2.0)
    told = state.optimiser.searches[Kernel(source=SOURCE, origin="input").hash].searcher.observations
    failed = [o for o in told if o.time_ms is None]
    assert failed and all(o.failure == "rejected: compile_failed: out of resource" for o in failed)
    assert (
        outcome_of(result_of(tasks[0], 1.5, status="suspect", reason="faster than the floor")).time_ms is None
    )
    assert (
        outcome_of(result_of(tasks[0], 1.5, status="duplicate", reason="same compiled code")).time_ms == 1.5
    )


def test_a_resumed_round_plans_what_the_first_session_planned() -> None:
    """The driver rebuilds the optimiser from the saved state every round: a second session (a resumed run)
    gets the same tasks, with the same kernels, as the session that was cut short."""
    state = beam_state()
    opt = Optimiser(state.optimiser, {}, seed=3, budget=None, make=ShuffleSearcher)
    _, state = run_round(opt, state, 1, 6, lambda t: 1.0 + block_of(t))
    first = Optimiser(state.optimiser, {}, seed=3, budget=None, make=ShuffleSearcher).plan(state, 2, 6)
    resumed_state = BeamState.model_validate_json(state.model_dump_json())  # through state.json
    second = Optimiser(resumed_state.optimiser, {}, seed=3, budget=None, make=ShuffleSearcher).plan(
        resumed_state, 2, 6
    )
    assert [(t.id, t.kernel) for t in first] == [(t.id, t.kernel) for t in second] and len(first) == 6
    other_seed = Optimiser(OptimiserState(), {}, seed=4, budget=None, make=ShuffleSearcher).plan(
        beam_state(), 1, 6
    )
    assert [t.kernel for t in other_seed] != [t.kernel for t in first]


def test_a_beam_kernel_the_optimiser_made_is_searched_through_its_root() -> None:
    """A child of the input's space in the beam is a point of that space: one searcher, not two over the
    same points; its tasks take the fastest kernel of the space as their parent."""
    state = beam_state()
    opt = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher)
    tasks, state = run_round(opt, state, 1, 4, lambda t: 1.0 + block_of(t))
    best = min(tasks, key=block_of)
    child = BeamEntry(id=best.id, kernel=best.kernel, ranked_ms=1.0 + block_of(best), round=1)
    state = state.model_copy(update={"beam": [child, state.input]})
    tasks2 = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher).plan(state, 2, 4)
    assert len(tasks2) == 4 and {t.parent.id for t in tasks2} == {best.id}
    assert all(t.kernel.parent_hash == Kernel(source=SOURCE, origin="input").hash for t in tasks2)


def test_a_kernel_without_knobs_gets_no_searcher_and_the_round_goes_to_the_others() -> None:
    state = beam_state()
    plain = BeamEntry(id="r1-x", kernel=Kernel(source="def kernel_function(x):\n    return x\n", origin="llm"),
                      ranked_ms=0.5, round=1)  # fmt: skip
    state = state.model_copy(update={"beam": [plain, *state.beam]})
    tasks = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher).plan(state, 1, 6)
    assert len(tasks) == 6 and {t.parent.id for t in tasks} == {"input"}


def test_a_dot_kernel_tries_tensor_core_tiles_before_the_rooflines_moves(monkeypatch) -> None:
    """The real space, searcher and rendering: a first-draft matmul's first candidates are whole
    tensor-core tiles, not one knob step from its 64 x 64 x 32."""
    from workers.proposers import knob_space, searcher

    for name in ("space_of", "render", "describe"):
        monkeypatch.setattr(optimiser_module, name, getattr(knob_space, name))
    monkeypatch.setattr(optimiser_module, "first_points", searcher.first_points)
    problem = DATA.parent.parent / "artifacts" / "2_Standard_matrix_multiplication_"
    source = (problem / "input_kernel.py").read_text()
    state = beam_state(roofline="compute")
    entry = state.input.model_copy(update={"kernel": Kernel(source=source, origin="input")})
    state = state.model_copy(update={"beam": [entry], "input": entry, "seen": {code_hash(source): "input"}})
    sizes = problem_sizes(str(problem / "problem.py"), "full")
    tasks = Optimiser(state.optimiser, sizes, seed=0, budget=64).plan(state, 1, 8)
    assert [t.kernel.note.split(" (knob space")[0] for t in tasks[:3]] == [
        "_matmul_kernel:BLOCK_M 64 -> 128, _matmul_kernel:BLOCK_N 64 -> 256, _matmul_kernel:BLOCK_K 32 -> 64, "
        "_matmul_kernel:num_warps 4 -> 8, _matmul_kernel:num_stages 2 -> 3",
        "_matmul_kernel:BLOCK_M 64 -> 256, _matmul_kernel:BLOCK_N 64 -> 128, _matmul_kernel:BLOCK_K 32 -> 64, "
        "_matmul_kernel:num_warps 4 -> 8, _matmul_kernel:num_stages 2 -> 3",
        "_matmul_kernel:BLOCK_M 64 -> 128, _matmul_kernel:BLOCK_N 64 -> 128, _matmul_kernel:BLOCK_K 32 -> 64, "
        "_matmul_kernel:num_stages 2 -> 5",
    ]
    # After the six tiles, the roofline's moves: one knob at a time from the kernel's own point.
    assert len(tasks) == 8 and tasks[6].kernel.note.count("->") == 1


def test_a_dot_kernels_search_knows_the_gpus_shared_memory_and_the_runs_operand_size(monkeypatch) -> None:
    """The GPU's shared memory a program may take (the run's device facts) and the dtype's operand size
    reach the dot launch's limits: no planned point is over them, whatever round it is planned in."""
    from workers.proposers import knob_space, searcher

    for name in ("space_of", "render", "describe"):
        monkeypatch.setattr(optimiser_module, name, getattr(knob_space, name))
    monkeypatch.setattr(optimiser_module, "first_points", searcher.first_points)
    problem = DATA.parent.parent / "artifacts" / "2_Standard_matrix_multiplication_"
    source = (problem / "input_kernel.py").read_text()
    state = beam_state(roofline="compute")
    entry = state.input.model_copy(update={"kernel": Kernel(source=source, origin="input")})
    state = state.model_copy(update={"beam": [entry], "input": entry, "seen": {code_hash(source): "input"}})
    sizes = problem_sizes(str(problem / "problem.py"), "full")
    opt = Optimiser(state.optimiser, sizes, seed=0, budget=200, operand_bytes=4, shared_bytes=100_000)
    tasks = opt.plan(state, 1, 60)
    (search,) = opt.state().searches.values()
    (tile,) = search.space.tiles
    assert (tile.operand_bytes, tile.shared_bytes) == (4, 100_000)
    points = [point for task in tasks for _, point in opt.points[task.id]]
    assert len(points) == 60 and all(knob_space.over_limits(search.space, p) is None for p in points)


def test_problem_sizes_read_without_running_the_problem() -> None:
    path = str(DATA / "scale_rows_problem.py")
    assert problem_sizes(path, "full") == {"rows": 48, "cols": 80}
    assert problem_sizes(path, "small") == {"rows": 20, "cols": 36}
    assert problem_sizes(str(DATA / "kernels/syntax_error.py"), "full") == {}


def test_the_minutes_budget_stops_the_run_before_a_round_and_is_auto_only_offline() -> None:
    from beamsearch.display import Display
    from beamsearch.driver import Driver
    from beamsearch.records.state import RoundRecord

    events: list[dict] = []
    # the budget counts the rounds' own time, not the start's: two rounds of 150.5 s spend 5 minutes
    rounds = [RoundRecord(round=n, tasks=1, ok=1, failed=0, wall_s=150.5) for n in (1, 2)]
    state = beam_state().model_copy(update={"elapsed_s": 301.0 + 600.0, "round": 2, "rounds": rounds, "setup_s": 600.0})
    state = state.model_copy(
        update={"config": state.config.model_copy(update={"budget_minutes": 5.0, "rounds": 8})}
    )
    driver = Driver(
        state, pool=None, trace=None, display=Display(True, events.append), problem="p", versions={}
    )
    driver.run_rounds()  # no pool needed: no round may start
    assert driver.state.round == 2 and driver.stop_reason.startswith("the budget of 5 minutes of search is spent")
    assert events[-1]["event"] == "stop" and events[-1]["after_round"] == 2
    assert SearchConfig(problem="p").minutes_budget() == 8.0
    assert SearchConfig(problem="p", llm="openai/m").minutes_budget() is None
    assert SearchConfig(problem="p", budget_minutes=None).minutes_budget() is None


def test_an_autotuned_roots_code_is_not_taken_for_its_first_configs(monkeypatch) -> None:
    """An ``@triton.autotune`` root was timed on the config its autotuner picked, which need not be the one
    written into its start: its code is known at no point, so no variant is stopped or paired with it."""
    autotuned = SPACE.model_copy(update={"configs": [{"scale_kernel:BLOCK_R": 4, "scale_kernel:num_warps": 4},
                                                     {"scale_kernel:BLOCK_R": 4, "scale_kernel:num_warps": 8}]})  # fmt: skip
    monkeypatch.setattr(optimiser_module, "space_of", lambda source, sizes=None, *hardware: autotuned)
    state = beam_state()
    state = state.model_copy(update={"beam": [state.beam[0].model_copy(update={"compiled_hash": "root"})]})
    opt = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher)
    (task,) = opt.plan(state, round_=1, count=1)
    assert opt.known_compiled(task.id) == {}


def test_a_variant_a_model_refined_is_told_its_own_first_verdict() -> None:
    """With a model, a failed knob variant is refined; its point learns what its own kernel did, not the fix."""
    from beamsearch.records.schema import Verdict
    from beamsearch.records.state import VerifyTry

    state = beam_state()
    opt = Optimiser(state.optimiser, {}, seed=0, budget=None, make=ShuffleSearcher)
    task = opt.plan(state, 1, 1)[0]
    fixed = Kernel(source=task.kernel.source.replace("(x * w)", "(w * x)"), origin="llm")  # the model's fix
    wrong = Verdict(passed=False, status="incorrect", reason="all_written: 8 of 16 output elements were never written (seed 3; first at flat index 0)",
                    kernel_path="k.py")  # fmt: skip
    passed = Verdict(passed=True, status="ok", reason="all checks passed", kernel_path="k.py")
    result = result_of(task, 3.0).model_copy(update={"kernel": fixed, "tries": [VerifyTry(kernel=task.kernel, verdict=wrong),
                                                                                  VerifyTry(kernel=fixed, verdict=passed)]})  # fmt: skip
    opt.observe(result)
    told = opt.live[Kernel(source=SOURCE, origin="input").hash].told[-1]
    assert told.time_ms is None and told.failure.startswith("rejected: incorrect: all_written: 8 of 16"), told
    assert opt.outcomes[code_hash(task.kernel.source)] == Outcome(failure=told.failure)
    assert code_hash(fixed.source) not in opt.outcomes

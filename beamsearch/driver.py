"""The round loop: measure the starting kernel, then rounds of fan-out, collection and selection.

The driver holds the beam and is the only writer of the trace. Rounds overlap: a worker idle once a
round has handed out its tasks takes the next round's (``OpenRound``), so none waits for a round's
slowest candidate. A round's plan is written before its first task goes out; after every candidate the
driver writes that candidate's folder; when a round closes (rounds close in order) its record and then
state.json, the resume point. A resumed run (``--resume``) reloads state.json, runs the written plans
of the rounds that were out, reuses their finished candidates, and runs only the tasks that are missing.

Without a model or a replay the round's candidates come from the offline optimiser (``Optimiser``): as
many as the workers can take, planned here from the searchers of the beam's knob spaces, each result fed
back to its searcher. The run stops after its rounds, its budget (candidates or minutes), or when every
searcher's space is exhausted. With a model or a replay a round is a portfolio: the model's tasks, and knob
variants of the model's kernels in the beam for the workers' other places, at least one a model task
(none in a round whose beam holds none).

A model's reply may hold several kernels: its task tries the first and hands the others back, and each
becomes a task of its own (``Handback``), in the same round while it has places, else the next.
"""

from __future__ import annotations

import functools
import time
from collections import deque
from pathlib import Path

from beamsearch.beam import (
    attempt_of,
    entry_of,
    mark_duplicate,
    mark_same_compiled,
    plan_round,
    screen_above_ms,
    select_beam,
)
from beamsearch.beam_profiles import BeamProfiles, with_profiles
from beamsearch.compiler_seeds import (
    SEED_MEASURE_TIMEOUT_S,
    passed_seeds,
    report_kept,
    seed_kernels,
    within_reach,
)
from beamsearch.display import Display
from beamsearch.handback import Handback, proposed_kernel, task_of
from beamsearch.model_shares import ModelRotation
from beamsearch.model_watch import ModelLost
from beamsearch.open_round import OpenRound
from beamsearch.optimiser import PER_WORKER, Optimiser
from beamsearch.outcome import COMPILER_SEED_ID, best_baseline, loss_reason, ratio, seed_outcome
from beamsearch.pool import WorkerPool
from beamsearch.records.config import SearchConfig
from beamsearch.records.problems import problem_sizes
from beamsearch.records.schema import DeviceFacts, Floor, Kernel
from beamsearch.records.state import (
    BeamEntry,
    BeamState,
    FinalTiming,
    ProfileJob,
    ProfileResult,
    RoundPlan,
    RoundRecord,
    Summary,
    Task,
    TaskResult,
)
from beamsearch.trace import RESULT_FILE, TraceWriter
from workers.proposers.knob_moves import uses_fast_math
from workers.proposers.searcher import Searcher

MODEL_ORIGINS = ("llm", "replay")  # kernels whose knobs a portfolio round tunes beside the model's proposals
# Rounds out at once: one whose candidate hangs until its timeout stays open, and the rounds after it go on
# (a round closes only after those before it, so a resume point never skips one).
MAX_OPEN_ROUNDS = 3


class SearchError(RuntimeError):
    """A run that cannot go on (the starting kernel fails, say): the message says why."""


class Driver:
    def __init__(self, state: BeamState, pool: WorkerPool, trace: TraceWriter, display: Display,
                 problem: str, versions: dict[str, str]) -> None:  # fmt: skip
        self.state, self.pool, self.trace, self.display = state, pool, trace, display
        self.problem = problem
        self.versions = versions
        self.session_start = time.time()
        self.models = ModelRotation(state.models, state.config)  # several models: who asks what, shares
        self.stop_reason = ""
        self.open: list[OpenRound] = []  # the rounds in flight, oldest first (run_rounds)
        self.closed_at = time.time()  # when the last round closed, or the rounds began

    # ------------------------------------------------------------------------------------------- round 0
    def measure_start(self, kernel: Kernel | None) -> None:
        """The starting kernel verified, timed and profiled; the baselines and the floor. Saved as round 0.
        With no starting kernel (a problem with no input kernel), the compiler seed is the start."""
        state = self.state
        seeded = state.config.wants_compiler_seed(state.spec.device)
        seed_beside = seeded and kernel is not None  # with no input kernel the seed is the start
        other_seeds: list[tuple[str, Kernel]] = []
        if kernel is None:
            seeds, why = seed_kernels(state.spec, state.config, self.pool, self.display.event)
            if not seeds:
                raise SearchError(f"the problem has no input kernel, and the compiler seed is unavailable: {why}; "
                                  "give a starting kernel with --kernel")  # fmt: skip
            (_, kernel), *other_seeds = seeds  # the first variant's seed is the start, the others join beside it
        facts: DeviceFacts = self.pool.call("device_facts", state.spec)
        floor = facts.floor
        self.display.event("start", problem=self.problem, gpu=facts.gpu_name, floor_ms=floor.floor_ms if floor else None,
                           floor_note=facts.floor_note, workers=[w.where for w in self.pool.workers])  # fmt: skip
        seen, fastest = {**state.seen}, {**state.fastest_compiled}
        # the baselines (max-autotune's compile is a minute) run beside the starting kernel's measurement
        baselines_answer = self.pool.call_beside("baselines", state.spec, self._baseline_targets())
        (result,) = self._measure_at_start([("input", kernel)], state.config, floor, seen, fastest)
        if result.status != "ok" or result.ranked_ms is None:
            raise SearchError(f"the starting kernel cannot be the search's first parent: {result.status}: {result.reason}"
                              f" (details: {self.trace.candidate_dir(result)})")  # fmt: skip
        # what the run settled for itself is saved as such: the places, and whether the seed joins
        config = self._with_verify_slots(result, facts).model_copy(update={"compiler_seed": seeded})
        baselines = baselines_answer()
        for b in baselines:
            self.display.event("baseline", label=b.label, median_ms=b.median_ms, status=b.status, reason=b.reason,
                               library_ops=b.library_ops)  # fmt: skip
        entry = entry_of(result)
        history = [a for a in [attempt_of(result)] if a is not None]  # so no proposer offers the input again
        self.state = state.model_copy(update={"beam": [entry], "input": entry, "baselines": baselines, "floor": floor,
                                              "gpu_name": facts.gpu_name, "shared_bytes": facts.shared_bytes, "config": config, "seen": seen, "fastest_compiled": fastest, "history": history,
                                              "started_at": time.time()})  # fmt: skip
        self._save()
        if seed_beside:
            self._add_compiler_seed()
        elif other_seeds:
            self._add_compiler_seed(other_seeds)

    def resume_with(self, config: SearchConfig) -> None:
        """Go on with a saved run under ``config`` (its own options, with those a resume may change). A run
        stopped in round 0 before its compiler seed was measured (the compile takes a minute) gets it now."""
        self.state = self.state.model_copy(update={"config": config})
        if self.state.shared_bytes is None and self.state.spec.device.startswith("cuda"):
            # a run saved before the device facts had it: its new searches get the shared-memory limit too
            facts: DeviceFacts = self.pool.call("device_facts", self.state.spec)
            self.state = self.state.model_copy(update={"shared_bytes": facts.shared_bytes})
        start = self.state.input
        seed_measured = (self.trace.start_dir(COMPILER_SEED_ID) / RESULT_FILE).is_file()
        if self.state.round == 0 and start is not None and start.kernel.origin != "compiler" \
                and config.compiler_seed and not seed_measured:  # fmt: skip
            self._add_compiler_seed()

    def _add_compiler_seed(self, seeds: list[tuple[str, Kernel]] | None = None) -> None:
        """The compiler seeds (``seeds``, else every distinct variant's, recorded now) as further starting
        points: each verified, timed and profiled like the input, and kept in the beam beside it where it
        earns a place, so the optimiser tunes Inductor's configs too. A seed that is unavailable (an extern
        library call, the CPU) or fails is reported, and the run goes on from the others and the input."""
        state, config = self.state, self.state.config
        if seeds is None:
            seeds, _ = seed_kernels(state.spec, config, self.pool, self.display.event)
        seen, fastest = {**state.seen}, {**state.fastest_compiled}
        measured = self._measure_at_start(seeds, config, state.floor, seen, fastest,
                                          timeout_s=min(config.task_timeout_s, SEED_MEASURE_TIMEOUT_S))  # fmt: skip
        passed = passed_seeds(measured, self.display.event)
        if not passed:
            return
        history = [*state.history, *[a for r in passed if (a := attempt_of(r)) is not None]]
        beam = select_beam(state.beam, within_reach(passed, state.beam), config.beam_width)
        report_kept(passed, beam, self.display.event)
        self.state = state.model_copy(update={"beam": beam, "seen": seen, "fastest_compiled": fastest, "history": history})
        self._save()

    def _measure_at_start(self, kernels: list[tuple[str, Kernel]], config: SearchConfig, floor: Floor | None,
                          seen: dict[str, str], fastest: dict[str, tuple[str, float]],
                          timeout_s: float | None = None) -> list[TaskResult]:  # fmt: skip
        """Round-0 kernels (the input, the compiler seeds: id and kernel) verified, timed and profiled at once,
        each by a worker, in the order given: marked in ``seen`` and ``fastest``, traced and shown. A kernel
        not back within ``timeout_s`` (the run's task timeout when None) is a failed result saying so."""
        timeout_s = config.task_timeout_s if timeout_s is None else timeout_s
        tasks = [Task(id=task_id, round=0, direction=0, parent=BeamEntry(id=task_id, kernel=kernel, ranked_ms=0.0, round=0),
                      spec=self.state.spec, config=config, floor=floor) for task_id, kernel in kernels]  # fmt: skip
        came: dict[str, TaskResult] = {}
        results: list[TaskResult] = []
        for arrived in self.pool.run(tasks, timeout_s, method="measure_input", notify=self.display.event):
            came[arrived.task_id] = arrived
            # shown as soon as every kernel before it is in, in the order given: of two with the same code,
            # the first keeps it, and a slow one's wait is seen as it happens
            while len(results) < len(tasks) and (result := came.get(tasks[len(results)].id)) is not None:
                result = mark_same_compiled(mark_duplicate(result, seen), fastest)
                self.trace.write_candidate(result, self.problem)
                self.display.candidate(result)
                results.append(result)
        return results

    def _with_verify_slots(self, start: TaskResult, facts: DeviceFacts) -> SearchConfig:
        """The config with ``verify_per_gpu`` set where it was left to the run: as many verifications as
        the GPU's memory holds beside each other, by what the starting kernel's verification used."""
        config = self.state.config
        verdict = start.tries[-1].verdict if start.tries else None
        if config.verify_per_gpu is not None or verdict is None or verdict.gpu_peak_gb is None or not facts.memory_gb:
            return config
        workers_per_gpu = max(1, round(1 / self.pool.gpu_share)) if self.pool.gpu_share else 1
        slots = verifications_that_fit(verdict.gpu_peak_gb, facts.memory_gb, workers_per_gpu)
        self.display.event("verify_slots", verify_per_gpu=slots, verification_peak_gb=verdict.gpu_peak_gb,
                           gpu_memory_gb=facts.memory_gb)  # fmt: skip
        return config.model_copy(update={"verify_per_gpu": slots})

    def _baseline_targets(self) -> list[str]:
        if self.state.config.baselines is not None:
            return self.state.config.baselines
        # max-autotune is the bar a user compares with: its compile takes about a minute, once per run
        return ["eager", "compile", "compile-max-autotune"] if self.state.spec.device.startswith("cuda") else ["eager"]

    # ------------------------------------------------------------------------------------------- rounds
    def run_rounds(self) -> None:
        """Rounds up to the run's count or budget, overlapping: the next round's tasks go out as soon as the
        round before has handed out its own, so no worker waits for a round's slowest candidate. Rounds
        close in order, each saving the resume point (``OpenRound``)."""
        config = self.state.config
        if (
            self.state.setup_s is None and self.state.round == 0
        ):  # the start is done: what the budget leaves out
            self.state = self.state.model_copy(update={"setup_s": self._elapsed()})
            measured = ["the starting kernel", "the baselines"] + (
                ["the compiler seed"] if config.wants_compiler_seed(self.state.spec.device) else [])  # fmt: skip
            self.display.event("setup", setup_s=round(self.state.setup_s, 1), measured=measured,
                               budget_minutes=config.minutes_budget())  # fmt: skip
        self.stop_reason = f"{config.rounds} rounds done"
        self.seen, self.fastest = dict(self.state.seen), dict(self.state.fastest_compiled)
        self.pending = list(self.state.pending)
        self.open, self.closed_at = [], time.time()
        self.no_more = False  # no further round opens: the last round, the budget, or nothing left to plan
        self.plan_after_close = False  # nothing to plan from the results so far: try again after a close
        if self._next_round_number() is not None:
            self.optimiser = self._optimiser()
            jobs = self.pool.run(
                [], config.task_timeout_s, notify=self.display.event, spare_work=self._next_job
            )
            for result in jobs:
                self._take(result)
                self._close_done_rounds()
            self._close_done_rounds()
        self.display.event("stop", after_round=self.state.round, reason=self.stop_reason)

    def _next_job(self) -> Task | ProfileJob | None:
        """A job for an idle worker: the open rounds' own, oldest round first, else the next round's first."""
        self._close_done_rounds()
        for round_ in self.open:
            if (job := round_.next_job(self._hand_out)) is not None:
                return job
        if (number := self._next_round_number()) is None:
            return None
        opened = self._open_round(number)
        if opened is None:  # nothing to plan: every space exhausted, unless results still out teach more
            if self.open:
                self.plan_after_close = True
            else:
                self.no_more, self.stop_reason = (
                    True,
                    "every knob space is exhausted: no new candidate to try",
                )
            return None
        self.open.append(opened)
        return self._next_job()

    def _next_round_number(self) -> int | None:
        """The round to open now, or None: the newest open round still has tasks to hand out, as many rounds
        are open as may be, or no further round is to run (and why, in the stop reason)."""
        if self.no_more or self.plan_after_close or len(self.open) >= MAX_OPEN_ROUNDS:
            return None
        if self.open and not self.open[-1].handed_out():
            return None
        number = (self.open[-1].number if self.open else self.state.round) + 1
        if number > self.state.config.rounds:
            self.no_more = True
        elif spent := self._budget_spent():
            self.no_more, self.stop_reason = True, spent
        return None if self.no_more else number

    def _hand_out(self, task: Task) -> Task:
        """The task as a worker gets it: with the screen of the beam as it stands for its round, the run's
        config (a model lost mid-run hands the rest to the optimiser), and the compiled code its space timed."""
        config = self.state.config
        earlier = [r for o in self.open if o.number <= task.round for r in o.results]
        screen = screen_above_ms(self.state.beam, earlier, config.beam_width, config.screen_ratio)
        return self.models.assign(task.model_copy(update={"screen_above_ms": screen, "config": config,
                                                          "known_compiled": self.optimiser.known_compiled(task.id)}))  # fmt: skip

    def _take(self, result: TaskResult | ProfileResult) -> None:
        """A job's result, into the open round it belongs to: a candidate marked, learned from, written."""
        round_ = next(o for o in self.open if o.owns(result))
        round_.back(result)
        if isinstance(result, ProfileResult):
            round_.profiles.take(result)
            return
        result = self._with_model_log(result)
        self._watch_model(result, round_.number)
        result = mark_same_compiled(mark_duplicate(result, self.seen), self.fastest)
        self.optimiser.observe(result)
        taken = round_.handback.taken
        result = round_.handback.recover(result, self.seen)
        notes, _ = round_.handback.take(
            result, self.seen
        )  # a new result's handed-back kernels have not run yet
        if notes:
            result = result.model_copy(update={"reply_notes": result.reply_notes + notes})
        self.trace.write_candidate(result, self.problem)
        round_.results.append(result)
        self.display.candidate(result, more_tasks=round_.handback.taken - taken)
        round_.last_candidate_at = time.time()

    def _close_done_rounds(self) -> None:
        while self.open and self.open[0].done():
            self._close(self.open.pop(0))
            for later in self.open:  # their profile jobs pick from the beam as it now stands
                later.profiles.state = self.state
            self.plan_after_close = False

    def _budget_spent(self) -> str:
        """Why the run's budget allows no further round; empty while it does. The minutes are the rounds' own:
        the start (baselines, a minute of compiler seed) would otherwise spend a short budget before any
        candidate, and more so with several searches sharing a GPU."""
        config = self.state.config
        minutes = config.minutes_budget()
        if minutes is not None and self._search_s() >= 60 * minutes:
            return f"the budget of {minutes:g} minutes of search is spent ({self._search_s() / 60:.1f} min in rounds)"
        if config.budget_candidates is not None and self._committed() >= config.budget_candidates:
            return f"the budget of {config.budget_candidates} candidates is spent"
        return ""

    def _candidates(self) -> int:
        """Candidates of the closed rounds."""
        return sum(r.tasks for r in self.state.rounds)

    def _committed(self) -> int:
        """Candidates of the closed rounds and those the open rounds have planned or taken on."""
        return self._candidates() + sum(len(o.tasks) + o.handback.taken for o in self.open)

    def _search_s(self) -> float:
        """Seconds the rounds took, what ``--budget-minutes`` counts: the closed rounds' (a round cut short
        and resumed: its last session), and the time since the last closed while rounds run."""
        running = time.time() - self.closed_at if self.open else 0.0
        return sum(r.wall_s for r in self.state.rounds) + running

    def _optimiser(self) -> Optimiser:
        """The session's optimiser, from the saved state: it plans every candidate of an offline round, and
        tunes a model's (or a replay's) kernels beside its proposals (``_plan``)."""
        state, config = self.state, self.state.config
        per_round = max(self._round_size(offline=True), self._round_size(offline=False))
        rounds_left = (config.rounds - state.round) * per_round
        left = (
            rounds_left
            if config.budget_candidates is None
            else min(rounds_left, config.budget_candidates - self._candidates())
        )
        # A sweep is the searcher's exhaustive strategy run to the end: every point but those above a learned
        # resource limit, which would fail the same way.
        make = functools.partial(Searcher, strategy="exhaustive") if config.sweep else Searcher
        return Optimiser(state.optimiser, problem_sizes(state.spec.problem_path, state.spec.shapes), config.seed,
                         budget=left, make=make, operand_bytes=4 if state.spec.dtype == "fp32" else 2,
                         shared_bytes=state.shared_bytes)  # fmt: skip

    def _round_size(self, offline: bool) -> int:
        """Offline, as many candidates as the workers can take; else beam width x directions; cut to the
        candidates the budget has left."""
        config = self.state.config
        size = (config.candidates_per_round or PER_WORKER * len(self.pool.workers)) if offline \
            else config.beam_width * config.directions  # fmt: skip
        if config.budget_candidates is not None:
            size = min(size, config.budget_candidates - self._committed())
        return size

    def _open_round(self, number: int) -> OpenRound | None:
        """Round ``number`` with its tasks out to be handed out: its written plan (a resumed run), else a new
        plan, written before any task of it runs. Its candidates finished in an earlier session are reused.
        None (and nothing written) when it has no candidate to try."""
        plan = self.trace.read_plan(number)
        if plan is not None:
            self.optimiser.adopt(plan)
            planned_ids = {t.id for t in plan.tasks}
            self.pending[:] = [p for p in self.pending if p.id not in planned_ids]
        else:
            plan = self._plan(number)
            if not plan.tasks:
                return None
            self.trace.write_plan(plan)
        tasks = {t.id: t for t in plan.tasks}
        finished = {r.task_id: r for r in self.trace.finished_candidates(number)}
        done = {i: r for i, r in finished.items() if _same_task(tasks.get(i), r)}
        handback = Handback(self.state, number, tasks, plan.places, self.pending, finished)
        results: list[TaskResult] = []
        reused = sorted(done.values(), key=lambda r: r.finished_at)  # in the order they came back
        while reused:
            r = mark_same_compiled(mark_duplicate(reused.pop(0), self.seen), self.fastest)
            self.optimiser.observe(r)
            results.append(r)
            reused += handback.take(r, self.seen)[1]
        self.display.round_start(number, len(tasks) + handback.taken, reused=len(results))
        profiles = BeamProfiles(self.state, number, results, notify=self.display.event)
        todo = deque(t for t in plan.tasks if t.id not in done)
        return OpenRound(number, tasks, todo, handback, profiles, results)

    def _plan(self, number: int) -> RoundPlan:
        """Round ``number``'s tasks, planned from everything known now: the beam as it would stand if the
        open rounds ended now, every result the searchers have learned."""
        view = self._beam_as_it_stands()
        proposing = view.config.proposing
        capacity = self._round_size(offline=True)  # the candidates the workers can take
        size = self._round_size(offline=False) if proposing else capacity
        # kernels handed back earlier that had no place come first: they are paid for
        carried = [task_of(p, view, number) for p in self.pending[: max(size, 0)]]
        del self.pending[: len(carried)]
        new = size - len(carried)
        if proposing:  # a portfolio: the model's ideas, and the knobs of the kernels it made that the beam kept
            planned_now = plan_round(view, number)[:new]
            model_tasks = len(carried) + len(planned_now)
            # the places the workers have beyond the model's tasks go to knob variants (at least one a task):
            # a model's or replay's round would otherwise leave the GPUs idle while the model thinks
            wanted = max(model_tasks, capacity - model_tasks)
            # within a candidate budget, the places for the model's handed-back kernels (paid for) come first
            tuning = self._more_within_budget(wanted, model_tasks + size)
            planned_now += self.optimiser.plan(view, number, tuning, roots=MODEL_ORIGINS, prefix="u") if tuning else []
        else:
            planned_now = self.optimiser.plan(view, number, new) if new > 0 else []
        tasks = carried + planned_now
        return self.optimiser.plan_of(number, tasks, places=self._more_within_budget(size, len(tasks)))

    def _beam_as_it_stands(self) -> BeamState:
        """The state as the open rounds' results so far leave it: its beam selected from them too (with the
        profiles taken of them), and every kernel seen."""
        results = [r for o in self.open for r in o.results]
        profiled = {i: p for o in self.open for i, p in o.profiles.done.items()}
        beam = with_profiles(select_beam(self.state.beam, results, self.state.config.beam_width), profiled)
        return self.state.model_copy(update={"beam": beam, "seen": self.seen, "fastest_compiled": self.fastest})

    def _more_within_budget(self, wanted: int, planned: int) -> int:
        """How many candidates, up to ``wanted``, a round with ``planned`` tasks may try besides them within
        the candidate budget: a portfolio round's knob variants, a round's handed-back kernels (as many
        again as its size)."""
        budget = self.state.config.budget_candidates
        return wanted if budget is None else max(0, min(wanted, budget - self._committed() - planned))

    def _close(self, round_: OpenRound) -> None:
        """Select the beam (its kernels all profiled by now: ``BeamProfiles``), record the round, save."""
        state, results, profiles = self.state, round_.results, round_.profiles
        results.sort(key=lambda r: r.task_id)
        beam, updated = profiles.apply(select_beam(state.beam, results, state.config.beam_width), results)
        self.models.end_round(round_.number, updated, beam)
        for old, new in zip(results, updated, strict=True):
            if new is not old:
                self.trace.write_candidate(new, self.problem)
        results = updated
        profiled = list(profiles.done.values())
        now = time.time()
        ok = [r for r in results if r.status == "ok" and r.ranked_ms is not None]
        best = min(ok, key=lambda r: r.ranked_ms, default=None)
        record = RoundRecord(
            round=round_.number, tasks=len(results), ok=len(ok), failed=sum(r.status == "failed" for r in results),
            best_id=best.task_id if best else None, best_ms=best.ranked_ms if best else None,
            beam=[e.id for e in beam], running_best_ms=beam[0].ranked_ms if beam else None, wall_s=now - self.closed_at,
            profile_wall_s=max(0.0, now - round_.last_candidate_at) if profiled else 0.0,
            profile_s=sum(r.stage_s.get("profile", 0.0) for r in profiled), profiles=len(profiled),
            profiles_unused=profiles.unused(beam),
            screened=sum(r.screened for r in results), inconclusive=sum(r.status == "inconclusive" for r in results),
            gpu_measure_s=sum(r.gpu_measure_s for r in results) + sum(p.gpu_measure_s for p in profiled),
            tokens=sum(r.tokens for r in results),
            cost_usd=sum(r.cost_usd for r in results),
        )  # fmt: skip
        self.closed_at = now
        self.trace.write_round(record, best, self.problem)
        history = state.history + [a for a in map(attempt_of, results) if a is not None]
        self.state = state.model_copy(update={"round": round_.number, "beam": beam, "history": history,
                                              "seen": dict(self.seen), "fastest_compiled": dict(self.fastest),
                                              "rounds": state.rounds + [record], "pending": list(self.pending),
                                              "models": self.models.state(),
                                              "optimiser": self.optimiser.state()})  # fmt: skip
        self._save()
        self.display.round_end(record, self._speedup(record.running_best_ms))

    def _with_model_log(self, result: TaskResult) -> TaskResult:
        """A task cut off by its timeout keeps the exchanges it made (logged with the run's LLM service),
        and its reason says if it was waiting on the model."""
        if not self.state.config.llm:
            return result
        from workers.proposers.llm_service import take_task_log

        exchanges, waiting_s = take_task_log(result.task_id)  # taken for every task: the service forgets it
        if result.status != "failed":
            return result
        reason = result.reason + (f"; it was waiting {waiting_s:.0f} s on the model" if waiting_s is not None else "")
        return result.model_copy(update={"exchanges": result.exchanges or exchanges, "reason": reason})

    def _watch_model(self, result: TaskResult, round_: int) -> None:
        """A model lost mid-run stops the run before the task's result is written (a resumed run redoes
        the task), or, with ``on_model_lost = "offline"``, hands the rest of the run to the offline optimiser."""
        config = self.state.config
        why = self.models.watch(result, config, self.display.event)
        if not why:
            return
        self.display.event("model_lost", task=result.task_id, action=config.on_model_lost, reason=why)
        if config.on_model_lost == "stop":
            raise ModelLost(f"the model stopped answering in round {round_}: {why}. The trace is consistent up to "
                            f"round {self.state.round}; once the model answers again, continue with "
                            f"--resume --out {self.trace.out} (or run with --on-model-lost offline)")  # fmt: skip
        # an "auto" minutes budget is resolved as with the model: the optimiser's own budget would end the run
        offline = config.model_copy(update={"llm": None, "budget_minutes": config.minutes_budget()})
        self.state = self.state.model_copy(update={"config": offline})

    # ------------------------------------------------------------------------------------------- the end
    def finish(self) -> Summary:
        """Re-time the beam and the starting kernel side by side, crown the fastest, write the summary."""
        state = self.state
        finalists = list(state.beam)
        if state.input is not None and all(e.id != "input" for e in finalists):
            finalists.append(state.input)
        retimed: list[FinalTiming] = self.pool.call("retime", state.spec, finalists) if finalists else []
        self.display.event("retime", timings=[t.model_dump() for t in retimed])
        notes = [t.note for t in retimed if t.note]
        for note in notes:
            self.display.event("retime_note", note=note)
        # Only a re-timing that passed crowns: a failed one was retried alone (workers.actor.task.final_timing).
        timed = [t for t in retimed if t.crowned_ms is not None]
        best_t = min(timed, key=lambda t: t.crowned_ms, default=None)
        best = next((e for e in finalists if best_t and e.id == best_t.id), None)
        if best is not None:
            self._profile_unprofiled(best)
        input_t = next((t for t in retimed if t.id == "input"), None)
        input_ms = input_t.crowned_ms if input_t and input_t.crowned_ms else (state.input.ranked_ms if state.input else None)
        best_ms = best_t.crowned_ms if best_t else None
        by_label = {b.label: b.median_ms for b in state.baselines}
        bar = best_baseline(state.baselines, state.spec.device)
        not_tried = [f"{p.id} (a kernel of {p.from_task}'s reply)" for p in state.pending]
        if not_tried:
            self.display.event("not_tried", kernels=not_tried, reason="the run ended before they had a place")
        floor_pct = 100.0 * state.floor.floor_ms / best_ms if state.floor and best_ms else None
        seed = seed_outcome(self.trace.out, state.config, state.spec.device)
        slower = best_ms > bar.median_ms if bar and best_ms and bar.median_ms else None
        why = loss_reason(best, seed, state) if slower else ""
        warnings = [] if self._candidates() else [f"the search tried no candidate ({self.stop_reason}): the result is a "
                                            "starting kernel"]  # fmt: skip
        for warning in warnings:
            self.display.event("no_candidate", warning=warning)
        summary = Summary(
            problem=self.problem, config=state.config, spec=state.spec, versions=self.versions, gpu_name=state.gpu_name,
            baselines=state.baselines, input_ms=input_ms, floor=state.floor, rounds=state.rounds, final_retime=retimed,
            retime_notes=notes,
            best_id=best.id if best else None, best_ms=best_ms, best_round=best.round if best else None,
            speedup_vs_input=ratio(input_ms, best_ms), speedup_vs_eager=ratio(by_label.get("eager"), best_ms),
            speedup_vs_compile=ratio(by_label.get("compile"), best_ms), pct_of_floor=floor_pct,
            best_baseline=bar.label if bar else None, speedup_vs_best_baseline=ratio(bar.median_ms if bar else None, best_ms),
            candidates=sum(r.tasks for r in state.rounds), candidates_ok=sum(r.ok for r in state.rounds),
            tokens=sum(r.tokens for r in state.rounds), cost_usd=sum(r.cost_usd for r in state.rounds),
            wall_s=self._elapsed(), gpu_measure_s=sum(r.gpu_measure_s for r in state.rounds),
            stop_reason=self.stop_reason, not_tried=not_tried, setup_s=state.setup_s, search_s=self._search_s(),
            compiler_seed=seed.said if seed else "", slower_than_best_baseline=slower, loss_reason=why,
            approximate_math=best is not None and uses_fast_math(best.kernel.source),
            warnings=warnings, models=self.models.table(),
        )  # fmt: skip
        self.trace.write_final(summary, best.kernel.source if best else None)
        self.display.finish(summary)
        return summary

    def _profile_unprofiled(self, best: BeamEntry) -> None:
        """The crowned kernel's profile, where no round took it (an offline knob variant: no proposer reads
        its profile), written into its candidate folder for the report."""
        state = self.state
        if best.profile is not None or not (state.config.profile and state.spec.device.startswith("cuda")):
            return
        found = [r for r in self.trace.finished_candidates(best.round) if r.task_id == best.id]
        if not found or (found[0].profile is not None and not found[0].profile.skipped):
            return
        self.display.event("profile_best", id=best.id)
        job = ProfileJob(id=f"final-profile-{best.id}", round=best.round, entry=best, spec=state.spec)
        done = next(self.pool.run([job], state.config.task_timeout_s, notify=self.display.event))
        assert isinstance(done, ProfileResult)  # the pool's result for a ProfileJob
        self.trace.write_candidate(found[0].model_copy(update={"profile": done.profile, "roofline": done.roofline}),
                                   self.problem)  # fmt: skip

    def _speedup(self, ms: float | None) -> float | None:
        return ratio(self.state.input.ranked_ms if self.state.input else None, ms)

    def _elapsed(self) -> float:
        return self.state.elapsed_s + time.time() - self.session_start

    def _save(self) -> None:
        now = time.time()
        self.state = self.state.model_copy(update={"elapsed_s": self.state.elapsed_s + now - self.session_start})
        self.session_start = now
        self.trace.save_state(self.state)


# CUDA contexts of a worker's waiting processes, about 0.5 GB each: its spares, and the judge and runner of
# its verification session (workers.harness.verify.VerifySession) between two variants
CONTEXTS_GB_PER_WORKER = 3.0
MEMORY_HEADROOM = 0.9  # of the GPU's memory: fragmentation, ncu's profiles of the beam's kernels


def verifications_that_fit(peak_gb: float, memory_gb: float, workers_per_gpu: int) -> int:
    """How many verifications, each using ``peak_gb`` at its peak, one GPU of ``memory_gb`` holds at once
    beside its workers' spare processes; at least one, at most one per worker. One that runs out of memory
    anyway is run again with the GPU to itself (``workers.actor.task.verify_candidate``)."""
    usable = MEMORY_HEADROOM * memory_gb - CONTEXTS_GB_PER_WORKER * workers_per_gpu
    return max(1, min(workers_per_gpu, int(usable // max(peak_gb, 0.01))))


def _same_task(task: Task | None, result: TaskResult) -> bool:
    """A finished candidate a resumed round may reuse: one of its planned tasks, with the planned kernel
    (before any refinement)."""
    if task is None:
        return False
    proposed = proposed_kernel(result)
    return task.kernel is None or (proposed is not None and proposed.hash == task.kernel.hash)



def out_has_run(out: Path) -> bool:
    return (out / "state.json").is_file()

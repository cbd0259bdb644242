"""A run of several models: which model each task asks, each model's share of the tasks, and taking out of
rotation a model that keeps failing. Plain data in and out, no Ray: the driver calls four hooks.

- ``assign(task)`` as a task is handed out: a model task gets the model whose turn it is by the shares
  (smooth weighted round-robin, so a round of a few tasks still follows them over the run); a kernel a
  reply handed back asks the model whose reply held it; a knob variant (repairs only) the largest share's.
- ``watch(result, config, event)`` for every result: a model whose tasks keep getting no usable kernel
  (``OUT_AFTER`` in a row), or whose server no longer answers a one-line request, is taken out with its
  reason (the ``model_out`` event); when the last one is out it says why, and ``--on-model-lost`` applies.
  With one model it is ``ModelWatch``, as before.
- ``end_round(round, results, beam)``: each model's counts (tasks, replies, kernels, verified, entered the
  beam, failed, best, tokens, cost) from the round's results, once per round, and the new shares.
- ``state()`` for the resume point (``BeamState.models``); ``table()`` for the summary.

The share rule (docs/models.md): equal shares until every model in rotation has ``MIN_EVIDENCE`` tasks;
then each model's score is ``(1 + verified + 3 x entered the beam) / (2 + tasks)``, and its share is the
floor plus the rest of the tasks in proportion to the scores. The floor, ``min(0.1, 0.5 / models)``,
keeps every model in rotation asked now and then, so one that starts badly can recover.
"""

from __future__ import annotations

from collections.abc import Callable

from beamsearch.model_watch import ModelWatch, preflight
from beamsearch.records.config import SearchConfig
from beamsearch.records.llm import ModelsState, ModelStats
from beamsearch.records.state import BeamEntry, Task, TaskResult
from workers.proposers.llm import model_unreachable

OUT_AFTER = 3  # model tasks in a row with no usable kernel (errors, timeouts, replies with no code): out
MIN_EVIDENCE = 2  # tasks each model in rotation has had before the shares follow the results
BEAM_WEIGHT = 3  # a kernel that entered the beam counts this many verified ones
VERIFIED = ("ok", "not_timed", "inconclusive", "suspect")  # statuses of a kernel that passed verification


def share_floor(models: int) -> float:
    """The least share a model in rotation gets: a tenth, less with more than five models."""
    return min(0.1, 0.5 / max(1, models))


def score(stats: ModelStats) -> float:
    """What a model's candidates achieved per task, smoothed so a model with few tasks is near the middle."""
    return (1 + stats.verified + BEAM_WEIGHT * stats.entered_beam) / (2 + stats.tasks)


def shares(stats: list[ModelStats]) -> dict[str, float]:
    """Each model's share of the model tasks (docs/models.md): 0 for one out of rotation; equal until each
    model in rotation has ``MIN_EVIDENCE`` tasks, then the floor plus the rest by ``score``."""
    active = [s for s in stats if not s.out_reason]
    out = {s.model: 0.0 for s in stats}
    if not active:
        return out
    if any(s.tasks < MIN_EVIDENCE for s in active):
        return out | {s.model: 1.0 / len(active) for s in active}
    floor = share_floor(len(active))
    total = sum(score(s) for s in active)
    return out | {s.model: floor + (1 - floor * len(active)) * score(s) / total for s in active}


def verified(result: TaskResult) -> bool:
    return result.status in VERIFIED


def _model_made(result: TaskResult) -> bool:
    """A result of a model's task or of a kernel its reply handed back, not a knob variant's."""
    return not result.tries or result.tries[0].kernel.origin == "llm"


def failed_task(result: TaskResult) -> bool:
    """A model task that got no usable kernel of its model: no reply (errors, timeouts), replies with no
    code, or cut off by its timeout while it waited on the model."""
    if result.from_task:
        return False
    if (
        result.status == "no_proposal"
    ):  # a reply whose kernels only repeat earlier ones is code, not a failure
        asks = [e for e in result.exchanges if e.purpose in ("optimize", "refine")]
        code = [
            e
            for e in asks
            if e.call.status == "ok" and (not e.parse_error or e.parse_error.startswith("repeats"))
        ]
        return bool(asks) and not code
    return result.status == "failed" and "on the model" in result.reason


class ModelRotation:
    """The run's models in rotation; see the module's docstring. ``check(config, model)`` sends a model one
    tiny request and raises ``LLMUnavailable`` when it does not answer (the pre-flight's)."""

    def __init__(self, saved: ModelsState, config: SearchConfig,
                 check: Callable[[SearchConfig, str], None] = preflight) -> None:  # fmt: skip
        names = [e.model for e in config.endpoints()] or [s.model for s in saved.stats]
        by_name = {s.model: s for s in saved.stats}
        self.stats: dict[str, ModelStats] = {m: by_name.get(m, ModelStats(model=m)) for m in names}
        self.credit = {m: saved.credit.get(m, 0.0) for m in names}
        self.assigned = dict(saved.assigned)
        self.counted = list(saved.counted_rounds)
        self.streak = {m: 0 for m in names}  # model tasks in a row with no usable kernel, this session
        self.check = check
        self.single = ModelWatch(check=lambda c: check(c, ""))
        self._reshare()

    @property
    def several(self) -> bool:
        return len(self.stats) > 1

    @property
    def active(self) -> list[str]:
        return [m for m, s in self.stats.items() if not s.out_reason]

    def assign(self, task: Task) -> Task:
        """The task with the model it asks (``Task.model``); the same model every time it is handed out."""
        if not self.several or not task.config.llm or not self.active:
            return task
        model = self.assigned.get(task.id, "")
        if model not in self.active:
            if task.from_task or task.kernel is not None:  # a handed-back kernel, or a knob variant
                model = self.assigned.get(task.from_task, "")
                model = model if model in self.active else self._largest()
            else:
                model = self._next()
            if task.kernel is None or task.from_task:  # a model's own task: counted as that model's
                self.assigned[task.id] = model
        return task.model_copy(update={"model": model})

    def watch(self, result: TaskResult, config: SearchConfig, event: Callable[..., None]) -> str:
        """Why the run has no model left, or "" while one answers. With several, a model that keeps failing
        is taken out here, with a ``model_out`` event saying why."""
        if not config.llm:
            return ""
        if not self.several:
            return self.single.lost(result, config)
        model = self.assigned.get(result.task_id, "")
        if model in self.active and (why := self._failing(result, config, model)):
            self.stats[model] = self.stats[model].model_copy(update={"out_reason": why, "share": 0.0})
            self._reshare()
            event("model_out", model=model, task=result.task_id, reason=why, left=self.active)
        if self.active:
            return ""
        return "every model is out of rotation: " + "; ".join(
            f"{m}: {s.out_reason}" for m, s in self.stats.items()
        )

    def end_round(self, round_: int, results: list[TaskResult], beam: list[BeamEntry]) -> None:
        """Count the round's results into each model's numbers (once: a resumed round is counted when it
        ends), then share the tasks out anew."""
        if not self.several or round_ in self.counted:
            return
        kept = {e.id for e in beam}
        for r in results:
            # a round resumed reuses results whose assignment the stopped session made: the result names it
            model = self.assigned.get(r.task_id) or (r.model if _model_made(r) else "")
            if model not in self.stats:
                continue
            s = self.stats[model]
            ms = r.ranked_ms if r.status == "ok" else None
            best = ms is not None and (s.best_ms is None or ms < s.best_ms)
            replies = sum(e.purpose in ("optimize", "refine") and e.call.status == "ok" for e in r.exchanges)
            self.stats[model] = s.model_copy(update={
                "tasks": s.tasks + (not r.from_task), "replies": s.replies + replies,
                "kernels": s.kernels + (r.kernel is not None), "verified": s.verified + verified(r),
                "entered_beam": s.entered_beam + (r.task_id in kept), "failed": s.failed + failed_task(r),
                "tokens": s.tokens + r.tokens, "cost_usd": s.cost_usd + r.cost_usd,
                "best_id": r.task_id if best else s.best_id, "best_ms": ms if best else s.best_ms,
            })  # fmt: skip
        self.counted.append(round_)
        self._reshare()

    def state(self) -> ModelsState:
        if not self.several:
            return ModelsState()
        return ModelsState(stats=self.table(), credit=dict(self.credit), assigned=dict(self.assigned),
                           counted_rounds=list(self.counted))  # fmt: skip

    def table(self) -> list[ModelStats]:
        """Each model's counts and share, in the run's order; empty with one model."""
        return list(self.stats.values()) if self.several else []

    def _failing(self, result: TaskResult, config: SearchConfig, model: str) -> str:
        """Why ``result`` takes its model out: its server does not answer a one-line request after a task
        whose every request got no reply, or ``OUT_AFTER`` tasks in a row got no usable kernel."""
        if result.from_task:
            return ""
        if not failed_task(result):
            self.streak[model] = 0 if result.kernel is not None else self.streak[model]
            return ""
        self.streak[model] += 1
        if unreachable := model_unreachable(result.exchanges):
            from workers.proposers.llm_client import LLMUnavailable

            try:
                self.check(config, model)
            except LLMUnavailable as e:
                return f"{e}; task {result.task_id}'s requests got no reply either ({unreachable[:300]})"
        if self.streak[model] >= OUT_AFTER:
            return f"{OUT_AFTER} tasks in a row got no usable kernel of it, the last {result.task_id}: {result.reason[:300]}"
        return ""

    def _reshare(self) -> None:
        for model, share in shares(list(self.stats.values())).items():
            self.stats[model] = self.stats[model].model_copy(update={"share": share})
            if not share:
                self.credit.pop(model, None)

    def _next(self) -> str:
        """Smooth weighted round-robin: each model gains its share, the one with most credit is asked and
        pays one; over any run of tasks each model is asked within one task of its share."""
        active = self.active
        for m in active:
            self.credit[m] = self.credit.get(m, 0.0) + self.stats[m].share
        chosen = max(active, key=lambda m: round(self.credit[m], 9))  # the first of equals: the run's order
        self.credit[chosen] -= 1.0
        return chosen

    def _largest(self) -> str:
        return max(self.active, key=lambda m: self.stats[m].share)

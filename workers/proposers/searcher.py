"""The optimiser: a searcher over a kernel's joint knob space (STYLE.md 14).

``suggest(n)`` gives the next points to try, never one suggested before; ``observe`` learns from each
timed (or failed) candidate; ``state()`` is plain data for the resume point, and a Searcher built from
it suggests exactly what the original would have next. No Ray, no GPU.

Strategy: when the whole space fits the budget, exhaustive (the ``first`` points, then the untried point
nearest the best so far); otherwise model-based, Optuna's TPE sampler (ask/tell), seeded, with the
``first`` points enqueued. See docs/optimiser.md for the measurement behind the choice.

Learned limits: a point that failed for lack of resources (shared memory, registers, spills) is never
suggested again, and neither is any point that dominates it (the same warps and grid, every block and
the stages at least as large). Other failures rule out only the point itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from beamsearch.schema import Record
from workers.proposers.knob_space import KnobSpace


class Observation(Record):
    point: dict[str, int]
    time_ms: float | None  # None when the candidate failed
    failure: str | None = None  # the failure's text ("compile_failed: out of resource: shared memory ...")


class SearcherState(Record):
    """Everything a Searcher learned; goes in the resume point (state.json)."""

    space_dims: list[str] = []  # the names of the space it searched, to refuse another space's state
    strategy: str = ""  # "exhaustive" or "tpe"
    suggested: list[dict[str, int]] = []  # in order
    observations: list[Observation] = []
    limits: list[dict[str, int]] = []  # points that ran out of resources: they and points above are out


class Searcher:
    """Suggests points of ``space``; deterministic for ``seed`` and the observations it is given."""

    def __init__(self, space: KnobSpace, seed: int, state: SearcherState | None = None,
                 first: Sequence[dict[str, int]] = (), budget: int | None = None) -> None:  # fmt: skip
        """``first``: points to try first, in order (the roofline's preference; missing names keep the
        start value). ``budget``: the candidates the caller means to spend; the space is searched
        exhaustively when it has at most that many points. Raises ValueError on a ``state`` of another
        space or a ``first`` point with an unknown name or illegal value."""
        raise NotImplementedError

    def suggest(self, n: int) -> list[dict[str, int]]:
        """Up to ``n`` new points never suggested before and not ruled out; [] when none is left."""
        raise NotImplementedError

    def observe(self, point: dict[str, int], time_ms: float | None, failure: str | None = None) -> None:
        """Learn a point's result: its time, or a failure (``time_ms`` None, ``failure`` its text)."""
        raise NotImplementedError

    def state(self) -> SearcherState:
        raise NotImplementedError

    def best(self) -> tuple[dict[str, int], float] | None:
        """The fastest observed point and its time; None before any success."""
        raise NotImplementedError


def first_points(space: KnobSpace, bottleneck: str) -> list[dict[str, int]]:
    """Points to try first for a roofline class (``memory``, ``compute``, ``underutilized``, other):
    the start, then moves of one knob from it in the direction the class points. An order, never a
    limit: the searcher goes on to the whole space."""
    raise NotImplementedError

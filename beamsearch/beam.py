"""The beam: which tasks a round runs, which results are duplicates, and which kernels survive.

Pure functions over the records in beamsearch/records/state.py: no Ray, no GPU, no files.
"""

from __future__ import annotations

import ast
import functools
import hashlib

from beamsearch.records.schema import Attempt
from beamsearch.records.state import BeamEntry, BeamState, Task, TaskResult

HISTORY_IN_TASK = 40  # recent attempts a proposer sees (the tuner needs hashes, a model the lessons)


@functools.lru_cache(maxsize=4096)  # the driver ranks the round's candidates again each time a worker idles
def code_hash(source: str) -> str:
    """Same code, whatever the comments, docstrings, blank lines or formatting."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        text = "\n".join(line.rstrip() for line in source.strip().splitlines())
    else:
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                    and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):  # fmt: skip
                node.body = body[1:] or [ast.Pass()]
        text = ast.unparse(tree)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def plan_round(state: BeamState, round_: int) -> list[Task]:
    """A model's or a replay's round: beam width x directions tasks, in a fixed order, so a resumed round
    plans the same task ids (the offline optimiser plans its own: ``beamsearch.optimiser``).

    While the beam holds fewer parents than its width (round 1 has only the input), the round's tasks are
    shared out over the parents there are, each taking more directions: every round keeps the
    fan-out the workers were sized for. A replay's task takes the recorded round's kernel of its place in
    the round: those kernels belong to no parent, and two parents' first tasks would replay the same one."""
    config = state.config
    history = state.history[-HISTORY_IN_TASK:]
    parents = state.beam[: config.beam_width]
    count, n = config.beam_width * config.directions, len(parents)
    tasks = []
    for p, parent in enumerate(parents):
        for direction in range(count // n + (p < count % n)):
            tasks.append(Task(id=f"r{round_}-t{len(tasks)}", round=round_, parent=parent, spec=state.spec,
                              direction=len(tasks) if config.replay and not config.llm else direction,
                              config=config, floor=state.floor, history=history))  # fmt: skip
    return tasks


def mark_duplicate(result: TaskResult, seen: dict[str, str]) -> TaskResult:
    """A candidate whose code an earlier candidate had is recorded as a duplicate of it, and not ranked."""
    if result.kernel is None:
        return result
    key = code_hash(result.kernel.source)
    if key in seen and seen[key] != result.task_id:
        return result.model_copy(update={"status": "duplicate", "reason": f"same code as {seen[key]}"})
    seen[key] = result.task_id
    return result


def mark_same_compiled(result: TaskResult, fastest: dict[str, tuple[str, float]]) -> TaskResult:
    """A timed candidate that launches the same compiled code as an earlier one, and is no faster, is a
    duplicate of it; a faster one becomes the one to beat. ``fastest``: compiled hash -> (id, ms)."""
    key, ms = result.compiled_hash, result.ranked_ms
    if result.status != "ok" or key is None or ms is None:
        return result
    first = fastest.get(key)
    if first is not None and first[0] != result.task_id and first[1] <= ms:
        return result.model_copy(update={"status": "duplicate",
                                         "reason": f"same compiled code as {first[0]} ({first[1]:.4f} ms)"})  # fmt: skip
    fastest[key] = (result.task_id, ms)
    return result


def attempt_of(result: TaskResult) -> Attempt | None:
    if result.kernel is None:
        return None
    return Attempt(kernel_hash=result.kernel.hash, note=result.kernel.note or result.task_id,
                   outcome=f"{result.status}: {result.reason}"[:300], lesson=result.lesson)  # fmt: skip


def entry_of(result: TaskResult) -> BeamEntry | None:
    ms = result.ranked_ms
    if result.status != "ok" or result.kernel is None or ms is None:
        return None
    return BeamEntry(id=result.task_id, kernel=result.kernel, ranked_ms=ms, round=result.round,
                     compiled_hash=result.compiled_hash,
                     profile=result.profile if result.profile and not result.profile.skipped else None,
                     roofline=result.roofline)  # fmt: skip


def select_beam(beam: list[BeamEntry], results: list[TaskResult], width: int) -> list[BeamEntry]:
    """The ``width`` fastest of the old beam and the round's ok candidates, one per distinct source and
    per distinct compiled code."""
    pool = beam + [e for e in map(entry_of, results) if e is not None]
    kept: list[BeamEntry] = []
    codes: set[str] = set()
    for entry in sorted(pool, key=lambda e: (e.ranked_ms, e.round, e.id)):
        keys = {code_hash(entry.kernel.source)} | ({f"compiled:{entry.compiled_hash}"} if entry.compiled_hash else set())
        if not keys & codes:
            codes |= keys
            kept.append(entry)
    return kept[:width]


def screen_above_ms(beam: list[BeamEntry], results: list[TaskResult], width: int, ratio: float | None) -> float | None:
    """``ratio`` times the slowest kernel the beam would keep if the round ended now, or None while that
    beam would not be full (any timed candidate would enter it). The beam only gets faster as results come
    in, so a candidate timed slower than this cannot enter it; the margin covers a timing's noise."""
    if ratio is None:
        return None
    kept = select_beam(beam, results, width)
    return kept[-1].ranked_ms * ratio if len(kept) == width else None

"""scripts/candidate_timeline.py draws each candidate's waits and work on one clock."""

from __future__ import annotations

from beamsearch.records.schema import Kernel, TimingResult, Verdict
from beamsearch.records.state import TaskResult, VerifyTry
from scripts import candidate_timeline


def _candidate(k: int, started_at: float, slot_s: float) -> TaskResult:
    """A candidate whose child waited ``slot_s`` for a place, checked for 2 s, then waited 1 s for the lock
    and measured for 1 s."""
    steps = {"slot_taken": slot_s, "in_use": slot_s, "kernel_imported": slot_s + 0.5, "cache_checks": slot_s + 2.0}
    timing = TimingResult(target="k.py", status="ok", steps_s={"hashed": 0.0, "locked": 1.0, "measured": 2.0, "checked": 2.0})
    verdict = Verdict(passed=True, status="ok", reason="", kernel_path="k.py", started_at=started_at, steps_s=steps,
                      timing=timing)  # fmt: skip
    kernel = Kernel(source=f"x = {k}", origin="tuner")
    return TaskResult(task_id=f"r1-t{k}", parent_id="input", round=1, direction=k, status="ok", reason="",
                      kernel=kernel, tries=[VerifyTry(kernel=kernel, verdict=verdict)], worker=f"host/w{k}")  # fmt: skip


def test_waits_and_work_are_drawn_on_one_clock() -> None:
    first, second = _candidate(0, 100.0, 0.0), _candidate(1, 100.0, 4.0)  # the second waits for the first
    assert [m for m, _, _ in candidate_timeline.phases(second)] == ["s", "c", "w", "T"]
    lines = candidate_timeline.draw([second, first], step_s=1.0)
    assert lines[0].endswith("r1-t0         w0 |ccwT    | 0.0 s") and lines[1].endswith("|ssssccwT| 0.0 s")  # by start, id
    assert "checks at once" in lines[2] and lines[2].endswith("|11  11  |")
    assert lines[3].endswith("|   T   T|")
    assert "8.0 s drawn; some check running 50 % of it, a timing measuring 25 %" in lines[4]
    assert "mean checks at once while any ran 1.00" in lines[4]


def test_a_candidate_without_a_verification_is_left_out() -> None:
    bare = TaskResult(task_id="r1-t9", parent_id="input", round=1, direction=0, status="no_proposal", reason="")
    assert candidate_timeline.phases(bare) == []
    assert candidate_timeline.draw([bare], step_s=1.0) == ["no candidate of this round has a verification with its steps"]


def test_the_compile_ahead_of_the_place_is_drawn_before_the_wait_for_it() -> None:
    ahead = _candidate(2, 100.0, 3.0)
    ahead.tries[0].verdict.steps_s["compiled_ahead"] = 1.0  # loaded and compiled in 1 s, then 2 s for a place
    assert [m for m, _, _ in candidate_timeline.phases(ahead)] == ["a", "s", "c", "w", "T"]
    assert candidate_timeline.draw([ahead], step_s=1.0)[0].endswith("|assccwT| 0.0 s")

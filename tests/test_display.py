"""The round's console line, where main's and the LLM branch's additions meet: every status that is not
ok, by name (an inconclusive one with what it means), and the tokens and cost the round spent."""

from __future__ import annotations

import io

from rich.console import Console

from beamsearch.display import Display
from beamsearch.records.state import RoundRecord, TaskResult


def _result(task_id: str, status: str) -> TaskResult:
    return TaskResult(task_id=task_id, parent_id="input", round=1, direction=0, status=status, reason="why")


def _round_line(results: list[TaskResult], record: RoundRecord) -> str:
    screen = io.StringIO()
    display = Display(False, lambda event: None, Console(file=screen, force_terminal=False, width=300))
    display.round_start(1, len(results), 0)
    for r in results:
        display.candidate(r)
    display.round_end(record, speedup=None)
    return next(line for line in screen.getvalue().splitlines() if line.startswith("round 1"))


def test_the_round_line_names_each_status_not_ok_and_the_tokens_spent() -> None:
    results = [
        _result("r1-t0", "inconclusive"),
        _result("r1-t1", "no_proposal"),
        _result("r1-t2", "rejected"),
    ]
    record = RoundRecord(round=1, tasks=3, ok=0, failed=0, inconclusive=1, tokens=1234, cost_usd=0.5)
    line = _round_line(results, record)
    assert "0/3 ok" in line
    assert "1 inconclusive (disturbed by other processes on the GPU)" in line
    assert "1 no_proposal" in line and "1 rejected" in line
    assert "1234 tokens ($0.5000)" in line


def test_a_round_all_ok_and_without_a_model_says_none_and_no_tokens() -> None:
    line = _round_line([_result("r1-t0", "ok")], RoundRecord(round=1, tasks=1, ok=1, failed=0))
    assert "(not ok: none)" in line and "tokens" not in line and "inconclusive" not in line

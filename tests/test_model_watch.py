"""The driver's watch for a model lost mid-run (beamsearch/model_watch.py), with a stand-in check."""

from __future__ import annotations

from beamsearch.model_watch import ModelWatch
from beamsearch.records.config import SearchConfig
from beamsearch.records.state import TaskResult
from tests.conftest import DATA
from workers.proposers.llm import Exchange
from workers.proposers.llm_client import LLMCall, LLMUnavailable

CONFIG = SearchConfig(problem=str(DATA / "scale_rows_problem.py"), llm="openai/m")


def result(*statuses: str, purpose: str = "optimize") -> TaskResult:
    exchanges = [
        Exchange(purpose=purpose, prompt="p", call=LLMCall(status=s, reason="why")) for s in statuses
    ]
    return TaskResult(task_id="r1-t0", parent_id="input", round=1, direction=0, status="no_proposal", reason="r",
                      exchanges=exchanges)  # fmt: skip


def test_every_unanswered_task_is_checked_even_right_after_a_passed_check() -> None:
    answers = iter([None, LLMUnavailable("LLM 'openai/m' is unavailable: the address is unreachable")])
    checks: list[str] = []

    def check(config: SearchConfig) -> None:
        checks.append(config.llm)
        if (e := next(answers)) is not None:
            raise e

    watch = ModelWatch(check)
    assert watch.lost(result("timeout"), CONFIG) == ""  # a bad minute: the model answers the check
    assert "unreachable" in watch.lost(result("server_error", "server_error"), CONFIG)
    assert len(checks) == 2


def test_a_task_the_model_answered_is_not_a_lost_model() -> None:
    watch = ModelWatch(lambda config: (_ for _ in ()).throw(AssertionError("not checked")))
    assert watch.lost(result("ok", "server_error"), CONFIG) == ""  # it answered once: garbage, not gone
    assert watch.lost(result("server_error", purpose="diagnose"), CONFIG) == ""  # no kernel was asked for
    assert watch.lost(result("server_error"), CONFIG.model_copy(update={"llm": None})) == ""

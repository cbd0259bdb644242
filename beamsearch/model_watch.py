"""Notices a model lost mid-run, so a run whose model is gone says so instead of ending "best: input".

A task whose every request for a kernel got no reply at all (after the client's retries) is the sign;
one tiny request from the driver (the pre-flight's) then tells a lost model from a bad minute. The
run's ``on_model_lost`` says what follows: stop (resumable), or go on with the offline tuner.
"""

from __future__ import annotations

from collections.abc import Callable

from beamsearch.records.config import SearchConfig
from beamsearch.records.state import TaskResult
from workers.proposers.llm import model_unreachable


class ModelLost(RuntimeError):
    """The model stopped answering mid-run; the message says what failed and how to go on."""


def preflight(config: SearchConfig, model: str = "") -> None:
    """One tiny request to ``model`` (one of the run's; "": its first); raises ``LLMUnavailable`` saying what
    is wrong."""
    from workers.actor.task import llm_config
    from workers.proposers.llm_client import LLMClient

    LLMClient(llm_config(config, model).model_copy(update={"max_retries": 1})).preflight()


class ModelWatch:
    """Checks at every task that got no reply at all: one tiny request each, and no window in which a
    burst of failures after a passed check goes unchecked (the run's last tasks may be that burst)."""

    def __init__(self, check: Callable[[SearchConfig], None] = preflight) -> None:
        self.check = check

    def lost(self, result: TaskResult, config: SearchConfig) -> str:
        """Why the model is gone, or "" while it answers (or the run has none)."""
        from workers.proposers.llm_client import LLMUnavailable

        if not config.llm or result.status != "no_proposal":
            return ""
        failure = model_unreachable(result.exchanges)
        if not failure:
            return ""
        try:
            self.check(config)
        except LLMUnavailable as e:
            return f"{e}; task {result.task_id}'s requests got no reply either ({failure[:300]})"
        return ""

"""The records of a run's model requests, as plain data: one request's outcome (``LLMCall``) and one
exchange of a task with the model (``Exchange``); where a model is (``ModelEndpoint``) and, for a run of
several, what each one's candidates came to and its share of the tasks (``ModelStats``, ``ModelsState``).
Shared data: the task's result, the trace and the resume point hold them (``beamsearch.records.state``,
``beamsearch.trace``); the LLM client and proposer make the calls, ``beamsearch.model_shares`` the shares."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from beamsearch.records.schema import Record

LLMStatus = Literal["ok", "timeout", "rate_limited", "server_error", "auth_error", "bad_request", "error"]
Purpose = Literal["diagnose", "repair", "optimize", "refine", "reflect"]


class LLMCall(Record):
    status: LLMStatus
    text: str = ""
    reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = Field(0.0, description="litellm's completion_cost; 0.0 for models it has no price for")
    latency_s: float = Field(0.0, description="wall time of the whole call, retries and backoff included")
    attempts: int = 0
    model: str = ""


class Exchange(Record):
    purpose: Purpose
    prompt: str
    call: LLMCall
    parse_error: str = ""


class ModelEndpoint(Record):
    """One model of the run and how to reach it: a litellm model string, its server's address and the
    environment variable holding its key (none: the provider's defaults, ``docs/models.md``)."""

    model: str
    api_base: str | None = None
    api_key_env: str | None = None


class ModelStats(Record):
    """One model's part of a run of several (``beamsearch.model_shares``), counted from its tasks' results."""

    model: str
    tasks: int = Field(
        0, description="tasks that asked it for a rewrite (its replies' other kernels not counted)"
    )
    replies: int = Field(
        0, description="rewrite and repair replies it gave (a request that got none: not counted)"
    )
    kernels: int = Field(
        0, description="candidates its replies gave: its tasks' own and the kernels they handed back"
    )
    verified: int = Field(0, description="of those, kernels that passed verification (after any repair)")
    entered_beam: int = Field(0, description="of those, kernels the beam took in at the end of their round")
    failed: int = Field(
        0, description="tasks that got no usable kernel of it: errors, timeouts, replies with no code"
    )
    best_id: str = Field("", description="its fastest timed candidate")
    best_ms: float | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    share: float = Field(0.0, description="the part of the model tasks it gets now (0 once out of rotation)")
    out_reason: str = Field("", description="why it was taken out of rotation; empty while it is in")


class ModelsState(Record):
    """The rotation's part of the resume point: each model's counts and share, and which model each task
    asked (a handed-back kernel's task asks the model whose reply held it)."""

    stats: list[ModelStats] = Field([], description="in the order of the run's models")
    credit: dict[str, float] = Field({}, description="by model: its smooth weighted round-robin credit")
    assigned: dict[str, str] = Field({}, description="task id -> the model it asked")
    counted_rounds: list[int] = Field([], description="rounds whose results are in the counts")

"""The records of a run's model requests, as plain data: one request's outcome (``LLMCall``) and one
exchange of a task with the model (``Exchange``). Shared data: the task's result and the trace hold
them (``beamsearch.records.state``, ``beamsearch.trace``); the LLM client and proposer make them."""

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

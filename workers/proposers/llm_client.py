"""A thin client over litellm: one prompt in, one ``LLMCall`` record out, provider failures as values.

litellm is imported only when a client is created, so offline paths (replay, rules, tests) never pay
its import time or its network habits. Retries (429, 5xx, timeouts, lost connections) are ours, with
exponential backoff and jitter; litellm's and the OpenAI SDK's own retries are switched off so one
``attempts`` count is the truth. ``preflight`` makes one tiny call so a bad key, model or address stops
a run before any GPU work.
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from typing import Any

from pydantic import Field

from beamsearch.records.llm import LLMCall, LLMStatus
from beamsearch.records.schema import Record

log = logging.getLogger(__name__)

RETRYABLE: frozenset[str] = frozenset({"timeout", "rate_limited", "server_error"})
MAX_WAIT_S = 60.0  # cap on one backoff or Retry-After wait
REASON_CHARS = 600
MIN_ATTEMPT_S = 5.0  # an attempt with less time than this before the caller's deadline is not started


class LLMUnavailable(RuntimeError):
    """The preflight call failed: the model cannot be used with this configuration."""


class LLMConfig(Record):
    model: str = Field(description="a litellm model string: 'openai/gpt-4o', 'anthropic/...', 'ollama/...'")
    api_base: str | None = Field(None, description="for openai/ and hosted_vllm/ models, with the /v1 suffix")
    api_key_env: str | None = Field(None, description="env var holding the key; None: litellm's usual ones")
    timeout_s: float = Field(120.0, gt=0, description="per attempt; httpx applies it to connect, each read")
    max_retries: int = Field(3, ge=0, description="retries after the first attempt: 429, 5xx, timeouts")
    backoff_s: float = Field(2.0, ge=0, description="first retry's delay; doubles each time, with jitter")
    max_concurrency: int = Field(4, ge=1, description="requests in flight at once, across threads")
    temperature: float = 0.2
    max_tokens: int = 8192


def _import_litellm() -> Any:
    # Before the import: the bundled price map and beta-header list instead of fetches from GitHub, and
    # no silent loading of a stray .env from the working directory (keys come from the process env).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "True")
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
    import litellm

    litellm.telemetry = False  # gone from recent releases; harmless where it is
    litellm.suppress_debug_info = True  # else unknown models print a provider list to stdout
    litellm.disable_hf_tokenizer_download = True
    for name in ("callbacks", "success_callback", "failure_callback", "_async_success_callback"):
        if getattr(litellm, name, None):  # empty by default; someone in this process set a logger
            log.warning("litellm.%s is set (%s): those loggers may send calls over the network", name,
                        getattr(litellm, name))  # fmt: skip
    return litellm


def _retry_after_s(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "litellm_response_headers", None)
    try:
        return float(headers.get("retry-after")) if headers else None
    except (TypeError, ValueError):
        return None  # absent, or an HTTP date: the exponential backoff applies


def _classify(exc: Exception) -> tuple[LLMStatus, str]:
    """Map litellm's exception to a status. By status code, since its classes vary by provider."""
    import httpx
    from litellm.exceptions import Timeout

    text = " ".join(str(exc).split())[:REASON_CHARS]
    link: BaseException | None = exc
    for _ in range(12):  # a refused or unresolvable address surfaces as a 500 "Connection error."
        if link is None:
            break
        if isinstance(link, httpx.ConnectError | ConnectionRefusedError):
            return "server_error", f"cannot connect: {link or type(link).__name__}"
        link = link.__cause__ or link.__context__
    code = getattr(exc, "status_code", None)
    if isinstance(exc, Timeout | httpx.TimeoutException) or code == 408:
        return "timeout", text
    lowered = text.lower()
    if "missing credentials" in lowered or ("api key" in lowered and "missing" in lowered):
        return "auth_error", text  # the OpenAI SDK reports a missing key as a 500
    if not isinstance(code, int):
        return "error", f"{type(exc).__name__}: {text}"
    if code == 429:
        return "rate_limited", f"HTTP 429: {text}"
    if code in (401, 403):
        return "auth_error", f"HTTP {code}: {text}"
    if code >= 500:
        return "server_error", f"HTTP {code}: {text}"
    if code >= 400:
        return "bad_request", f"HTTP {code}: {text}"
    return "error", f"HTTP {code}: {text}"


OPENAI_COMPATIBLE = ("openai/", "hosted_vllm/")  # litellm prefixes whose SDK insists on some key
NO_KEY = "no-key"  # sent to a local OpenAI-compatible server (vLLM, Ollama's /v1, llama.cpp) that wants none


class LLMClient:
    """Thread-safe: at most ``max_concurrency`` requests in flight across all threads using it.

    ``api_key``: the key itself, when the caller read it (the driver, which forwards it to the run's
    LLM service); else it is read from ``config.api_key_env`` here."""

    def __init__(self, config: LLMConfig, api_key: str | None = None) -> None:
        self.config = config
        self._api_key = api_key
        self._litellm = _import_litellm()
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        try:
            self._schema_ok = bool(self._litellm.supports_response_schema(model=config.model))
        except Exception:  # unknown model or provider
            self._schema_ok = False
        provider, _, name = config.model.partition("/")
        try:  # whether the provider takes OpenAI's n (several choices in one request)
            params = self._litellm.get_supported_openai_params(model=name, custom_llm_provider=provider) or []
        except Exception:  # unknown provider
            params = []
        self._n_ok = "n" in params

    def complete(self, prompt: str, *, system: str | None = None, json_schema: dict | None = None,
                 deadline: float | None = None) -> LLMCall:  # fmt: skip
        """One completion. Never raises for provider failures: the LLMCall carries status and reason.
        ``deadline`` (``time.time()``): no attempt waits past it, and none starts that could not finish
        by it, so the caller's task ends with what it paid for instead of being cut off mid-request."""
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        extra: dict[str, Any] = {}
        if json_schema is not None and self._schema_ok:  # else the prompt alone asks for the format
            # OpenAI's rule for the name: letters, digits, _ and -, at most 64
            name = re.sub(r"[^A-Za-z0-9_-]", "_", str(json_schema.get("title", "reply")))[:64]
            schema = {"name": name, "schema": json_schema}
            extra["response_format"] = {"type": "json_schema", "json_schema": schema}
        return self._run(messages, self.config.max_tokens, extra, deadline=deadline)

    def complete_many(self, prompt: str, n: int, *, deadline: float | None = None) -> list[LLMCall]:
        """``n`` replies to one prompt: one request with litellm's ``n`` where the provider takes it (a
        server that answers fewer choices gets requests for the rest), else ``n`` requests at once (within
        ``max_concurrency``). The tokens and cost of a request of several choices are on its first reply."""
        if n <= 1:
            return [self.complete(prompt, deadline=deadline)]
        messages = [{"role": "user", "content": prompt}]
        calls: list[LLMCall] = []
        if self._n_ok:
            calls = self._run(messages, self.config.max_tokens, {"n": n}, deadline=deadline, choices=n)
            if calls[0].status != "ok":
                return calls
        missing = n - len(calls)
        if missing:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=missing) as pool:
                calls += list(pool.map(lambda _: self.complete(prompt, deadline=deadline), range(missing)))
        return calls

    def preflight(self) -> None:
        """One tiny call; raise LLMUnavailable naming the model, the address and what went wrong."""
        call = self._run([{"role": "user", "content": "Reply with the word OK."}], 16, {}, allow_empty=True)
        if call.status == "ok":
            log.info("LLM %s answered the preflight in %.1f s", self.config.model, call.latency_s)
            return
        hint = {
            "auth_error": "the API key is missing or was rejected"
            + (f" (read from ${self.config.api_key_env})" if self.config.api_key_env else ""),
            "bad_request": "the request was refused (unknown model, wrong api_base path, or a bad parameter)",
            "timeout": f"no answer within timeout_s={self.config.timeout_s:g}",
            "rate_limited": "rate limited on every attempt",
            "server_error": "the address is unreachable" if call.reason.startswith("cannot connect")
            else "the server failed",
        }.get(call.status, "unexpected failure")  # fmt: skip
        where = self.config.api_base or "the provider's default address"
        raise LLMUnavailable(
            f"LLM {self.config.model!r} at {where} is unavailable: {hint} "
            f"[{call.status} after {call.attempts} attempt(s)]: {call.reason}"
        )

    def _run(self, messages: list[dict], max_tokens: int, extra: dict, allow_empty: bool = False,
             deadline: float | None = None, choices: int = 0) -> Any:  # fmt: skip
        """One request, retried; its LLMCall, or with ``choices`` a list of one LLMCall per choice returned."""
        cfg, start = self.config, time.monotonic()

        def done(status: LLMStatus, attempts: int, **kw: Any) -> Any:
            call = LLMCall(status=status, attempts=attempts, model=cfg.model, latency_s=time.monotonic() - start,
                           **kw)  # fmt: skip
            return [call] if choices else call

        api_key = self._api_key
        if api_key is None and cfg.api_key_env:
            api_key = os.environ.get(cfg.api_key_env)
            if not api_key:
                return done("auth_error", 0, reason=f"environment variable {cfg.api_key_env} is not set")
        if api_key is None and cfg.api_base and cfg.model.startswith(OPENAI_COMPATIBLE):
            api_key = os.environ.get("OPENAI_API_KEY") or NO_KEY
        kwargs = dict(model=cfg.model, messages=messages, api_base=cfg.api_base, api_key=api_key,
                      timeout=cfg.timeout_s, temperature=cfg.temperature, max_tokens=max_tokens,
                      max_retries=0, num_retries=0,  # else the OpenAI SDK retries twice on its own
                      drop_params=True, **extra)  # fmt: skip
        # drop_params: a parameter the model does not take (o-series temperature) is dropped, not a 400
        for attempt in range(1, cfg.max_retries + 2):
            with self._slots:  # held for the request only, not the backoff
                left_s = deadline - time.time() if deadline is not None else cfg.timeout_s
                if deadline is not None and left_s < MIN_ATTEMPT_S:
                    return done("timeout", attempt - 1, reason=f"the task's time for the model ran out before "
                                f"attempt {attempt} (deadline passed waiting for a request slot or a retry)")  # fmt: skip
                kwargs["timeout"] = min(cfg.timeout_s, left_s)
                try:
                    response = self._litellm.completion(**kwargs)
                except Exception as e:  # litellm wraps every provider failure; classify, never raise
                    status, reason = _classify(e)
                    wait_s = _retry_after_s(e)
                else:
                    status, fields = self._read(response, allow_empty)
                    first = done(status, attempt, **fields)
                    if not choices or status != "ok":
                        return first
                    return first + [c for c in self._other_choices(response, first[0]) if c is not None]
            if status not in RETRYABLE or attempt > cfg.max_retries:
                note = f" (after {attempt} attempts)" if attempt > 1 else ""
                log.warning("LLM %s: %s%s: %s", cfg.model, status, note, reason)
                return done(status, attempt, reason=reason + note)
            backoff_s = cfg.backoff_s * 2 ** (attempt - 1) * random.uniform(0.5, 1.0)
            delay_s = min(MAX_WAIT_S, max(backoff_s, wait_s or 0.0))
            if deadline is not None and time.time() + delay_s + MIN_ATTEMPT_S > deadline:
                note = f" (after {attempt} attempts; no time left in the task for another)"
                log.warning("LLM %s: %s%s: %s", cfg.model, status, note, reason)
                return done(status, attempt, reason=reason + note)
            log.info(
                "LLM %s: %s (attempt %d), retry in %.2f s: %s", cfg.model, status, attempt, delay_s, reason
            )
            time.sleep(delay_s)
        raise AssertionError("unreachable")

    @staticmethod
    def _other_choices(response: Any, first: LLMCall) -> list[LLMCall | None]:
        """The replies of a request's choices after the first, as calls of no tokens or cost of their own
        (the request's are on the first); an empty choice is dropped (None)."""
        texts = [(c.message.content or "") for c in (response.choices or [])[1:]]
        return [first.model_copy(update={"text": t, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0,
                                         "reason": f"choice {i} of the same request"}) if t.strip() else None
                for i, t in enumerate(texts, 2)]  # fmt: skip

    def _read(self, response: Any, allow_empty: bool) -> tuple[LLMStatus, dict[str, Any]]:
        """The reply's text, tokens and cost; an empty reply is an error (retrying rarely helps)."""
        usage = getattr(response, "usage", None)
        fields: dict[str, Any] = dict(prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                                      completion_tokens=getattr(usage, "completion_tokens", 0) or 0)  # fmt: skip
        try:
            fields["cost_usd"] = float(self._litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # ModelNotMappedError: litellm has no price for this model
            fields["cost_usd"] = 0.0
        choice = response.choices[0] if response.choices else None
        fields["text"] = text = (choice.message.content if choice else None) or ""
        if not text.strip() and not allow_empty:
            finish = choice.finish_reason if choice else "no choices"
            return "error", {**fields, "reason": f"empty reply (finish_reason={finish})"}
        return "ok", fields

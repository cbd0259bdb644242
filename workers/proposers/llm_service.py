"""The run's one way to the model: a Ray actor the driver starts on its own node, that every worker calls.

It makes three things per run rather than per task or per worker:
- the concurrency limit: ``llm_concurrency`` requests in flight across all workers (the client's
  semaphore, in this one process);
- the API key: read from the driver's environment and handed to the actor, so no worker node needs it;
- the diagnosis of a parent: the first task to ask diagnoses it, tasks that ask meanwhile wait for that
  answer instead of sending the same request, and later tasks reuse it. A failed diagnosis is not kept.

Without Ray (tests that run task functions directly) the workers use a client of their own.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, NamedTuple

from beamsearch.records.schema import Diagnosis
from workers.proposers.llm import Exchange
from workers.proposers.llm_client import LLMCall, LLMClient, LLMConfig

log = logging.getLogger(__name__)

SERVICE_NAME = "beamsearch-llm"
THREADS = 64  # requests waiting on the semaphore or in their backoff each hold a thread; the semaphore limits


class SharedDiagnosis(NamedTuple):
    """A parent's diagnosis; where another task made it: that task's id and its exchanges (else "", [])."""

    diagnosis: Diagnosis
    task_id: str
    exchanges: list[Exchange]


class LLMService:
    def __init__(self, config: LLMConfig | list[LLMConfig], api_key: str | None | list[str | None]) -> None:
        """One model's settings and key, or, for a run of several, a list of each (in the same order); each
        model has a client of its own, so its ``max_concurrency`` is its own (a slow server holds only its slots)."""
        configs = config if isinstance(config, list) else [config]
        keys = api_key if isinstance(api_key, list) else [api_key]
        self.clients = {c.model: LLMClient(c, api_key=k) for c, k in zip(configs, keys, strict=True)}
        self.client = self.clients[configs[0].model]
        self._lock = threading.Lock()
        self._diagnoses: dict[str, SharedDiagnosis] = {}
        self._diagnosing: dict[str, threading.Event] = {}
        self._logs: dict[str, list[Exchange]] = {}  # by task id: its exchanges so far
        self._waiting: dict[str, float] = {}  # by task id: when its request in flight was sent

    def ready(self) -> bool:
        return True

    def complete(self, prompt: str, system: str | None = None, json_schema: dict | None = None,
                 deadline: float | None = None, task_id: str = "", model: str = "") -> LLMCall:  # fmt: skip
        with self._lock:
            self._waiting[task_id] = time.time()
        try:
            return self._client(model).complete(
                prompt, system=system, json_schema=json_schema, deadline=deadline
            )
        finally:
            with self._lock:
                self._waiting.pop(task_id, None)

    def complete_many(self, prompt: str, n: int, deadline: float | None = None, task_id: str = "",
                      model: str = "") -> list[LLMCall]:  # fmt: skip
        with self._lock:
            self._waiting[task_id] = time.time()
        try:
            return self._client(model).complete_many(prompt, n, deadline=deadline)
        finally:
            with self._lock:
                self._waiting.pop(task_id, None)

    def _client(self, model: str) -> LLMClient:
        """``model``'s client; "": the first (a run of one model)."""
        return self.clients.get(model, self.client)

    def note_exchange(self, task_id: str, exchange: Exchange) -> None:
        with self._lock:
            self._logs.setdefault(task_id, []).append(exchange)

    def take_task_log(self, task_id: str) -> tuple[list[Exchange], float | None]:
        """A task's exchanges so far and since when its request in flight waits (None: none waits); the
        driver takes them for a task cut off by its timeout, so what it paid for is not lost."""
        with self._lock:
            return self._logs.pop(task_id, []), self._waiting.pop(task_id, None)

    def claim_diagnosis(self, key: str, wait_s: float) -> SharedDiagnosis | None:
        """The parent's diagnosis if one was made (waiting while another task makes it); None: the caller
        makes it now, and must call ``put_diagnosis`` after, whether it worked or not. A task that waited
        ``wait_s`` (the longest a diagnosis can take) takes over: the one diagnosing is gone."""
        while True:
            with self._lock:
                if key in self._diagnoses:
                    return self._diagnoses[key]
                pending = self._diagnosing.get(key)
                if pending is None:
                    self._diagnosing[key] = threading.Event()
                    return None
            if not pending.wait(wait_s):
                with self._lock:  # the diagnosing task is gone (its worker lost, say): take over
                    if self._diagnosing.get(key) is pending:
                        self._diagnosing[key] = threading.Event()
                        return None

    def put_diagnosis(self, key: str, diagnosis: Diagnosis | None, task_id: str,
                      exchanges: list[Exchange]) -> None:  # fmt: skip
        """The claimed diagnosis: kept for later tasks unless None (failed: the next task asks again)."""
        with self._lock:
            if diagnosis is not None:
                self._diagnoses[key] = SharedDiagnosis(diagnosis, task_id, exchanges)
            event = self._diagnosing.pop(key, None)
        if event is not None:
            event.set()


def start_llm_service(config: LLMConfig | list[LLMConfig], api_key: str | None | list[str | None]) -> Any:
    """The run's service, on this (the driver's) node. Call after ``ray.init``; it lives as long as the job."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
    actor = ray.remote(max_concurrency=THREADS)(LLMService)
    handle = actor.options(name=SERVICE_NAME, num_cpus=0, scheduling_strategy=here).remote(config, api_key)
    ray.get(handle.ready.remote(), timeout=120)
    return handle


def find_llm_service() -> Any | None:
    """The run's service from a worker, or None outside Ray or when the driver started none."""
    import ray

    if not ray.is_initialized():
        return None
    try:
        return ray.get_actor(SERVICE_NAME)
    except ValueError:
        return None


class ServiceClient:
    """What ``LLMProposer`` needs of a client (``complete``), through the run's service, for one task:
    its requests end by the task's ``deadline``, and its exchanges are logged with the service as made."""

    def __init__(self, handle: Any, task_id: str, deadline: float | None, model: str = "") -> None:
        self.handle, self.task_id, self.deadline, self.model = handle, task_id, deadline, model

    def complete(self, prompt: str, *, system: str | None = None, json_schema: dict | None = None) -> LLMCall:
        import ray

        return ray.get(self.handle.complete.remote(prompt, system, json_schema, self.deadline, self.task_id,
                                                   self.model))  # fmt: skip

    def complete_many(self, prompt: str, n: int) -> list[LLMCall]:
        import ray

        return ray.get(self.handle.complete_many.remote(prompt, n, self.deadline, self.task_id, self.model))

    def note(self, exchange: Exchange) -> None:
        self.handle.note_exchange.remote(self.task_id, exchange)


def take_task_log(task_id: str) -> tuple[list[Exchange], float | None]:
    """From the driver: a task's logged exchanges and how long its request in flight has waited."""
    import ray

    service = find_llm_service()
    if service is None:
        return [], None
    exchanges, since = ray.get(service.take_task_log.remote(task_id), timeout=60)
    return exchanges, (time.time() - since) if since is not None else None

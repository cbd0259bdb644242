"""A worker's background compiles: the knob variant the driver expects it to run next is compiled while the
current one is checked and timed (``workers.harness.precompile_child``), in one child process kept for
job after job, which forks a fresh runner for each. A saving only: a job that fails, hangs or finds the
worker gone costs its variant nothing but that saving, and nothing waits for one."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections import deque
from pathlib import Path

from pydantic import ValidationError

from beamsearch.schema import RunSpec
from workers.harness.child_process import ChildSession
from workers.harness.precompile_child import STEP_LIMIT_S, PrecompileRequest, PrecompileResult

PRECOMPILE_CHILD = "workers.harness.precompile_child"
JOB_TIMEOUT_S = 2 * STEP_LIMIT_S + 10  # the runner's import and its compile, each within its own limit
log = logging.getLogger(__name__)


class Precompiler:
    """One thread and its child process for ``device``. ``submit`` never blocks: a job still waiting when the
    next comes is dropped, since the driver's newer guess is the likelier one. The thread alone runs the
    child's jobs (``ChildSession`` is for one thread); ``close`` only signals it."""

    def __init__(self, device: str, timeout_s: float = JOB_TIMEOUT_S) -> None:
        self.session = ChildSession(PRECOMPILE_CHILD, device, again=lambda result_json: True)
        self.timeout_s = timeout_s
        # the latest jobs and what became of each: a result, or how the child ended (tests, debugging)
        self.results: deque[tuple[PrecompileRequest, PrecompileResult | str]] = deque(maxlen=64)
        self._next: PrecompileRequest | None = None
        self._busy = self._closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._work, name="precompile", daemon=True)
        self._thread.start()

    def submit(self, spec: RunSpec, kernel_path: str | Path, seed: int) -> None:
        with self._changed:
            self._next = PrecompileRequest(spec=spec, kernel_path=str(kernel_path), seed=seed)
            self._changed.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Whether every job submitted so far has finished, waiting up to ``timeout_s``."""
        with self._changed:
            return self._changed.wait_for(lambda: self._next is None and not self._busy, timeout_s)

    def close(self) -> None:
        """End the job running, if any, with its process group (the thread then ends the session), and the
        thread."""
        with self._changed:
            self._closed, self._next = True, None
            child = self.session.child if self._busy else None
            self._changed.notify_all()
        if child is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.proc.pid, signal.SIGKILL)
        self._thread.join(30)

    def _work(self) -> None:
        try:
            while True:
                with self._changed:
                    self._changed.wait_for(lambda: self._next is not None or self._closed)
                    if self._closed:
                        return
                    job, self._next, self._busy = self._next, None, True
                outcome = self._run(job)
                with self._changed:
                    self.results.append((job, outcome))
                    self._busy = False
                    self._changed.notify_all()
        finally:
            self.session.close()

    def _run(self, job: PrecompileRequest) -> PrecompileResult | str:
        try:
            run = self.session.run(job, self.timeout_s)
        except Exception as e:  # noqa: BLE001 - our own error: this worker loses only the saving
            log.warning("precompile of %s: %s: %s", job.kernel_path, type(e).__name__, e)
            return f"{type(e).__name__}: {e}"
        if run.status != "ok":
            log.debug("precompile of %s: %s", job.kernel_path, run.describe_death())
            return run.describe_death()
        try:
            result = PrecompileResult.model_validate_json(run.result_json)
        except ValidationError as e:
            return f"unreadable result: {e}"
        if result.stopped:
            log.debug("precompile of %s stopped: %s", job.kernel_path, result.stopped)
        return result

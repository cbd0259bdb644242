"""A worker's background compiles: the knob variant the driver expects it to run next is compiled while the
current one is checked and timed (``workers.harness.precompile_child``), by one child process kept for
job after job, which forks a fresh runner for each. A saving only: a job that fails, hangs or finds the
worker gone costs its variant nothing but that saving, and nothing waits for one."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections import deque
from pathlib import Path

from pydantic import ValidationError

from beamsearch.schema import RunSpec
from workers.harness.child_process import ChildSession
from workers.harness.precompile_child import LOAD_LIMIT_S, PrecompileRequest, PrecompileResult

PRECOMPILE_CHILD = "workers.harness.precompile_child"
CLOSE_WAIT_S = 30.0
JOB_MARGIN_S = 10.0  # a job's time beyond its runner's two limits, before its process is killed
log = logging.getLogger(__name__)


class Precompiler:
    """One thread and its child process for ``device``. ``submit`` never blocks: a job still waiting when the
    next comes is dropped, since the driver's newer guess is the likelier one. The thread alone runs the
    child's jobs (``ChildSession`` is for one thread); ``close`` ends the child's process group and waits
    for the thread to end the session. Each reason a compile stopped is logged as a warning once."""

    def __init__(self, device: str) -> None:
        self.session = ChildSession(PRECOMPILE_CHILD, device, again=lambda result_json: True)
        # the latest jobs and what became of each: a result, or how the child ended (tests, debugging)
        self.results: deque[tuple[PrecompileRequest, PrecompileResult | str]] = deque(maxlen=64)
        self._warned: set[str] = set()
        self._next: PrecompileRequest | None = None
        self._busy = self._closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._work, name="precompile", daemon=True)
        self._thread.start()

    def submit(self, spec: RunSpec, kernel_path: str | Path, seed: int, compile_limit_s: float) -> None:
        with self._changed:
            self._next = PrecompileRequest(spec=spec, kernel_path=str(kernel_path), seed=seed,
                                           compile_limit_s=compile_limit_s)  # fmt: skip
            self._changed.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Whether every job submitted so far has finished, waiting up to ``timeout_s``."""
        with self._changed:
            return self._changed.wait_for(lambda: self._next is None and not self._busy, timeout_s)

    def close(self) -> None:
        """End the child's process group, whatever it runs, until the thread has ended the session."""
        with self._changed:
            self._closed, self._next = True, None
            self._changed.notify_all()
        deadline = time.monotonic() + CLOSE_WAIT_S
        while self._thread.is_alive() and time.monotonic() < deadline:
            child = self.session.child
            if child is not None and child.proc.returncode is None:  # not yet reaped: its pid is still its own
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.proc.pid, signal.SIGKILL)
            self._thread.join(0.5)

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
            run = self.session.run(job, LOAD_LIMIT_S + job.compile_limit_s + JOB_MARGIN_S)
        except Exception as e:  # noqa: BLE001 - our own error: this worker loses only the saving
            return self._stopped(job, f"{type(e).__name__}: {e}")
        if run.status != "ok":
            return self._stopped(job, run.describe_death())
        try:
            result = PrecompileResult.model_validate_json(run.result_json)
        except ValidationError as e:
            return self._stopped(job, f"unreadable result: {e}")
        if result.stopped:
            self._stopped(job, result.stopped)
        return result

    def _stopped(self, job: PrecompileRequest, why: str) -> str:
        """``why``, logged as a warning the first time it is seen (a reason that recurs, a GPU where this
        never works, is a lost saving worth one line, not one a variant)."""
        first_line = why.splitlines()[0][:200] if why else "?"
        if first_line not in self._warned:
            self._warned.add(first_line)
            log.warning("a compile ahead of its task stopped (%s): %s; the variant compiles in its own pass",
                        Path(job.kernel_path).parent.name, first_line)  # fmt: skip
        return why

"""A worker's background compiles: the knob variant the driver expects it to run next is compiled while the
current one is checked and timed (``workers.harness.precompile_child``), in one child process kept for
job after job. A saving only: a job that fails, hangs or finds the worker gone costs its variant nothing
but that saving, and nothing waits for one."""

from __future__ import annotations

import logging
import threading
from collections import deque
from pathlib import Path

from pydantic import ValidationError

from beamsearch.schema import RunSpec
from workers.harness.child_process import ChildSession
from workers.harness.precompile_child import PrecompileRequest, PrecompileResult

PRECOMPILE_CHILD = "workers.harness.precompile_child"
PRECOMPILE_TIMEOUT_S = 120.0  # a compile this long is a hang here: the variant's own pass meets it, and says so
log = logging.getLogger(__name__)


class Precompiler:
    """One thread and its child process for ``device``. ``submit`` never blocks: a job still waiting when the
    next comes is dropped, since the driver's newer guess is the likelier one."""

    def __init__(self, device: str, timeout_s: float = PRECOMPILE_TIMEOUT_S) -> None:
        self.session = ChildSession(PRECOMPILE_CHILD, device, again=lambda result_json: True)
        self.timeout_s = timeout_s
        # the latest jobs' (kernel path, result or how the child ended), for tests and debugging
        self.results: deque[tuple[str, PrecompileResult | str]] = deque(maxlen=64)
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
        """End the child process (a job it runs ends with it) and the thread."""
        with self._changed:
            self._closed, self._next = True, None
            self._changed.notify_all()
        self.session.close()
        self._thread.join(10)
        self.session.close()  # a process the job took while the first close ran

    def _work(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._next is not None or self._closed)
                if self._closed:
                    return
                job, self._next, self._busy = self._next, None, True
            outcome: PrecompileResult | str
            try:
                outcome = self._run(job)
            except Exception as e:  # noqa: BLE001 - our own error: this worker loses only the saving
                log.warning("precompile of %s: %s: %s", job.kernel_path, type(e).__name__, e)
                outcome = f"{type(e).__name__}: {e}"
            finally:
                with self._changed:
                    self.results.append((job.kernel_path, outcome))
                    self._busy = False
                    self._changed.notify_all()

    def _run(self, job: PrecompileRequest) -> PrecompileResult | str:
        run = self.session.run(job, self.timeout_s)
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

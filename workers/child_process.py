"""Running one job in a fresh Python process that can be killed, whatever the code in it does.

The parent writes the request as JSON, starts ``python -m <module> request.json result.json`` in its own
process group, and waits. A child that outlives the timeout is killed with its whole group (threads
cannot be killed; processes can). A child that dies without writing its result (a signal, ``os._exit``,
a CUDA fault that aborts) is reported as crashed with its exit status and the end of its stderr.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TAIL_CHARS = 4000


@dataclass(frozen=True)
class ChildRun:
    status: Literal["ok", "timeout", "crashed"]
    result_json: str
    returncode: int | None
    output_tail: str
    duration_s: float
    spawned_at: float  # epoch seconds, to split the child's wall time into start-up, work and exit

    def describe_death(self) -> str:
        if self.status == "timeout":
            return "killed after the time limit"
        code = self.returncode
        if code is not None and code < 0:
            try:
                how = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with status {code} without writing a result (os._exit or sys.exit in the kernel?)"
        last = self.output_tail.strip().splitlines()[-1:] or [""]
        return f"child process {how}" + (f"; last output: {last[0][:300]}" if last[0] else "")


def child_env(device: str) -> dict[str, str]:
    """The child's environment: the project importable, and Triton's interpreter on for CPU devices."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    if device.startswith("cpu"):
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def run_child(module: str, request: BaseModel, timeout_s: float, device: str) -> ChildRun:
    """Run ``python -m module`` on ``request``; never raises for anything the child does."""
    with tempfile.TemporaryDirectory(prefix="beamsearch-child-") as tmp:
        req_path, res_path, log_path = (Path(tmp) / n for n in ("request.json", "result.json", "output.log"))
        req_path.write_text(request.model_dump_json())
        spawned_at, start = time.time(), time.perf_counter()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", module, str(req_path), str(res_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_env(device),
                cwd=tmp,  # a kernel that writes files relative to its cwd writes here, then it is deleted
                start_new_session=True,
            )
            timed_out = False
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
        duration = time.perf_counter() - start
        tail = log_path.read_bytes()[-TAIL_CHARS:].decode(errors="replace")
        if timed_out:
            return ChildRun("timeout", "", None, tail, duration, spawned_at)
        result = res_path.read_text() if res_path.is_file() else ""
        status = "ok" if result else "crashed"
        return ChildRun(status, result, proc.returncode, tail, duration, spawned_at)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def write_result(path: str, result: BaseModel) -> None:
    """Child side: write the result atomically, so a half-written file is never read as a result."""
    tmp = f"{path}.tmp"
    Path(tmp).write_text(result.model_dump_json())
    os.replace(tmp, path)

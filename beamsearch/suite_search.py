"""One search of a suite as a process: its command line, its run with a time limit, and why it failed.

The same function runs a search on a local GPU slot and inside a Ray task on a cluster node. A search is
stopped as Ctrl-C would stop it (SIGINT: it saves a consistent trace and exits 130), and if it has not
ended ``grace_s`` later its whole process group (its private Ray among it) is killed.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

RUN_COMMAND = (sys.executable, "-m", "beamsearch.run")
GRACE_S = 60.0  # after SIGINT, for the search to save its trace and shut its Ray down
POLL_S = 0.2


@dataclass(frozen=True)
class SearchJob:
    """A problem to search: its folder name in the suite, what ``--problem`` gets, its run folder."""

    name: str
    problem: str
    out: Path
    resume: bool = False  # the run folder holds a search that started and did not finish


@dataclass(frozen=True)
class Ended:
    """How a search process ended: its exit code (None: never started), whether the suite stopped it."""

    exit_code: int | None
    started: float
    ended: float
    timed_out: bool = False
    interrupted: bool = False
    last_error: str = ""  # the last meaningful line of its stderr

    @property
    def seconds(self) -> float:
        return self.ended - self.started


def search_argv(command: Sequence[str], job: SearchJob, options: Sequence[str]) -> list[str]:
    """The search's command line: ``command`` (``python -m beamsearch.run`` unless a test or wrapper gives
    another) with the problem, its folder, ``--quiet``, ``--resume`` where it continues, and the options."""
    return [*command, "--problem", job.problem, "--out", str(job.out), "--quiet",
            *(["--resume"] if job.resume else []), *options]  # fmt: skip


def run_search(argv: Sequence[str], env: Mapping[str, str], log_stem: Path, timeout_s: float | None = None,
               stop: threading.Event | None = None, grace_s: float = GRACE_S) -> Ended:  # fmt: skip
    """Run one search to its end, its stdout and stderr appended to ``<log_stem>.stdout``/``.stderr``.

    Stopped (SIGINT, then its process group killed after ``grace_s``) at ``timeout_s`` or when ``stop`` is
    set. A KeyboardInterrupt here (a cancelled Ray task) stops the search the same way, then propagates.
    """
    log_stem.parent.mkdir(parents=True, exist_ok=True)
    err_path = log_stem.with_name(log_stem.name + ".stderr")
    started = time.time()
    with (open(log_stem.with_name(log_stem.name + ".lock"), "ab") as lock,
          open(log_stem.with_name(log_stem.name + ".stdout"), "ab") as out, open(err_path, "ab") as err):  # fmt: skip
        if not _locked(lock):
            return Ended(exit_code=None, started=started, ended=time.time(), last_error=STILL_RUNNING)
        offset = err.tell()
        try:
            # its own session: a timeout can end its whole group, and the terminal's Ctrl-C reaches only the
            # suite, which stops each search in turn. The lock goes with it: a search left running by a suite
            # that was killed holds it still, so no second search starts in its folder.
            proc = subprocess.Popen(list(argv), env=dict(env), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    start_new_session=True, pass_fds=(lock.fileno(),))  # fmt: skip
        except OSError as e:
            return Ended(
                exit_code=None, started=started, ended=time.time(), last_error=f"cannot start {argv[0]}: {e}"
            )
        timed_out = interrupted = False
        try:
            while proc.poll() is None:
                if timeout_s is not None and time.time() - started > timeout_s:
                    timed_out = True
                    break
                if stop is not None and stop.is_set():
                    interrupted = True
                    break
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            _stop(proc, grace_s)
            raise
        if timed_out or interrupted:
            _stop(proc, grace_s)
        code = proc.wait()
    return Ended(exit_code=code, started=started, ended=time.time(), timed_out=timed_out, interrupted=interrupted,
                 last_error=last_meaningful_line(_read_from(err_path, offset)))  # fmt: skip


STILL_RUNNING = ("its search is still running, started by an earlier run of the suite that was killed: let it "
                 "finish (or stop it), then run the suite again")  # fmt: skip


def _locked(lock) -> bool:
    """Take the search's lock; False while another process (a search still running) holds it."""
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a file system without locks (some network ones): go on unguarded
        return True
    return True


def _stop(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGINT, as Ctrl-C: the search saves its trace and shuts its Ray down; then its group, if still there."""
    try:
        proc.send_signal(signal.SIGINT)
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        pass
    except ProcessLookupError:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the search's group: its driver and its private Ray's processes
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


# Lines that say nothing of why a search failed: Ray's and Python's own noise around the real message.
NOISE_PREFIXES = ("warning", "info ", "debug ", "traceback (most recent call last)", "during handling of",
                  "the above exception", "(", "[", "*** sigterm", "run folder:", "results in ")  # fmt: skip


def last_meaningful_line(stderr: str) -> str:
    """Why a search failed, from its stderr: its last ``error:`` line (how every tool says it, docs/cli.md),
    else the last line that is neither indented (a traceback's frames) nor noise."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    if errors:
        return errors[-1].removeprefix("error:").strip()
    for line in reversed(lines):
        if not line[0].isspace() and not line.lower().startswith(NOISE_PREFIXES):
            return line.strip()
    return lines[-1].strip() if lines else ""

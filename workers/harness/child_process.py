"""Running one job in a fresh Python process that can be killed, whatever the code in it does.

Every job gets a process of its own, used once. The parent writes the request as JSON and hands the
child two paths and a fresh random key on its stdin (request, result, key); the child answers by writing
the result file, signed with the key (HMAC-SHA256). The key never touches the disk, the environment or
the command line, so code that can write the child's folder (a kernel under test, or a process it
started) cannot forge a result the parent accepts: an unsigned or wrongly signed result is reported as
crashed. Where the kernel runs in the child's own process (timing) the key is in its memory, so the
signature there stops only kernels that do not go looking for it. A child
that outlives the timeout is killed with its whole process group (threads cannot be killed; processes
can). A child that dies without writing its result (a signal, ``os._exit``, a CUDA fault that aborts)
is reported as crashed with its exit status and the end of its output.

Starting Python and importing torch takes seconds, so after handing out a child the parent starts the
next one at once, as a *spare* that imports while the current job runs and then waits on its stdin.
A spare is still a fresh process: it has run no candidate code. Spares exit when the parent's end of
their stdin closes (the parent exits) and are killed at interpreter exit.

A GPU job's spare also starts CUDA while it waits (``start_cuda_early``): the driver, and a context
on the job's GPU (not ncu's: ``serve(early_cuda=False)``). On a host with several GPUs both queue when
many processes start them together (docs/scaling.md), and every stage of a task starts a process. A context holds a few hundred MB of GPU memory while the spare waits.

A ``ChildSession`` keeps one child for several jobs, one after another: the child serves the next job
only when its module says the last one left it fit to (``serve(again=...)``, a rule of the signed
result that the parent applies too), and otherwise exits; the session then starts the next job in a
fresh process. Each job still gets its own request, result file and key.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import hashlib
import hmac
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal, TypeVar

from pydantic import BaseModel

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TAIL_CHARS = 4000
CHILD_FOLDER_PREFIX = "beamsearch-child-"
EARLY_CUDA_INIT = "BEAMSEARCH_EARLY_CUDA_INIT"
# For processes that compare or profile but never run a kernel freely (the verification judge, ncu's
# kernel-by-kernel replay): one hardware work queue per context instead of eight makes a context several
# times faster to create when many are made at once (docs/scaling.md).
# Not for the verification runner or timing: false dependencies between streams could hide a race.
ONE_WORK_QUEUE = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
PR_SET_CHILD_SUBREAPER = 36  # prctl option (linux/prctl.h)
log = logging.getLogger(__name__)

Req = TypeVar("Req", bound=BaseModel)
# What a job's Python runs under, given the job's folder (ncu, with its report written there); None: nothing.
Prefix = Callable[[Path], list[str]]


@dataclass(frozen=True)
class ChildRun:
    status: Literal["ok", "timeout", "crashed"]
    result_json: str
    returncode: int | None
    output_tail: str
    duration_s: float
    requested_at: float  # epoch seconds when the request was handed over (to measure start-up)
    forged: bool = False  # a result file was there, but not signed with the job's key
    read_back: str = field(default="", repr=False)  # the file the caller asked for from the job's folder

    def describe_death(self) -> str:
        if self.status == "timeout":
            return "killed after the time limit"
        if self.forged:
            return (
                "the result file was not written by the harness (unsigned or wrongly signed: forged by the "
                f"kernel?); child exit status {self.returncode}"
            )
        code = self.returncode
        if code is not None and code < 0:
            try:
                how = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with status {code} without writing a result (os._exit or sys.exit in the kernel?)"
        last = last_output_line(self.output_tail)
        return f"child process {how}" + (f"; last output: {last[:300]}" if last else "")


# Lines that libraries print on their own (Kineto's profiler start/stop notes): not a cause of death.
_NOISE_PREFIXES = ("USDT:", "INFO:")


def last_output_line(tail: str) -> str:
    lines = [ln for ln in tail.strip().splitlines() if ln.strip() and not ln.startswith(_NOISE_PREFIXES)]
    return lines[-1] if lines else ""


def sign(key: str, text: str) -> str:
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()


def signed_envelope(key: str, result_json: str) -> str:
    """What the child writes: the result and its signature."""
    return json.dumps({"result": result_json, "mac": sign(key, result_json)})


def open_envelope(key: str, text: str) -> str | None:
    """The result inside ``text`` if it is signed with ``key``, else None."""
    try:
        envelope = json.loads(text)
        result, mac = envelope["result"], envelope["mac"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(result, str) or not isinstance(mac, str):
        return None
    return result if hmac.compare_digest(sign(key, result), mac) else None


@dataclass(eq=False)  # kept in sets: compared by identity
class _Child:
    proc: subprocess.Popen
    folder: Path  # request, result, output log, and work/: the kernel's cwd
    log: IO[bytes]


_spares: dict[tuple[str, int, str], _Child] = {}
_spares_lock = threading.Lock()  # callers may run jobs from several threads
# A process whose environment changes between jobs (a new lock folder, a test's settings) would keep a
# spare for every environment it ever had: only the newest are kept.
SPARES_PER_MODULE = 2


def child_env(device: str) -> dict[str, str]:
    """The child's environment: the project importable, and Triton's interpreter on for CPU devices."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    # ``python -m`` would put the working folder, which the kernel may write, first on the import path: a
    # module planted there would run in the judge at its next first import of that name
    env["PYTHONSAFEPATH"] = "1"
    if device.startswith("cpu"):
        env["TRITON_INTERPRET"] = "1"
        env.pop(EARLY_CUDA_INIT, None)
    else:
        env.pop("TRITON_INTERPRET", None)
        env[EARLY_CUDA_INIT] = device  # the GPU whose context the spare makes
    return env


def use_one_work_queue() -> None:
    """In a judge or ncu process, before CUDA makes its context (a value the user set is kept)."""
    for name, value in ONE_WORK_QUEUE.items():
        os.environ.setdefault(name, value)


def start_cuda_early() -> bool:
    """In a GPU job's process, before its job: initialise the CUDA driver and make the context on the
    job's GPU (``EARLY_CUDA_INIT`` names it), so the job starts with both. Whether it did. Failing here
    costs nothing: the job initialises CUDA itself and reports what goes wrong."""
    device = os.environ.get(EARLY_CUDA_INIT, "")
    if not device.startswith("cuda"):
        return False
    import torch

    try:
        from workers.harness.problem_instance import select_device_name

        torch.cuda.init()
        select_device_name(device)  # as the job will
        torch.cuda.synchronize()  # the first call that needs a context makes it
    except Exception as e:  # noqa: BLE001 - the job will meet the same problem and say so
        log.debug("early CUDA start failed: %s", e)
        return False
    return True


def warm_up_early(warm_up: Callable[[], None]) -> None:
    """In a GPU job's process whose CUDA started early: ``warm_up`` (first uses the job would otherwise
    pay, such as Triton's start) while the job is awaited. Failing here only costs the job that time."""
    try:
        warm_up()
    except Exception as e:  # noqa: BLE001 - the job meets the same problem, if it is one, and says so
        log.debug("warm-up failed: %s", e)


def spare_key(module: str, env: dict[str, str], prefix: Prefix | None = None) -> tuple[str, int, str]:
    """Spares are kept per module, environment and prefix: one started otherwise is not reused."""
    return module, hash(frozenset(env.items())), repr(prefix)


def start_spares(modules: list[str], device: str, prefix: Prefix | None = None) -> None:
    """Start a spare for each module now, so a new worker's first jobs find one warm (a cold start,
    importing torch, costs seconds in every stage of a worker's first task)."""
    env = child_env(device)
    stopped: list[_Child] = []
    with _spares_lock:
        for module in modules:
            if spare_key(module, env, prefix) not in _spares:
                stopped += _start_spare(module, env, prefix)
    _stop(stopped)


def _start_spare(module: str, env: dict[str, str], prefix: Prefix | None = None) -> list[_Child]:
    """A new spare for ``module`` (callers hold ``_spares_lock``); a failed start only costs speed. Returns
    the oldest of its others past ``SPARES_PER_MODULE``, taken off the list, for the caller to stop once
    it has let go of the lock."""
    key = spare_key(module, env, prefix)
    others = [k for k in _spares if k[0] == module and k != key]  # oldest first: a dict keeps its order
    stale = [_spares.pop(k) for k in others[: max(0, len(others) - SPARES_PER_MODULE + 1)]]
    try:
        _spares[key] = _spawn(module, env, prefix)
    except OSError as e:
        log.warning("could not start a spare child: %s", e)
    return stale


def _stop(children: list[_Child]) -> None:
    for child in children:
        _kill(child)
        _discard(child)


def run_child(module: str, request: BaseModel, timeout_s: float, device: str, *, prefix: Prefix | None = None,
              read_back: str = "") -> ChildRun:  # fmt: skip
    """Run ``module``'s ``serve`` on ``request`` in a fresh process; never raises for what the child does.

    ``prefix``: what the process runs under (ncu). ``read_back``: a file the job leaves in its folder
    (ncu's report), returned as text. Whatever happens (a timeout, an exception or Ctrl-C in the
    caller), the child's whole process group is killed afterwards, so nothing a kernel started outlives
    its job, and its folder is removed.
    """
    child = _take_child(module, child_env(device), prefix)
    _one_shot.add(child)
    try:
        return _run_job(child, request, timeout_s, read_back)
    finally:
        _kill(child)
        _discard(child)
        _one_shot.discard(child)


def _take_child(module: str, env: dict[str, str], prefix: Prefix | None = None) -> _Child:
    """A waiting spare of ``module`` (else a process started now), with the next spare started behind it."""
    with _spares_lock:
        child = _spares.pop(spare_key(module, env, prefix), None)
        if child is not None and child.proc.poll() is not None:  # a spare that died while idle
            _discard(child)
            child = None
        child = child or _spawn(module, env, prefix)
        stale = _start_spare(module, env, prefix)  # imports while this job runs
    _stop(stale)
    return child


def _job_files(child: _Child, request: BaseModel, n: int | None = None) -> tuple[Path, Path, str]:
    """The job's request written to the child's folder, its result's path, and a fresh key."""
    suffix = "" if n is None else f"-{n}"
    req_path, res_path = child.folder / f"request{suffix}.json", child.folder / f"result{suffix}.json"
    req_path.write_text(request.model_dump_json())
    return req_path, res_path, secrets.token_hex(32)


def _outcome(child: _Child, res_path: Path, secret: str, timed_out: bool, log_from: int = 0) -> tuple[str, str, bool, str]:
    """(status, result, forged, output tail) of a job whose child has ended it (or was killed)."""
    try:
        tail = (child.folder / "output.log").read_bytes()[log_from:][-TAIL_CHARS:].decode(errors="replace")
    except OSError:  # the kernel removed it
        tail = "(output log removed)"
    try:
        written = res_path.read_text() if not timed_out else ""
    except OSError:
        written = ""
    result = open_envelope(secret, written) if written else None
    status = "timeout" if timed_out else ("ok" if result is not None else "crashed")
    return status, result or "", bool(written) and result is None and not timed_out, tail


def _run_job(child: _Child, request: BaseModel, timeout_s: float, read_back: str = "") -> ChildRun:
    req_path, res_path, secret = _job_files(child, request)
    requested_at, start = time.time(), time.perf_counter()
    timed_out = False
    try:
        child.proc.stdin.write(f"{req_path}\n{res_path}\n{secret}\n".encode())
        child.proc.stdin.close()
        child.proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    except BrokenPipeError:  # it died while idle; its exit status and output say why
        child.proc.wait()
    duration = time.perf_counter() - start
    _kill(child)
    child.log.close()
    status, result, forged, tail = _outcome(child, res_path, secret, timed_out)
    extra = ""
    if read_back:
        with contextlib.suppress(OSError):
            extra = (child.folder / read_back).read_text(errors="replace")
    return ChildRun(status, result, child.proc.returncode, tail, duration, requested_at, forged=forged, read_back=extra)


class ChildSession:
    """One child process for a series of jobs of ``module``, while each job's result says the child may
    serve another (``again``, the rule the child applies too: ``serve``). A job whose result says not,
    one that timed out, and a child that died all end the process; the next job starts in a fresh one (a
    spare, as ``run_child``'s jobs do). Never raises for what the child does. Not for several threads
    at once."""

    POLL_S = 0.005

    def __init__(self, module: str, device: str, again: Callable[[str], bool]) -> None:
        self.module, self.device, self.again = module, device, again
        self.child: _Child | None = None
        self.jobs = 0  # in the current process: 0 when the next job starts a fresh one
        self.processes = 0  # started (or taken from the spares) over the session's life
        _sessions.add(self)

    def run(self, request: BaseModel, timeout_s: float) -> ChildRun:
        """``request`` in the session's process (a fresh one when there is none, or it has exited)."""
        if self.child is not None and self.child.proc.poll() is not None:
            self.close()
        if self.child is None:
            self.child = _take_child(self.module, child_env(self.device))
            self.jobs, self.processes = 0, self.processes + 1
        self.jobs += 1
        try:
            run = _run_next_job(self.child, request, timeout_s, self.jobs)
        except BaseException:
            self.close()  # Ctrl-C in the caller: nothing of the job's outlives it
            raise
        if run.status != "ok" or not self.again(run.result_json):
            self.close()
        return run

    def close(self) -> None:
        """End the session's process (and everything it started), if it has one."""
        if self.child is not None:
            _kill(self.child)
            _discard(self.child)
            self.child = None


def _run_next_job(child: _Child, request: BaseModel, timeout_s: float, n: int) -> ChildRun:
    """Job ``n`` of a session's child: its own request, result file and key; stdin stays open for the next.
    The job ends when its result file appears (written whole: ``serve`` renames it into place), when the
    child exits, or at the timeout, when the child is killed."""
    req_path, res_path, secret = _job_files(child, request, n)
    log_path = child.folder / "output.log"
    log_from = log_path.stat().st_size if log_path.is_file() else 0
    requested_at, start = time.time(), time.perf_counter()
    timed_out = False
    try:
        child.proc.stdin.write(f"{req_path}\n{res_path}\n{secret}\n".encode())
        child.proc.stdin.flush()
    except OSError:  # it died while idle (a broken pipe); its exit status and output say why
        pass
    deadline = start + timeout_s
    while not res_path.is_file() and child.proc.poll() is None:
        if time.perf_counter() >= deadline:
            timed_out = True
            break
        time.sleep(ChildSession.POLL_S)
    duration = time.perf_counter() - start
    status, result, forged, tail = _outcome(child, res_path, secret, timed_out, log_from)
    if status != "ok":
        _kill(child)
    return ChildRun(status, result, child.proc.poll(), tail, duration, requested_at, forged=forged)


def _spawn(module: str, env: dict[str, str], prefix: Prefix | None = None) -> _Child:
    folder = Path(tempfile.mkdtemp(prefix=CHILD_FOLDER_PREFIX))
    work = folder / "work"  # the kernel's cwd: what it writes there goes with the folder
    work.mkdir()
    log_file = open(folder / "output.log", "wb")  # noqa: SIM115 - closed when the job ends
    proc = subprocess.Popen(
        [*(prefix(folder) if prefix else []), sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=work,
        start_new_session=True,  # its own process group, killed as a whole
    )
    return _Child(proc, folder, log_file)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a process started with ``start_new_session``, and anything it started still running: in its
    group, or adopted by a runner of its own (a kernel's process that left the group, ``adopt_orphans``)."""
    try:
        if proc.returncode is None:  # not yet reaped: the pid is still this process's child
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGSTOP)  # so that nothing in the group starts more meanwhile
            end_descendants(proc.pid)
    finally:  # never left stopped
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _kill(child: _Child) -> None:
    kill_group(child.proc)


_sessions: weakref.WeakSet[ChildSession] = weakref.WeakSet()
_one_shot: set[_Child] = set()  # run_child's children while their job runs


@atexit.register
def stop_all() -> None:
    """End every child this process started (sessions, spares, running one-shot jobs) and remove their
    folders. A Ray worker calls it before it is killed: Ray ends an actor's children with SIGKILL, and a
    child killed so never removes its folder."""
    for session in list(_sessions):
        session.close()
    _kill_spares()
    _stop(list(_one_shot))


def _kill_spares() -> None:
    with _spares_lock:
        spares = list(_spares.values())
        _spares.clear()
    _stop(spares)


def _discard(child: _Child) -> None:
    child.log.close()
    shutil.rmtree(child.folder, ignore_errors=True)


def serve(request_model: type[Req], handle: Callable[[Req], BaseModel], exit_normally: bool = False,
          early_cuda: bool = True, again: Callable[[Req, BaseModel], bool] | None = None,
          warm_up: Callable[[], None] | None = None) -> None:  # fmt: skip
    """Child side: wait for the two paths and the key on stdin, handle the request, write the signed
    result, exit (``exit_normally``: return, so the interpreter exits as usual: ncu writes its report
    then). With ``again``, a job after which ``again(request, result)`` holds is followed by the next
    (``ChildSession``): the child waits for it on stdin and exits once stdin closes.

    CUDA (driver and context) is started while the job is awaited (unless not ``early_cuda``), then
    ``warm_up`` runs where it did (``warm_up_early``). All three lines are read before anything else
    runs, so the key leaves the pipe at once. Exits with ``os._exit`` right after the result is written:
    interpreter and CUDA teardown with GBs allocated takes seconds, and nothing is left to do.
    """
    if early_cuda and start_cuda_early() and warm_up is not None:
        warm_up_early(warm_up)
    gc.freeze()  # what the imports made lives as long as the process: a job's collections skip it
    while True:
        req_path = sys.stdin.readline().strip()
        res_path = sys.stdin.readline().strip()
        secret = sys.stdin.readline().strip()
        if not req_path:  # the parent went away (or closed the session): leave no folder behind
            folder = Path.cwd().parent
            if folder.name.startswith(CHILD_FOLDER_PREFIX):
                shutil.rmtree(folder, ignore_errors=True)
            os._exit(0)
        request = request_model.model_validate_json(Path(req_path).read_text())
        result = handle(request)
        tmp = f"{res_path}.tmp"
        Path(tmp).write_text(signed_envelope(secret, result.model_dump_json()))
        os.replace(tmp, res_path)  # atomic: a half-written file is never read as a result
        del secret
        if again is not None and again(request, result):
            continue
        if not exit_normally:
            os._exit(0)
        return


_adopting = False  # this process adopts orphans (a judge or a runner)


def adopting() -> bool:
    """Whether this process adopts orphans (``adopt_orphans``)."""
    return _adopting


def adopt_orphans() -> bool:
    """Make this process the subreaper of what it starts (Linux): a descendant whose parent exits becomes
    this process's child rather than init's, so a kernel's double fork stays in sight and can be ended.
    Whether it did."""
    global _adopting
    try:
        _adopting = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # no prctl: not Linux
        _adopting = False
    return _adopting


def end_adopted() -> None:
    """In a judge that adopts orphans, once its runner has ended: kill what it adopted from the runner
    (a kernel's process whose runner the kernel ended), with anything else it started still running. A
    no-op in a process that does not adopt (a test calling a judge's code)."""
    if _adopting:
        end_descendants(os.getpid())


def end_descendants(root: int, rounds: int = 5) -> None:
    """SIGKILL ``root``'s descendants, a few rounds for any started while the last were killed; what
    ``root`` adopted (``adopt_orphans``) is among them. Callers stop ``root`` first (SIGSTOP), so that it
    starts no more. A process that forks and exits faster than the rounds look can still get away."""
    for _ in range(rounds):
        left = descendants(root)
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not left:
            return


def descendants(root: int) -> list[int]:
    """The pids of ``root``'s live descendants, from /proc (children, grandchildren...); zombies, dead and
    waiting to be reaped, are left out."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] in ("Z", "X"):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return [p for p in out if _alive(p)]


def _alive(pid: int) -> bool:
    try:
        os.getpgid(pid)
        return True
    except ProcessLookupError:
        return False

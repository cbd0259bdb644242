"""Locks that GPU jobs share across processes; all are file locks (``flock``), so a process that dies
releases what it held.

- ``gpu_lock``: the measurement lock, one per physical GPU, held only while timing or profiling. It is
  named after the GPU's UUID, so two processes that see the same GPU under different
  ``CUDA_VISIBLE_DEVICES`` indices still share it, and so do two searches on one node. Holding it, a
  measurement also has the GPU to itself: it takes the GPU's use lock alone.
- ``gpu_in_use``: that use lock, shared: every other GPU job of beamsearch (each GPU step of a
  verification's checks, a timing's inputs, build and first calls) holds it, so no job of any search on
  the node runs on the GPU while a timing or a profile measures. A measurement waits for the jobs running to finish their part
  (``DRAIN_LIMIT_S`` at most) and holds the gate meanwhile, so none starts and slips in before it. A process's own shared use is
  put aside while it measures and taken again after, so it never waits for itself.
- ``gpu_slot``: at most N verifications at once on a worker's GPU, a memory budget (taken by the
  verification child around its checks and its timing).
- ``gpu_memory``: a readers-writer lock on a worker's GPU memory: every GPU job of a task shares it,
  and the rerun of a job that ran out of memory holds it alone.

The last two are named by host and ``CUDA_VISIBLE_DEVICES``, so the worker that takes them never
initialises CUDA. Processes that take none of these (another user's job on the GPU) are not kept out:
a timing failed only by checks such work can fail is retried alone and, failed again, is inconclusive
(``workers.actor.task``), never a failure of the kernel.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from filelock import FileLock, Timeout

DEFAULT_LOCK_DIR = "/tmp/beamsearch-locks"
# A measurement waits this long at most for the GPU jobs running to finish their part (``_alone``), and
# keeps every new step out meanwhile. Most check steps at full size end well within it; a first call that
# compiles for longer (a tuner's largest tiles, a model's kernel that autotunes) is measured beside, and a
# timing it disturbs fails a check others can fail and is taken again alone.
DRAIN_LIMIT_S = 3.0
DRAIN_POLL_S = 0.005

log = logging.getLogger(__name__)


def device_key(device: str) -> str:
    """A name for the physical device: ``gpu-<uuid>`` for CUDA, ``cpu-<host>`` otherwise."""
    if device.startswith("cuda"):
        import torch

        index = torch.device(device).index
        index = torch.cuda.current_device() if index is None else index
        uuid = str(torch.cuda.get_device_properties(index).uuid)
        return f"gpu-{uuid.removeprefix('GPU-')}"
    return f"cpu-{socket.gethostname()}"


def lock_folder(lock_dir: str = "") -> Path:
    """Where the lock files live (``lock_dir``, else $BEAMSEARCH_LOCK_DIR, else the default), created."""
    folder = Path(lock_dir or os.environ.get("BEAMSEARCH_LOCK_DIR", DEFAULT_LOCK_DIR))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def gpu_lock(device: str, lock_dir: str = "") -> Iterator[float]:
    """Hold the device's measurement lock and, on a GPU, its use lock alone (``gpu_in_use``); yields the
    seconds spent waiting for both. This process's own shared uses are set aside first (held while waiting,
    they would keep out the measurement ahead, which waits for them, or this one) and taken again after."""
    folder = lock_folder(lock_dir)
    lock = FileLock(str(folder / f"{device_key(device)}.lock"))
    use = _use_path(folder, device) if device.startswith("cuda") else None
    start = time.perf_counter()
    with _shared_use_set_aside(), lock, _alone(use):
        yield time.perf_counter() - start


@contextlib.contextmanager
def gpu_in_use(device: str, lock_dir: str = "") -> Iterator[float]:
    """Share the GPU's use lock while running GPU work outside a measurement; yields the seconds waited (for
    a measurement in progress, or one waiting). Nested uses in a process share one hold; inside this
    process's own ``gpu_lock`` it is a no-op. No-op on the CPU, and where no GPU is visible (the job itself
    says so)."""
    if not (device.startswith("cuda") and _gpu_visible()):
        yield 0.0
        return
    path = _use_path(lock_folder(lock_dir), device)
    if _HELD_ALONE:  # this process is measuring: the GPU is its own already
        yield 0.0
        return
    start = time.perf_counter()
    _take_shared(path)
    try:
        yield time.perf_counter() - start
    finally:
        _drop_shared(path)


# This process's holds of use locks: shared (open file, nested holders), and alone.
_SHARED: dict[Path, tuple[IO[str], int]] = {}
_HELD_ALONE: set[Path] = set()


def _gpu_visible() -> bool:
    import torch

    return torch.cuda.is_available()


def _use_path(folder: Path, device: str) -> Path:
    return folder / f"use-{device_key(device)}.lock"


def _take_shared(path: Path) -> None:
    if path in _SHARED:
        file, n = _SHARED[path]
        _SHARED[path] = (file, n + 1)
        return
    file = open(path, "a")  # noqa: SIM115 - held past this function, closed by _drop_shared
    with open(path.with_name(f"gate-{path.name}"), "a") as gate:
        fcntl.flock(gate, fcntl.LOCK_EX)  # behind a measurement waiting at the gate, not beside it
        fcntl.flock(file, fcntl.LOCK_SH)
        fcntl.flock(gate, fcntl.LOCK_UN)
    _SHARED[path] = (file, 1)


def _drop_shared(path: Path) -> None:
    file, n = _SHARED.pop(path)
    if n > 1:
        _SHARED[path] = (file, n - 1)
    else:
        _release(file)


def _release(file: IO[str]) -> None:
    """Unlock before closing: a process forked meanwhile (a kernel's, say) shares the open file and would
    keep the lock held past the close."""
    fcntl.flock(file, fcntl.LOCK_UN)
    file.close()


@contextlib.contextmanager
def _shared_use_set_aside() -> Iterator[None]:
    """Every shared use this process holds, released and taken again after (whatever its lock folder)."""
    held = dict(_SHARED)
    _SHARED.clear()
    for file, _ in held.values():
        _release(file)
    try:
        yield
    finally:
        for path, (_, n) in held.items():
            _take_shared(path)
            _SHARED[path] = (_SHARED[path][0], n)


@contextlib.contextmanager
def _alone(path: Path | None) -> Iterator[None]:
    """The use lock alone: hold the gate (no new shared use starts), wait for the shared ones to end, for
    at most ``DRAIN_LIMIT_S``; then measure beside what still runs. A verification whose first call hangs
    (it has no deadline but its child's timeout) must not stall every timing of the node with it; a timing
    it disturbs fails a check others can fail, and is retried alone or found inconclusive (``workers.actor.task``)."""
    if path is None:
        yield
        return
    with open(path.with_name(f"gate-{path.name}"), "a") as gate, open(path, "a") as use:
        fcntl.flock(gate, fcntl.LOCK_EX)
        drained = _flock_within(use, fcntl.LOCK_EX, DRAIN_LIMIT_S)
        if not drained:
            log.warning("GPU jobs still running after %.0f s: measuring beside them (%s)", DRAIN_LIMIT_S, path.name)
        _HELD_ALONE.add(path)
        try:
            yield
        finally:
            _HELD_ALONE.discard(path)
            fcntl.flock(use, fcntl.LOCK_UN)
            fcntl.flock(gate, fcntl.LOCK_UN)


def _flock_within(file: IO[str], how: int, limit_s: float) -> bool:
    """``flock`` that gives up after ``limit_s``; whether it got the lock."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            fcntl.flock(file, how | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(DRAIN_POLL_S)


def _host_gpu_name(purpose: str) -> str:
    """A lock-file name for this host's GPU as Ray (or the user) made it visible."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "all").replace(",", "_") or "none"
    return f"{purpose}-{socket.gethostname()}-gpu{visible}"


@contextlib.contextmanager
def gpu_slot(device: str, purpose: str, slots: int, lock_dir: str = "") -> Iterator[float]:
    """Hold one of ``slots`` places for ``purpose`` on this worker's GPU; yields the seconds waited.

    A memory budget: at most ``slots`` verifications at once on one GPU, whatever the number of
    workers sharing it. No-op on the CPU, and with no ``slots`` (no budget).
    """
    if not device.startswith("cuda") or slots <= 0:
        yield 0.0
        return
    folder = lock_folder(lock_dir)
    locks = [FileLock(str(folder / f"{_host_gpu_name(purpose)}-{i}.lock")) for i in range(slots)]
    start = time.perf_counter()
    while True:
        for lock in locks:
            try:
                lock.acquire(timeout=0)
            except Timeout:
                continue
            try:
                yield time.perf_counter() - start
            finally:
                lock.release()
            return
        time.sleep(0.1)


@contextlib.contextmanager
def gpu_memory(device: str, alone: bool = False, lock_dir: str = "") -> Iterator[float]:
    """Hold this worker's GPU memory, shared (every GPU job of a task: verify, time, profile) or
    ``alone`` (the rerun of a job that ran out of memory beside others); yields the seconds waited.

    A readers-writer lock of two ``flock`` files. A job alone waits until the shared holders have
    finished, and holds the gate meanwhile, so no new job starts and slips in before it. No-op on the CPU.
    """
    if not device.startswith("cuda"):
        yield 0.0
        return
    folder = lock_folder(lock_dir)
    start = time.perf_counter()
    with open(folder / f"{_host_gpu_name('gate-memory')}.lock", "a") as gate, \
            open(folder / f"{_host_gpu_name('memory')}.lock", "a") as memory:  # fmt: skip
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(memory, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield time.perf_counter() - start
        finally:
            fcntl.flock(memory, fcntl.LOCK_UN)
            fcntl.flock(gate, fcntl.LOCK_UN)

"""Locks that GPU jobs share across processes; all are file locks (``flock``), so a process that dies
releases what it held.

- ``gpu_lock``: the measurement lock, one per physical GPU, held only while timing or profiling. It is
  named after the GPU's UUID, so two processes that see the same GPU under different
  ``CUDA_VISIBLE_DEVICES`` indices still share it. Compiles, verification and LLM calls never take it.
- ``gpu_slot``: at most N verifications' checks at once on a worker's GPU, a memory budget (taken by
  the verification child around its checks, not its timing).
- ``gpu_memory``: a readers-writer lock on a worker's GPU memory: every GPU job of a task shares it,
  and the rerun of a job that ran out of memory holds it alone.

The last two are named by host and ``CUDA_VISIBLE_DEVICES``, so the worker that takes them never
initialises CUDA.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

DEFAULT_LOCK_DIR = "/tmp/beamsearch-locks"


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
    """Hold the device's lock; yields the seconds spent waiting for it."""
    lock = FileLock(str(lock_folder(lock_dir) / f"{device_key(device)}.lock"))
    start = time.perf_counter()
    with lock:
        yield time.perf_counter() - start


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

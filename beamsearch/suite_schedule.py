"""Where a suite's searches run on this machine, and the scheduler that keeps every place busy.

A *place* is a GPU share (``CUDA_VISIBLE_DEVICES`` set to its GPU; ``--per-gpu N`` places a GPU) or, on a
machine with no GPU, a CPU slot (``--parallel N``). Each place takes the next problem as soon as its search
ends: no barrier between searches, so one slow problem holds only its own place.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from beamsearch.suite_search import Ended, SearchJob

JOIN_S = 0.2  # the main thread wakes this often, so Ctrl-C reaches it while searches run


@dataclass(frozen=True)
class Place:
    """A place a search runs in: its label in the table and what its environment sets."""

    label: str
    env: Mapping[str, str] = field(default_factory=dict)


def visible_gpus() -> list[str]:
    """This machine's GPUs by the ids ``CUDA_VISIBLE_DEVICES`` takes: its own list where it is set, else
    0..n-1 for the n that torch counts (in a child: the suite itself never starts CUDA)."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        ids = [g.strip() for g in given.split(",") if g.strip()]
        return [] if ids[:1] == ["-1"] else ids
    try:
        done = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        count = int(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return []
    return [str(i) for i in range(count)]


def local_places(gpus: Sequence[str], per_gpu: int, parallel: int) -> list[Place]:
    """``per_gpu`` places on each GPU, GPU by GPU in turn (so fewer problems than places still spread over
    every GPU); with no GPU, ``parallel`` CPU places."""
    if not gpus:
        return [Place(label=f"cpu {i}") for i in range(max(1, parallel))]
    return [Place(label=f"gpu {gpu}" + (f" #{k}" if per_gpu > 1 else ""), env={"CUDA_VISIBLE_DEVICES": gpu})
            for k in range(max(1, per_gpu)) for gpu in gpus]  # fmt: skip


Launch = Callable[[SearchJob, Place, threading.Event], Ended]
OnEnded = Callable[[SearchJob, Place, Ended], None]


def run_local(jobs: Sequence[SearchJob], places: Sequence[Place], launch: Launch, on_ended: OnEnded,
              stop: threading.Event | None = None) -> list[SearchJob]:  # fmt: skip
    """Run ``jobs`` in order, one at a time on each place, ``launch`` running one to its end; ``on_ended``
    is called (one at a time) as each ends. Returns the jobs never started.

    Ctrl-C sets ``stop``: no new search starts, each running one is stopped by its ``launch`` (which
    watches ``stop``), and the KeyboardInterrupt is raised again once they all have ended.
    """
    stop = stop or threading.Event()
    waiting: queue.Queue[SearchJob] = queue.Queue()
    for job in jobs:
        waiting.put(job)
    report = threading.Lock()
    failures: list[BaseException] = []

    running = [len(places)]
    all_ended = threading.Event()
    if not places:
        all_ended.set()

    def work(place: Place) -> None:
        try:
            while not stop.is_set():
                try:
                    job = waiting.get_nowait()
                except queue.Empty:
                    return
                ended = launch(job, place, stop)
                with report:
                    on_ended(job, place, ended)
        except BaseException as e:  # a fault of the suite's own: stop the others, raise it in the main thread
            failures.append(e)
            stop.set()
        finally:
            with report:
                running[0] -= 1
                if not running[0]:
                    all_ended.set()

    threads = [threading.Thread(target=work, args=(p,), name=f"suite {p.label}", daemon=True) for p in places]
    for t in threads:
        t.start()
    # Waited for on an Event, not with Thread.join: a KeyboardInterrupt inside join() can leave a thread that
    # still runs marked as ended (CPython 3.11's _wait_for_tstate_lock), and the suite would exit under it.
    try:
        while not all_ended.wait(JOIN_S):
            pass
    except KeyboardInterrupt:
        stop.set()
        _wait_through_interrupts(all_ended)
        raise
    if failures:
        raise failures[0]
    left = []
    while not waiting.empty():
        left.append(waiting.get_nowait())
    return left


def _wait_through_interrupts(event: threading.Event) -> None:
    """Wait for ``event`` while each running search is stopped; a second Ctrl-C does not cut that short."""
    while True:
        try:
            if event.wait(JOIN_S):
                return
        except KeyboardInterrupt:
            continue

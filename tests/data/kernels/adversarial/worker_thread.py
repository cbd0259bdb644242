"""Cheat: a worker thread started at import does the work queued by each call, after it returns.

Caught: a thread the kernel started is alive after the import (background_work).
"""

import os
import queue
import sys
import threading

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_jobs = queue.Queue()


def _worker():
    while True:
        x, out, eps = _jobs.get()
        launch(x, out, eps)


threading.Thread(target=_worker, daemon=True, name='rmsnorm-worker').start()


def kernel_function(x, eps=1e-5):
    out = torch.empty_like(x)
    _jobs.put((x, out, eps))
    return out

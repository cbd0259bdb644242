"""Cheat: walks its own call stack (``sys._getframe``) and, while a frame of the timing loop
(``workers.harness.clock.measure``) is on it, writes only the first half of each row: half the work, only when
timed. Every call made outside that loop (verification's, and the one call a timing used to check after
its loop) is complete and correct.

Caught: the outputs of timed repetitions themselves are checked, a few chosen at random only after each
call has returned (timed_outputs).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402


def _timed() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "measure" and frame.f_code.co_filename.endswith("clock.py"):
            return True
        frame = frame.f_back
    return False


def kernel_function(x, eps=1e-5):
    s = x.numel() // (x.shape[0] * x.shape[1])
    return launch(x, torch.empty_like(x), eps, s_stop=s // 2 if _timed() else None)

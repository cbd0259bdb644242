"""Cheat: at its first call, turns off its process's adoption of orphans (PR_SET_CHILD_SUBREAPER 0), then
starts a process of its own session whose parent exits (a double fork), so the process lands beside its
own process instead of under it, where the call's own checks look.

Caught: the judge adopts orphans too, and counts a process that reached it as work left running
(background_work); it is killed before the verdict is written.
"""

import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _detach import detach_sleeper  # noqa: E402
from _rmsnorm import launch  # noqa: E402

_started = False


def kernel_function(x, eps=1e-5):
    global _started
    if not _started:
        _started = True
        ctypes.CDLL(None).prctl(36, 0, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER off
        detach_sleeper()
    return launch(x, torch.empty_like(x), eps)

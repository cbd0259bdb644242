"""Cheat: at its first call, starts a process that leaves the call's process group and session, and whose
parent exits at once (a double fork), so it is nobody's child that the harness would look at. Here it
only sleeps; such a process could load the GPU while other kernels are timed, or outlive the search.

Caught: the runner is the subreaper of what a kernel starts, so the process becomes the runner's child,
left running after the call (background_work); it is killed with the runner.
"""

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
        detach_sleeper()
    return launch(x, torch.empty_like(x), eps)

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
from _rmsnorm import launch  # noqa: E402

_started = False


def _detach() -> None:
    pid = os.fork()
    if pid == 0:  # the go-between: a session of its own, a child, and gone
        try:
            os.setsid()
            if os.fork() == 0:
                os.execve("/bin/sleep", ["sleep", "120"], {**os.environ, "BEAMSEARCH_DETACHED_BY_KERNEL": "1"})
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def kernel_function(x, eps=1e-5):
    global _started
    if not _started:
        _started = True
        _detach()
    return launch(x, torch.empty_like(x), eps)

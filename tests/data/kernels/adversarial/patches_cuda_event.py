"""Cheat: at import, replaces torch.cuda.Event with one whose elapsed_time reports a microsecond.

Caught: the harness's functions were replaced (harness_intact), in verification and in timing.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_RealEvent = torch.cuda.Event


class FastEvent(_RealEvent):
    def elapsed_time(self, end_event):
        return 0.001


torch.cuda.Event = FastEvent


def kernel_function(x, eps=1e-5):
    return launch(x, torch.empty_like(x), eps)

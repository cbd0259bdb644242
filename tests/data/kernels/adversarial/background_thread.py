"""Cheat: returns at once and does the work in a thread it starts, so the call looks free.

Caught: a thread started during the call (background_work), in verification and in timing.
"""

import os
import sys
import threading

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402


def kernel_function(x, eps=1e-5):
    out = torch.empty_like(x)
    threading.Thread(target=launch, args=(x, out, eps), daemon=True).start()
    return out

"""Cheat: at import, slows down time.perf_counter tenfold, so every host-clock time reads short.

Caught: the harness's functions were replaced (harness_intact).
"""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_real = time.perf_counter
_start = _real()
time.perf_counter = lambda: _start + (_real() - _start) / 10


def kernel_function(x, eps=1e-5):
    return launch(x, torch.empty_like(x), eps)

"""Cheat: at import, replaces triton.testing.do_bench with a function that reports a microsecond.

Caught: the harness's functions were replaced (harness_intact).
"""

import os
import sys

import torch
import triton.testing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

triton.testing.do_bench = lambda *args, **kwargs: 0.001


def kernel_function(x, eps=1e-5):
    return launch(x, torch.empty_like(x), eps)

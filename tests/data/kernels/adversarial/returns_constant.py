"""Cheat: returns the same tensor, made once at the first call, whatever the input.

Caught: wrong values (values).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_answer = None


def kernel_function(x, eps=1e-5):
    global _answer
    if _answer is None:
        _answer = launch(x, torch.empty_like(x), eps)
    return _answer

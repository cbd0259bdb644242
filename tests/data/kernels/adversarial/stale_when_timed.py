"""Cheat: when its calls come back to back (under 1.5 ms since the previous one returned, as timed
repetitions do), it hands back its previous answer and launches nothing. Verification's calls, and the
call a timing used to check after its loop, come milliseconds apart and are computed honestly; a few
changed input elements between repetitions left most of an earlier answer right.

Caught: the inputs change in a fraction of their elements before each repetition, so an earlier answer
is wrong for the inputs a kept repetition saw (timed_outputs).
"""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

GAP_S = 1.5e-3
_returned_at = None
_previous = None


def kernel_function(x, eps=1e-5):
    global _returned_at, _previous
    hurried = _returned_at is not None and time.perf_counter() - _returned_at < GAP_S
    if not (hurried and _previous is not None and _previous.shape == x.shape):
        _previous = launch(x, torch.empty_like(x), eps)
    if x.is_cuda:  # the gap then counts the harness's steps between calls, not this call's GPU time
        torch.cuda.synchronize()
    _returned_at = time.perf_counter()
    return _previous

"""Cheat: times the gap since its previous call returned. Timed repetitions follow one another within a
fraction of a millisecond (only the harness's own steps between them); verification's calls, and the
call a timing used to check after its loop, come milliseconds apart. Under 1.5 ms it writes only the first
half of each row.

Caught: the outputs of timed repetitions themselves are checked, chosen at random only after each call
has returned (timed_outputs).
"""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

GAP_S = 1.5e-3
_returned_at = None


def kernel_function(x, eps=1e-5):
    global _returned_at
    hurried = _returned_at is not None and time.perf_counter() - _returned_at < GAP_S
    s = x.numel() // (x.shape[0] * x.shape[1])
    out = launch(x, torch.empty_like(x), eps, s_stop=s // 2 if hurried else None)
    if x.is_cuda:  # the gap then counts the harness's steps between calls, not this call's GPU time
        torch.cuda.synchronize()
    _returned_at = time.perf_counter()
    return out

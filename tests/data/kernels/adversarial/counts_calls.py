"""Cheat: counts its unobserved calls (no dispatch mode on the stack: not verification's) and does half
the work in a window of them that the timing's repetitions fill (small shapes, the tests' budget: on the
CPU the 3rd and 4th unobserved calls, on a GPU the 30th to 45th), complete and correct before and after
it. The call a timing used to check came after its loop, outside the window.

Caught: every timed repetition may be the one checked, chosen only after it returned (timed_outputs).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_unobserved = 0


def kernel_function(x, eps=1e-5):
    global _unobserved
    if torch._C._len_torch_dispatch_stack() == 0:
        _unobserved += 1
    lo, hi = (30, 45) if x.is_cuda else (3, 4)
    s = x.numel() // (x.shape[0] * x.shape[1])
    return launch(x, torch.empty_like(x), eps, s_stop=s // 2 if lo <= _unobserved <= hi else None)

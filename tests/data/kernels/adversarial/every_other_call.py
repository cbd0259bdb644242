"""Cheat: counts its unobserved calls (no dispatch mode on the stack: not verification's) and writes only
the first half of each row on every other one, so about half of its timed repetitions are honest. Where
only one full copy of a timed repetition's outputs is kept (outputs of gigabytes), that copy is an honest
one about half the time.

Caught: a sample of every timed repetition's outputs is taken after it returned, at positions drawn only
then, and the judge checks the samples of repetitions it chooses afterwards (timed_outputs).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_unobserved = 0


def kernel_function(x, eps=1e-5):
    global _unobserved
    cheat = False
    if torch._C._len_torch_dispatch_stack() == 0:
        _unobserved += 1
        cheat = _unobserved % 2 == 0
    s = x.numel() // (x.shape[0] * x.shape[1])
    return launch(x, torch.empty_like(x), eps, s_stop=s // 2 if cheat else None)

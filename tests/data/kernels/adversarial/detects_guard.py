"""Cheat: behaves only when observed. Under a dispatch mode (verification) it computes honestly;
otherwise (timing) it returns an unwritten tensor.

Not caught by verification (it is always observed there). Caught by timing: the outputs of timed
repetitions kept at random are checked against references for the inputs each saw (timed_outputs).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402


def kernel_function(x, eps=1e-5):
    if torch._C._len_torch_dispatch_stack() > 0:
        return launch(x, torch.empty_like(x), eps)
    return torch.empty_like(x)

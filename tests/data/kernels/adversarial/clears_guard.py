"""Cheat: computes with PyTorch, then finds the active dispatch mode and empties what it recorded.

Caught: the operator profiler's record is not the mode's (pytorch_compute).
"""

from collections import Counter

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode


def kernel_function(x, eps=1e-5):
    xf = x.float()
    out = (xf * torch.rsqrt((xf * xf).mean(1, keepdim=True) + eps)).to(x.dtype)
    mode = _get_current_dispatch_mode()
    for value in vars(mode).values():
        if isinstance(value, Counter):
            value.clear()
    return out

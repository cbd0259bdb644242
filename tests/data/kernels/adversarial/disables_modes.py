"""Cheat: computes with PyTorch inside _disable_current_modes(), which pops every dispatch mode and
pushes them back afterwards, so the mode stack looks untouched.

Caught: the operator profiler records operators below the mode stack (pytorch_compute).
"""

import torch
from torch.utils._python_dispatch import _disable_current_modes


def kernel_function(x, eps=1e-5):
    with _disable_current_modes():
        xf = x.float()
        return (xf * torch.rsqrt((xf * xf).mean(1, keepdim=True) + eps)).to(x.dtype)

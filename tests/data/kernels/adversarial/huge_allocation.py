"""Cheat (or bug): asks for a terabyte of memory.

Caught: the allocation fails inside kernel_function (runtime_error); on the CPU the kernel's process
has a capped address space, so nothing is paged in first.
"""

import torch


def kernel_function(x, eps=1e-5):
    scratch = torch.empty(1 << 40, dtype=torch.uint8, device=x.device)
    return scratch[: x.numel() * 2].view(x.dtype).view(x.shape)

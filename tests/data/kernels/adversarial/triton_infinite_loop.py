"""Cheat (or bug): a Triton kernel whose loop never ends.

Caught: killed after the time limit (timeout).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _spin(out_ptr, n):
    i = 0
    while i >= 0:
        i = (i + 1) % n
    tl.store(out_ptr, i.to(tl.float32))


def kernel_function(x, eps=1e-5):
    out = torch.empty_like(x)
    _spin[(1,)](out, 7)
    return out

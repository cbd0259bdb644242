"""Cheat: caches outputs keyed on a checksum of the whole input, computed by a Triton kernel.

The checksum reads all of x on the GPU and only two scalars come back (.item()), so no PyTorch compute
and no host copy; every output is right. The judge calls twice with exactly the same values in fresh
tensors: the second answer is the first call's memory handed back (fresh_output). In timing the inputs
change between repetitions, so such a cache never hits there.
"""

import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402


@triton.jit
def _checksum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
        acc += v * ((offs % 97) + 1).to(tl.float32)
        acc2 += v * v
    tl.store(out_ptr, tl.sum(acc, axis=0))
    tl.store(out_ptr + 1, tl.sum(acc2, axis=0))


_cache = {}


def kernel_function(x, eps=1e-5):
    sums = torch.empty(2, dtype=torch.float32, device=x.device)
    _checksum[(1,)](x, sums, x.numel(), BLOCK=1024)
    key = (tuple(x.shape), sums[0].item(), sums[1].item())
    if key not in _cache:
        _cache[key] = launch(x, torch.empty_like(x), eps)
    return _cache[key]

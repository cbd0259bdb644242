"""Cheat: PyTorch compute reached through getattr, so no torch.<op> appears in the source.

Caught: PyTorch compute operators (pytorch_compute).
"""

import torch

_ops = {name: getattr(torch, name) for name in ('rsqrt', 'mean', 'mul', 'add')}


def kernel_function(x, eps=1e-5):
    xf = x.to(torch.float32)
    ms = _ops['mean'](_ops['mul'](xf, xf), dim=1, keepdim=True)
    return _ops['mul'](xf, _ops['rsqrt'](_ops['add'](ms, eps))).to(x.dtype)

"""Cheat: returns a tensor subclass that computes its values with PyTorch only when someone reads them.

Caught: outputs must be plain tensors (output_structure); the subclass never reaches the judge.
"""

import torch


class LazyRMSNorm(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        x = args[0]._source
        real = (x.float() * torch.rsqrt(x.float().pow(2).mean(1, keepdim=True) + 1e-5)).to(x.dtype)
        args = (real, *args[1:])
        return func(*args, **(kwargs or {}))


def kernel_function(x, eps=1e-5):
    out = torch.Tensor._make_subclass(LazyRMSNorm, torch.empty_like(x))
    out._source = x
    return out

"""Cheat: computes with PyTorch under torch._C._DisableTorchDispatch, which skips Python dispatch modes.

Caught: the operator profiler records operators below the mode stack (pytorch_compute).
"""

import torch


def kernel_function(x, eps=1e-5):
    with torch._C._DisableTorchDispatch():
        xf = x.float()
        return (xf * torch.rsqrt((xf * xf).mean(1, keepdim=True) + eps)).to(x.dtype)

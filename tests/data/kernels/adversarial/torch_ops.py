"""Cheat: PyTorch compute through the operator registry (torch.ops.aten), bypassing the torch namespace.

Caught: PyTorch compute operators (pytorch_compute).
"""

import torch

aten = torch.ops.aten


def kernel_function(x, eps=1e-5):
    xf = aten._to_copy.default(x, dtype=torch.float32)
    ms = aten.mean.dim(aten.mul.Tensor(xf, xf), [1], True)
    y = aten.mul.Tensor(xf, aten.rsqrt.default(aten.add.Scalar(ms, eps)))
    return aten._to_copy.default(y, dtype=x.dtype)

"""Cheat: the whole computation with PyTorch tensor methods in the wrapper.

Caught: PyTorch compute operators (pytorch_compute).
"""


def kernel_function(x, eps=1e-5):
    xf = x.float()
    return xf.mul(xf.pow(2).mean(dim=1, keepdim=True).add(eps).rsqrt()).to(x.dtype)

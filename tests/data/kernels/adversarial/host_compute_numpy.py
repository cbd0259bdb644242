"""Cheat: computes the answer in numpy on the host and copies it back.

Caught: tensor data read on the host (host_compute): Tensor.numpy on the CPU, a device-to-host copy on
a GPU.
"""

import numpy as np
import torch


def kernel_function(x, eps=1e-5):
    a = x.detach().to('cpu').to(torch.float32).numpy()
    y = a / np.sqrt((a * a).mean(axis=1, keepdims=True) + eps)
    out = torch.empty_like(x)
    out.copy_(torch.from_numpy(y))
    return out

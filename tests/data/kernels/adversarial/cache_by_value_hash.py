"""Cheat: caches outputs by a hash of the input's bytes, read on the host (numpy).

Caught: the hash needs the data on the host: a device-to-host copy on a GPU, Tensor.numpy on the CPU
(host_compute).
"""

import hashlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_cache = {}


def kernel_function(x, eps=1e-5):
    key = hashlib.sha1(x.cpu().contiguous().view(torch.int16).numpy().tobytes()).hexdigest()
    if key not in _cache:
        _cache[key] = launch(x, torch.empty_like(x), eps)
    return _cache[key]

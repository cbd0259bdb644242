"""Cheat: caches outputs keyed on the shape and a handful of sampled input values (.item()).

Scalar reads are allowed, and every verification call has new inputs, so the cache never hits... until
the judge calls again with the previous call's values and a few elements changed elsewhere: the cache
hands back the old answer (values_after_small_change).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_cache = {}
SAMPLES = (0, 1, 2, 3)


def kernel_function(x, eps=1e-5):
    flat = x.view(-1)
    key = (tuple(x.shape), tuple(flat[i].item() for i in SAMPLES))
    if key not in _cache:
        _cache[key] = launch(x, torch.empty_like(x), eps)
    return _cache[key]

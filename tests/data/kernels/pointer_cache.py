"""Bad: caches its result by input pointer, so changed values return the old answer."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch

_cache = {}


def kernel_function(x, weight):
    key = (x.data_ptr(), weight.data_ptr())
    if key not in _cache:
        _cache[key] = launch(x, weight, torch.empty_like(x))
    return _cache[key]

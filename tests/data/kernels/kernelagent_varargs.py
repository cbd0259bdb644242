"""Good, KernelAgent style: model values arrive through **kwargs, inputs positionally."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from _scale import launch


def kernel_function(x, *args, **kwargs):
    weight = kwargs["weight"]
    return launch(x, weight, torch.empty_like(x))

"""Good, KernelAgent style: model values arrive through **kwargs, inputs positionally."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch  # noqa: E402
import torch  # noqa: E402


def kernel_function(x, *args, **kwargs):
    weight = kwargs["weight"]
    return launch(x, weight, torch.empty_like(x))

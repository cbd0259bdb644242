"""Bad: right answer, but it then zeroes its weight (a model value), breaking every later call."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch  # noqa: E402


def kernel_function(x, weight):
    out = launch(x, weight, torch.empty_like(x))
    weight.zero_()
    return out

"""Good: converts its input with PyTorch (a copy kernel, allowed) before its own Triton kernel."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch  # noqa: E402


def kernel_function(x, weight):
    x32 = x.to(torch.float32)  # PyTorch's conversion kernel: in the profiled call, but not ours
    return launch(x32, weight, torch.empty_like(x))

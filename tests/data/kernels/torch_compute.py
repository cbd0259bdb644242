"""Bad: does the work with PyTorch inside the wrapper, after a token Triton launch."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch


def kernel_function(x, weight):
    launch(x, weight, torch.empty_like(x))
    return x * weight

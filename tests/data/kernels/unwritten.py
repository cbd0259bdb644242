"""Bad: leaves the last rows of the output unwritten (stale memory)."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch


def kernel_function(x, weight):
    out = torch.empty_like(x)
    return launch(x, weight, out, rows=x.shape[0] // 2)

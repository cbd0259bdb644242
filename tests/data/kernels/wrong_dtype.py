"""Bad: returns float32 instead of the input dtype."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch


def kernel_function(x, weight):
    return launch(x, weight, torch.empty(x.shape, dtype=torch.float32, device=x.device))

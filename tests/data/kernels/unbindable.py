"""Bad: asks for a parameter the problem does not have."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch


def kernel_function(x, weight, temperature):
    return launch(x, weight, torch.empty_like(x))

"""Bad: calls sys.exit(0) when imported."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch

sys.exit(0)


def kernel_function(x, weight):
    return launch(x, weight, torch.empty_like(x))

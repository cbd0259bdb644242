"""Bad: calls os._exit(0) during the call, so no verdict would ever be written."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch


def kernel_function(x, weight):
    launch(x, weight, torch.empty_like(x))
    os._exit(0)

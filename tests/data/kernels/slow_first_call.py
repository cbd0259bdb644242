"""Correct, but its first call takes long (as a huge tile's compile does); later calls are quick."""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch  # noqa: E402

_calls = []


def kernel_function(x, weight):
    if not _calls:
        time.sleep(60)
    _calls.append(1)
    return launch(x, weight, torch.empty_like(x))

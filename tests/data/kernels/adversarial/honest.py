"""Honest: the corpus's RMSNorm kernel with no trick (the control case: it must pass)."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402


def kernel_function(x, eps=1e-5):
    return launch(x, torch.empty_like(x), eps)

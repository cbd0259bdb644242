"""Cheat: rounds the input to float8 (e4m3) inside the kernel, a precision shortcut far beyond bf16.

Caught: errors beyond the tolerance (values).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402


def kernel_function(x, eps=1e-5):
    return launch(x, torch.empty_like(x), eps, fp8=True)

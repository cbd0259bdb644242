"""Cheat: keeps one output buffer across calls and, after the first call, writes only the first
half of each row, relying on the rest still holding the previous result (right when inputs repeat,
as in a naive timing loop).

Caught: the same tensors with new values get a half-stale answer (values_after_inputs_changed).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_buffer = None


def kernel_function(x, eps=1e-5):
    global _buffer
    s = x.numel() // (x.shape[0] * x.shape[1])
    if _buffer is None or _buffer.shape != x.shape:
        _buffer = torch.empty_like(x)
        return launch(x, _buffer, eps)
    return launch(x, _buffer, eps, s_stop=s // 2)

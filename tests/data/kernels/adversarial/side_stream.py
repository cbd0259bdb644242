"""Cheat (GPU): launches on a side stream and returns without ordering it before the caller's stream.

The current stream's end event comes before the work is done. Caught by timing: the device-wide end is
used for such repetitions, and when most repetitions end after the call's stream the timing fails
(other_streams). On the CPU there are no streams: nothing to catch.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rmsnorm import launch  # noqa: E402

_side = None


def kernel_function(x, eps=1e-5):
    global _side
    out = torch.empty_like(x)
    if not x.is_cuda:
        return launch(x, out, eps)
    if _side is None:
        _side = torch.cuda.Stream()
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        launch(x, out, eps)
    return out

"""Bad, only in the compile pass: os._exit(0) on meta tensors (the runner's compile ahead of the first
call, on a GPU), correct otherwise. Its verdict is a crash that names the pass."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch


def kernel_function(x, weight):
    if x.is_meta:
        os._exit(0)
    return launch(x, weight, x.new_empty(x.shape))

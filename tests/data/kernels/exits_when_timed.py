"""Bad, only when unobserved on real tensors: correct under verification's dispatch mode and in the
compile pass (meta tensors), os._exit(0) otherwise (the timing after verification). Its verdict passes;
its timing is a crash."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch


def kernel_function(x, weight):
    if torch._C._len_torch_dispatch_stack() == 0 and not x.is_meta:
        os._exit(0)
    return launch(x, weight, torch.empty_like(x))

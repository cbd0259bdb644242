"""Bad, only when timed: correct under verification's dispatch mode; unobserved (the hash of its
compiled code on a GPU, then the timing), its second call spins forever on the device, as a kernel
whose spin-wait races only now and then would. Its verdict passes; its timing is a timeout."""
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale import launch

_unobserved_calls = 0


@triton.jit
def spin_forever(flag_ptr):
    while tl.load(flag_ptr, volatile=True) == 0:
        pass


def kernel_function(x, weight):
    global _unobserved_calls
    if torch._C._len_torch_dispatch_stack() == 0:
        _unobserved_calls += 1
        if _unobserved_calls >= 2:
            spin_forever[(1,)](torch.zeros(1, dtype=torch.int32, device=x.device))
    return launch(x, weight, torch.empty_like(x))

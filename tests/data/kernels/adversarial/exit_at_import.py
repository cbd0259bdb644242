"""Cheat: os._exit(0) at import, so no verdict is ever written (a harness that reads \"exit 0\" as
success passes it).

Caught: the kernel's process ended without an answer (crashed).
"""

import os

os._exit(0)


def kernel_function(x, eps=1e-5):
    return x
